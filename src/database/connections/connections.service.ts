import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AuthorizationError, ServiceError } from '../../common/errors/app-error';
import type { AppConfig, DatabaseConfig } from '../../config/config.schema';
import { InjectConfig } from '../../config/inject-config.decorator';
import { DatabaseService } from '../database.service';
import { errorMessage } from '../../common/errors/error-message';
import { retryConnect } from './connect-retry';
import { everyTenantConfigRows } from '../scope/tenant-rows';

const CONNECTION_TABLE = { table: 'app_connections', prefix: 'con' };
import { decryptConnectionString } from './connection-string.crypto';
import { bindSqliteIntegers } from '../dialect/sqlite-binding';
import { trackSqliteTransactions } from '../dialect/sqlite-transactions';
import { storedSecretKeyRing } from '../../config/key-ring';
import {
  connectionTypeProblem,
  describeTarget,
  externalDatabaseConfig,
  externalDataSourceOptions,
  parseConnectionUrl,
} from './connection-url';

/** The code (and NULL) that means the configuration database (D3). */
export const DEFAULT_CONNECTION_CODE = 'default';

export type ConnectionState = 'opening' | 'open' | 'skipped' | 'failed';

/** One app_connections row as the service sees it; never holds the URL or password. */
export interface ConnectionStatus {
  code: string;
  /** Owning tenant, or null for a system-wide connection. */
  tenantId: string | null;
  /** con_connection_type as stored. */
  type: string;
  state: ConnectionState;
  /** `<dialect> user@host:port/db` (no password), once the URL could be read. */
  target?: string;
  /** Why the connection was skipped or failed. */
  reason?: string;
  attempts?: number;
}

export interface OpenAllReport {
  opened: string[];
  /** Rows that cannot be used as stored (plain or undecryptable string, bad URL, wrong type). */
  skipped: Array<{ code: string; reason: string }>;
  /** Rows whose database could not be reached within the retry limits. */
  failed: Array<{ code: string; reason: string }>;
}

interface Entry extends ConnectionStatus {
  dataSource?: DataSource;
}

/** Raw row; drivers differ in number/string/bigint for the INT columns. */
interface ConnectionRow {
  con_id: number | string;
  con_tenant_id: number | string | null;
  con_code: string | null;
  con_connection_string: string | null;
  con_connection_type: string | null;
}

function tenantKey(value: number | string): string {
  const s = String(value).trim();
  return /^\d+$/.test(s) ? String(Number(s)) : s;
}

function isDefaultCode(code: string | null | undefined): boolean {
  return code === null || code === undefined || code.trim() === '' || code.trim() === DEFAULT_CONNECTION_CODE;
}

/**
 * External data sources (D3): one TypeORM pool per active, non-deleted app_connections row,
 * opened at start-up with the retry of the configuration database. `dataSourceFor` hands the
 * entity layer the pool a registry row's connection code names.
 */
@Injectable()
export class ConnectionsService implements OnApplicationShutdown {
  private readonly logger = new Logger('Connections');
  private readonly entries = new Map<string, Entry>();
  private opening?: Promise<OpenAllReport>;
  private stopped = false;

  constructor(
    @InjectConfig() private readonly config: AppConfig,
    private readonly database: DatabaseService,
  ) {}

  /**
   * Reads the active, non-deleted rows (system-wide and tenant rows) and opens one pool per row,
   * all rows in parallel, each retried per SQL_CONNECT_MAX_ATTEMPTS within SQL_RESUME_MAX_WAIT_MS.
   * Resolves when every row is open, skipped or given up (never rejects for a single row; it
   * rejects only when app_connections cannot be read). A concurrent call shares the running pass;
   * a later call opens the rows that are not open yet and leaves open pools alone.
   */
  openAll(): Promise<OpenAllReport> {
    this.opening ??= this.openAllOnce().finally(() => (this.opening = undefined));
    return this.opening;
  }

  private async openAllOnce(): Promise<OpenAllReport> {
    const rows = await this.readRows();
    const report: OpenAllReport = { opened: [], skipped: [], failed: [] };
    if (rows.length === 0) {
      this.logger.log('No external connections configured');
      return report;
    }
    this.logger.log(`Opening ${rows.length} external connection(s)`);
    const deadline = Date.now() + this.config.db.resumeMaxWaitMs;
    const results = await Promise.all(rows.map((row) => this.openRow(row, deadline)));
    for (const entry of results) {
      if (entry.state === 'open') report.opened.push(entry.code);
      else if (entry.state === 'skipped')
        report.skipped.push({ code: entry.code, reason: entry.reason ?? '' });
      else report.failed.push({ code: entry.code, reason: entry.reason ?? '' });
    }
    const summary = `External connections: ${report.opened.length} open, ${report.skipped.length} skipped, ${report.failed.length} failed`;
    if (report.failed.length > 0 || report.skipped.length > 0) this.logger.warn(summary);
    else this.logger.log(summary);
    return report;
  }

  private async readRows(): Promise<ConnectionRow[]> {
    return everyTenantConfigRows(this.database.dataSource, CONNECTION_TABLE, 'c')
      .select('c.con_id', 'con_id')
      .addSelect('c.con_tenant_id', 'con_tenant_id')
      .addSelect('c.con_code', 'con_code')
      .addSelect('c.con_connection_string', 'con_connection_string')
      .addSelect('c.con_connection_type', 'con_connection_type')
      .orderBy('c.con_id')
      .getRawMany<ConnectionRow>();
  }

  private async openRow(row: ConnectionRow, deadline: number): Promise<Entry> {
    const code = String(row.con_code ?? '');
    const previous = this.entries.get(code);
    if (previous?.state === 'open') return previous;
    const entry: Entry = {
      code,
      tenantId:
        row.con_tenant_id === null || row.con_tenant_id === undefined ? null : tenantKey(row.con_tenant_id),
      type: String(row.con_connection_type ?? ''),
      state: 'opening',
    };
    const owner = entry.tenantId === null ? 'system-wide' : `tenant ${entry.tenantId}`;
    this.entries.set(code, entry);

    let db: DatabaseConfig;
    try {
      db = this.configFor(row, code);
      entry.target = describeTarget(db);
    } catch (err) {
      entry.state = 'skipped';
      entry.reason = errorMessage(err);
      this.logger.error(`Connection ${code} (${owner}) skipped: ${entry.reason}`);
      return entry;
    }

    this.logger.log(`Connection ${code} (${owner}): opening ${entry.target}`);
    const { connectMaxAttempts } = this.config.db;
    try {
      const { value, attempts } = await retryConnect(
        async () => {
          const ds = trackSqliteTransactions(
            bindSqliteIntegers(new DataSource(externalDataSourceOptions(db))),
          );
          try {
            return await ds.initialize();
          } catch (err) {
            if (ds.isInitialized) await ds.destroy().catch(() => undefined);
            throw err;
          }
        },
        { maxAttempts: connectMaxAttempts, deadline },
        {
          onRetry: (attempt, delay, message) =>
            this.logger.warn(
              `Connection ${code} not reachable (attempt ${attempt}/${connectMaxAttempts}): ${message}; retrying in ${delay} ms`,
            ),
          onGiveUp: (attempt, message) => {
            entry.attempts = attempt;
            this.logger.error(`Connection ${code} failed after ${attempt} attempt(s): ${message}`);
          },
          shouldStop: () => this.stopped,
        },
      );
      if (this.stopped) {
        await value.destroy().catch(() => undefined);
        throw new Error('shutting down');
      }
      entry.dataSource = value;
      entry.attempts = attempts;
      entry.state = 'open';
      this.logger.log(`Connection ${code} open: ${entry.target} (attempt ${attempts})`);
    } catch (err) {
      entry.state = 'failed';
      entry.reason = errorMessage(err);
    }
    return entry;
  }

  /** Decrypts, parses and checks one row; throws with a reason that never holds the URL. */
  private configFor(row: ConnectionRow, code: string): DatabaseConfig {
    if (code.trim() === '') throw new Error('con_code is empty');
    if (isDefaultCode(code)) {
      throw new Error(`con_code "${DEFAULT_CONNECTION_CODE}" is reserved for the configuration database`);
    }
    const stored = typeof row.con_connection_string === 'string' ? row.con_connection_string : '';
    if (stored.trim() === '') throw new Error('con_connection_string is empty');
    let url: string;
    try {
      url = decryptConnectionString(stored, storedSecretKeyRing(this.config.crypto));
    } catch (err) {
      throw new Error(`con_connection_string ${errorMessage(err)}`);
    }
    let parsed;
    try {
      parsed = parseConnectionUrl(url);
    } catch (err) {
      throw new Error(`con_connection_string: ${errorMessage(err)}`);
    }
    const typeProblem = connectionTypeProblem(String(row.con_connection_type ?? ''), parsed.type);
    if (typeProblem) throw new Error(typeProblem);
    return externalDatabaseConfig(parsed, this.config.db);
  }

  /**
   * The DataSource for a registry row's connection code (obj_connection_code): the configuration
   * database for null, undefined, '' or 'default'; otherwise the opened pool of that con_code
   * (exact match). A tenant-owned connection serves only its tenant (403 FORBIDDEN otherwise);
   * an unknown, skipped, failed or not yet open connection throws 500 SERVICE_ERROR
   * "Connection <code> is not available".
   */
  dataSourceFor(code: string | null | undefined, tenantId: string): DataSource {
    if (isDefaultCode(code)) return this.database.dataSource;
    const key = (code as string).trim();
    const entry = this.entries.get(key);
    if (entry && entry.tenantId !== null && entry.tenantId !== tenantKey(tenantId)) {
      throw new AuthorizationError(`Connection ${key} is not available to this tenant`);
    }
    if (!entry || entry.state !== 'open' || !entry.dataSource?.isInitialized) {
      throw new ServiceError(`Connection ${key} is not available`);
    }
    return entry.dataSource;
  }

  /** Every row seen by openAll, for health output and tests. */
  status(): ConnectionStatus[] {
    return [...this.entries.values()].map(({ dataSource: _ds, ...status }) => ({ ...status }));
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    const open = [...this.entries.values()].filter((e) => e.dataSource?.isInitialized);
    await Promise.allSettled(
      open.map(async (e) => {
        await e.dataSource!.destroy();
        this.logger.log(`Connection ${e.code} closed`);
      }),
    );
    for (const e of open) {
      e.state = 'failed';
      e.reason = 'closed (shutdown)';
      e.dataSource = undefined;
    }
  }
}
