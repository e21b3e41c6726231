import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { DataSource } from 'typeorm';
import type { AppConfig } from '../config/config.schema';
import { InjectConfig } from '../config/inject-config.decorator';
import { createDataSource, ensureDatabaseExists } from './data-source.factory';
import { Dialect, dialectOf } from './dialect';
import { retryConnect, sleep } from './connections/connect-retry';

export { isTransientConnectError } from './connections/connect-retry';

export interface PoolStats {
  total: number;
  idle: number;
  waiting: number;
}

/**
 * Owns the configuration database (D1). The DataSource exists from construction but connects in
 * the background (start-up readiness, spec §3.3), so the process answers probes meanwhile.
 */
@Injectable()
export class DatabaseService implements OnApplicationShutdown {
  private readonly logger = new Logger('Database');
  readonly dataSource: DataSource;
  readonly dialect: Dialect;
  private connecting?: Promise<void>;

  constructor(@InjectConfig() private readonly config: AppConfig) {
    this.dataSource = createDataSource(config.db);
    this.dialect = dialectOf(config.db.type);
  }

  get isConnected(): boolean {
    return this.dataSource.isInitialized;
  }

  /** Where the data lives, for the banner and logs (never the password). */
  describe(): string {
    const db = this.config.db;
    return db.type === 'sqlite'
      ? `sqlite ${db.name}`
      : `${db.type} ${db.user}@${db.host}:${db.port}/${db.name}`;
  }

  /**
   * Connects with backoff: SQL_CONNECT_MAX_ATTEMPTS attempts on transient errors, within
   * SQL_RESUME_MAX_WAIT_MS in total. A second caller waits for the first attempt, at most
   * SQL_CONCURRENT_WAIT_TIMEOUT_MS.
   */
  async connect(): Promise<void> {
    if (this.dataSource.isInitialized) return;
    if (this.connecting) {
      const wait = this.config.db.concurrentWaitTimeoutMs;
      await Promise.race([
        this.connecting,
        sleep(wait).then(() => {
          throw new Error(`Timed out after ${wait} ms waiting for the database connection in progress`);
        }),
      ]);
      return;
    }
    this.connecting = this.connectWithRetry().finally(() => (this.connecting = undefined));
    await this.connecting;
  }

  private async connectWithRetry(): Promise<void> {
    const { connectMaxAttempts, resumeMaxWaitMs } = this.config.db;
    const { attempts } = await retryConnect(
      async () => {
        await ensureDatabaseExists(this.config.db).then((created) => {
          if (created) this.logger.log(`Created database ${this.config.db.name}`);
        });
        await this.dataSource.initialize();
      },
      { maxAttempts: connectMaxAttempts, deadline: Date.now() + resumeMaxWaitMs },
      {
        onRetry: (attempt, delay, message) =>
          this.logger.warn(
            `Database not reachable (attempt ${attempt}/${connectMaxAttempts}): ${message}; retrying in ${delay} ms`,
          ),
        onGiveUp: (attempt, message) =>
          this.logger.error(`Database connection failed after ${attempt} attempt(s): ${message}`),
      },
    );
    this.logger.log(`Connected to ${this.describe()} (attempt ${attempts})`);
  }

  /** Applies pending migrations, each in its own transaction, logging each one. */
  async migrate(): Promise<string[]> {
    const pending = await this.dataSource.showMigrations();
    if (!pending) return [];
    this.logger.log('Applying pending migrations');
    const applied = await this.dataSource.runMigrations({ transaction: 'each' });
    for (const m of applied) this.logger.log(`Migration applied: ${m.name}`);
    return applied.map((m) => m.name);
  }

  /** `SELECT 1` on the default pool (/livez). */
  async ping(): Promise<void> {
    await this.dataSource.query('SELECT 1');
  }

  /** Best-effort pool figures per driver, for the metrics gauges. */
  poolStats(): PoolStats | undefined {
    if (!this.dataSource.isInitialized) return undefined;
    const driver = this.dataSource.driver as unknown as {
      master?: { totalCount?: number; idleCount?: number; waitingCount?: number };
      pool?: {
        _allConnections?: { length: number };
        _freeConnections?: { length: number };
        _connectionQueue?: { length: number };
      };
    };
    const pg = driver.master;
    if (this.dialect === 'postgres' && pg && typeof pg.totalCount === 'number') {
      return { total: pg.totalCount, idle: pg.idleCount ?? 0, waiting: pg.waitingCount ?? 0 };
    }
    const my = driver.pool;
    if (this.dialect === 'mysql' && my?._allConnections) {
      return {
        total: my._allConnections.length,
        idle: my._freeConnections?.length ?? 0,
        waiting: my._connectionQueue?.length ?? 0,
      };
    }
    if (this.dialect === 'sqlite') return { total: 1, idle: 1, waiting: 0 };
    return undefined;
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.dataSource.isInitialized) await this.dataSource.destroy();
  }
}
