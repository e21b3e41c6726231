import { errorMessage } from '../common/errors/error-message';
import type { IsolationLevel } from 'typeorm/driver/types/IsolationLevel';
import { Injectable, Logger } from '@nestjs/common';
import type { DataSource, QueryRunner } from 'typeorm';
import { ConflictError } from '../common/errors/app-error';
import type { AppConfig } from '../config/config.schema';
import { InjectConfig } from '../config/inject-config.decorator';
import { ConnectionsService } from '../database/connections/connections.service';
import { DatabaseService } from '../database/database.service';
import { dialectOf, rowLockFor } from '../database/dialect';
import { isLockTimeout, lockAcquired, valueLockSql } from '../database/dialect/value-lock';
import type { EntityInfo, FieldDef } from '../registry/registry.types';
import { VALUE_SET_TABLE, valueSetCodes } from '../registry/value-sets';
import { configRows } from '../database/scope/tenant-rows';
import { insertedId, insertRow, scopedUpdate } from './query/statements';
import type { Row } from './records-read.repository';
import { scoped } from './query/select';
import { col, ScopeRule, tenantScope } from './scope';
import { OutboxRepository } from './outbox/outbox.repository';
import { WriteTx } from './write-tx';

/** A row as loaded for a write: its fields by name plus the raw concurrency and audit columns. */
export interface WriteRow {
  fields: Row;
  /** `<p>_last_modified` exactly as the driver returned it (used as the compare-and-set value). */
  lastModifiedRaw: unknown;
  auditRaw: unknown;
}

/** A row read with the LM and AUDIT aliases and the fields by name, as a WriteRow. */
function writeRowOf(raw: Row, fields: FieldDef[]): WriteRow {
  const out: Row = {};
  for (const f of fields) out[f.name] = raw[f.name];
  return { fields: out, lastModifiedRaw: raw[LM], auditRaw: raw[AUDIT] };
}

/** The row lock of `purpose` on the runner's dialect (dialect.ts), or none. */
function lockOf(qr: QueryRunner, purpose: RowLockPurpose | undefined) {
  return purpose ? rowLockFor(dialectOf(qr.connection.driver.options.type), purpose) : undefined;
}

export type RowLockPurpose = 'parent-of-delete' | 'referenced-parent';

const lockBusy = (): ConflictError =>
  new ConflictError('Another request is writing the same unique value; retry', null, 'busy');

const LM = '__lm';
const AUDIT = '__audit';
const ID = '__id';
/** IN lists are chunked below every dialect's parameter limit. */
const IN_CHUNK = 500;

/**
 * Writes to registered entity tables (spec §4.3). Every statement is built by entity-query.ts from
 * registry identifiers and runs on a runner of the caller's transaction.
 */
@Injectable()
export class RecordsWriteRepository {
  private readonly logger = new Logger('EntityWrite');
  /**
   * SQLite has one connection per database file: write transactions on it run one after another in
   * this process (two interleaved transactions would nest as savepoints).
   */
  private readonly sqliteQueues = new WeakMap<DataSource, Promise<unknown>>();

  constructor(
    @InjectConfig() private readonly config: AppConfig,
    private readonly database: DatabaseService,
    private readonly connections: ConnectionsService,
    private readonly outbox: OutboxRepository,
  ) {}

  /** D3: the DataSource an entity's rows live in (the configuration database for null / 'default'). */
  dataSourceFor(entity: EntityInfo, tenantId: string): DataSource {
    return this.connections.dataSourceFor(entity.connectionCode, tenantId);
  }

  /**
   * Runs `work` in a transaction on `dataDs` (and one on the configuration database when that is
   * another database): committed when it resolves, rolled back when it throws.
   *
   * Across two databases there is no two-phase commit. Every statement, audit rows included, has run
   * before the first COMMIT; the data commits first, then the configuration database. Should that
   * second COMMIT fail (the server went away in between), the change stands and its audit row is
   * lost; this is logged as an error, and the structured audit log event still records the change.
   */
  async transaction<T>(
    dataDs: DataSource,
    work: (tx: WriteTx) => Promise<T>,
    isolation?: IsolationLevel,
  ): Promise<T> {
    const configDs = this.database.dataSource;
    const run = async (): Promise<T> => {
      const config = await this.begin(configDs, isolation);
      let data = config;
      let tx: WriteTx | undefined;
      try {
        if (dataDs !== configDs) data = await this.begin(dataDs, isolation);
        tx = new WriteTx(data, config);
        const result = await work(tx);
        await tx.flushAudits();
        // D54: the outbox rows last, after every other lock of the write, on the configuration
        // database beside the audit rows; the tenant's sequence stays locked until the commit.
        const withEvents = tx.hasEvents;
        if (withEvents) await this.outbox.append(config, tx.events, tx.spilled);
        if (tx.spansTwoDatabases) {
          await data.commitTransaction();
          try {
            await config.commitTransaction();
          } catch (err) {
            this.logger.error(
              { err: errorMessage(err) },
              'Entity change committed, its audit row in the configuration database was not',
            );
          }
        } else {
          await config.commitTransaction();
        }
        if (withEvents) this.outbox.committed(tx.eventTenants);
        return result;
      } catch (err) {
        for (const qr of new Set([data, config])) {
          if (qr.isTransactionActive) await qr.rollbackTransaction().catch(() => undefined);
        }
        throw err;
      } finally {
        if (tx) await this.releaseLocks(tx);
        await tx?.spilled?.dispose();
        await data.release();
        if (data !== config) await config.release();
      }
    };
    // Fixed order (configuration database, then data) so two writers never wait on each other.
    return this.serial(configDs, () => (dataDs === configDs ? run() : this.serial(dataDs, run)));
  }

  private async begin(ds: DataSource, isolation?: IsolationLevel): Promise<QueryRunner> {
    const qr = ds.createQueryRunner();
    try {
      await qr.connect();
      // SQLite has one isolation level (serializable); it refuses to be told another.
      await qr.startTransaction(dialectOf(ds.driver.options.type) === 'sqlite' ? undefined : isolation);
      return qr;
    } catch (err) {
      await qr.release();
      throw err;
    }
  }

  private serial<T>(ds: DataSource, run: () => Promise<T>): Promise<T> {
    if (dialectOf(ds.driver.options.type) !== 'sqlite') return run();
    const next = (this.sqliteQueues.get(ds) ?? Promise.resolve()).then(run, run);
    this.sqliteQueues.set(
      ds,
      next.catch(() => undefined),
    );
    return next;
  }

  /**
   * Holds the unique-value locks `names` until the transaction ends (see value-lock.ts). Names are
   * taken in sorted order so two writers of the same values cannot deadlock.
   */
  async lockValues(tx: WriteTx, names: string[]): Promise<void> {
    const dialect = dialectOf(tx.driverType);
    for (const name of [...new Set(names)].sort()) {
      const sql = valueLockSql(dialect, name, this.config.writes.lockTimeoutMs);
      if (!sql) return;
      for (const s of sql.before) await tx.data.query(s.sql, s.params);
      let rows: unknown;
      try {
        rows = await tx.data.query(sql.acquire.sql, sql.acquire.params);
      } catch (err) {
        if (isLockTimeout(err)) throw lockBusy();
        throw err;
      }
      if (!lockAcquired(dialect, rows)) throw lockBusy();
      if (sql.release) tx.releases.push(sql.release);
      for (const s of sql.after) await tx.data.query(s.sql, s.params);
    }
  }

  private async releaseLocks(tx: WriteTx): Promise<void> {
    for (const statement of tx.releases.splice(0)) {
      try {
        await tx.data.query(statement.sql, statement.params);
      } catch (err) {
        // A connection that cannot release its lock is broken; the server frees it when it closes.
        this.logger.warn({ err: errorMessage(err) }, 'Lock release failed');
      }
    }
  }

  /** The row in the caller's write scope (own tenant, live, row filter), or undefined. */
  async load(
    qr: QueryRunner,
    entity: EntityInfo,
    rule: ScopeRule,
    fields: FieldDef[],
    id: number,
    lock?: RowLockPurpose,
  ): Promise<WriteRow | undefined> {
    const qb = scoped(qr.connection, entity, rule, qr).andWhere(
      `${col(qr.connection, entity.primaryKeyColumn)} = :__id`,
      { __id: id },
    );
    const mode = lockOf(qr, lock);
    if (mode) qb.setLock(mode);
    qb.select(col(qr.connection, entity.columns.lastModified), LM).addSelect(
      col(qr.connection, entity.columns.auditData),
      AUDIT,
    );
    for (const f of fields) qb.addSelect(col(qr.connection, f.column), f.name);
    const raw = await qb.getRawOne<Row>();
    return raw ? writeRowOf(raw, fields) : undefined;
  }

  /**
   * Rows by key in `rule`'s scope, as `load` reads each (a bulk update's batch, D51): one
   * statement per IN_CHUNK ids instead of one per row. Ids not found are absent from the map.
   */
  async loadMany(
    qr: QueryRunner,
    entity: EntityInfo,
    rule: ScopeRule,
    fields: FieldDef[],
    ids: number[],
  ): Promise<Map<number, WriteRow>> {
    const out = new Map<number, WriteRow>();
    const key = col(qr.connection, entity.primaryKeyColumn);
    for (let i = 0; i < ids.length; i += IN_CHUNK) {
      const qb = scoped(qr.connection, entity, rule, qr).andWhere(`${key} IN (:...__ids)`, {
        __ids: ids.slice(i, i + IN_CHUNK),
      });
      qb.select(key, ID).addSelect(col(qr.connection, entity.columns.lastModified), LM);
      qb.addSelect(col(qr.connection, entity.columns.auditData), AUDIT);
      for (const f of fields) qb.addSelect(col(qr.connection, f.column), f.name);
      for (const raw of await qb.getRawMany<Row>()) out.set(Number(raw[ID]), writeRowOf(raw, fields));
    }
    return out;
  }

  async insert(qr: QueryRunner, entity: EntityInfo, row: Row): Promise<number> {
    const result = await insertRow(qr.connection, entity, row, qr).execute();
    return insertedId(qr.connection, result.raw);
  }

  /** Scoped UPDATE, a compare-and-set on last_modified when `expectedLastModified` is given; affected rows. */
  async update(
    qr: QueryRunner,
    entity: EntityInfo,
    rule: ScopeRule,
    id: number,
    set: Row,
    expectedLastModified?: { value: unknown },
  ): Promise<number> {
    const result = await scopedUpdate(qr.connection, entity, rule, id, set, {
      queryRunner: qr,
      lastModified: expectedLastModified,
    }).execute();
    return result.affected ?? 0;
  }

  /**
   * The compare-and-set UPDATE of `update`, then the row as it now stands in `rule`'s scope (as
   * `load` reads it; none when nothing was updated). PostgreSQL answers both in one statement
   * (UPDATE … RETURNING: a bulk update's row pays one round trip fewer); the other dialects run the
   * UPDATE and then `load` in the same transaction.
   */
  async updateAndRead(
    qr: QueryRunner,
    entity: EntityInfo,
    rule: ScopeRule,
    id: number,
    set: Row,
    expectedLastModified: { value: unknown },
    fields: FieldDef[],
  ): Promise<{ affected: number; row?: WriteRow }> {
    if (dialectOf(qr.connection.driver.options.type) !== 'postgres') {
      const affected = await this.update(qr, entity, rule, id, set, expectedLastModified);
      return { affected, row: affected === 1 ? await this.load(qr, entity, rule, fields, id) : undefined };
    }
    const esc = (c: string): string => qr.connection.driver.escape(c);
    const returning = [
      `${esc(entity.columns.lastModified)} AS ${esc(LM)}`,
      `${esc(entity.columns.auditData)} AS ${esc(AUDIT)}`,
      ...fields.map((f) => `${esc(f.column)} AS ${esc(f.name)}`),
    ].join(', ');
    const result = await scopedUpdate(qr.connection, entity, rule, id, set, {
      queryRunner: qr,
      lastModified: expectedLastModified,
    })
      .returning(returning)
      .execute();
    const raw = (result.raw as Row[] | undefined)?.[0];
    return { affected: result.affected ?? 0, row: raw ? writeRowOf(raw, fields) : undefined };
  }

  /**
   * Whether a live row of the tenant has `value` in `field` (e-mail fields compared case-blind),
   * other than row `exceptId`.
   */
  async existsWithValue(
    qr: QueryRunner,
    entity: EntityInfo,
    tenantId: string,
    field: FieldDef,
    value: unknown,
    exceptId?: number,
    lock?: RowLockPurpose,
  ): Promise<boolean> {
    const qb = scoped(qr.connection, entity, tenantScope(tenantId), qr);
    const mode = lockOf(qr, lock);
    if (mode) qb.setLock(mode);
    const column = col(qr.connection, field.column);
    if (field.type === 'email') qb.andWhere(`LOWER(${column}) = :__value`, { __value: value });
    else qb.andWhere(`${column} = :__value`, { __value: value });
    if (exceptId !== undefined)
      qb.andWhere(`${col(qr.connection, entity.primaryKeyColumn)} <> :__exceptId`, { __exceptId: exceptId });
    const row = await qb.select('1', 'one').limit(1).getRawOne<Row>();
    return row !== undefined;
  }

  /**
   * Of `values`, those a live row of the tenant already holds in unique `field`, compared exactly as
   * existsWithValue compares one (an e-mail address case-blind): one query per 500 values instead
   * of one per value — a bulk create's uniqueness check against the table (D51, D53).
   */
  async takenValues(
    qr: QueryRunner,
    entity: EntityInfo,
    tenantId: string,
    field: FieldDef,
    values: string[],
  ): Promise<Set<string>> {
    const taken = new Set<string>();
    const column = col(qr.connection, field.column);
    const compared = field.type === 'email' ? `LOWER(${column})` : column;
    for (let i = 0; i < values.length; i += IN_CHUNK) {
      const rows = await scoped(qr.connection, entity, tenantScope(tenantId), qr)
        .andWhere(`${compared} IN (:...__values)`, { __values: values.slice(i, i + IN_CHUNK) })
        .select(compared, 'v')
        .getRawMany<{ v: unknown }>();
      for (const r of rows) if (typeof r.v === 'string') taken.add(r.v);
    }
    return taken;
  }

  /** Keys and audit data of the tenant's live rows whose `field` holds one of `values`. */
  async liveRowsReferencing(
    qr: QueryRunner,
    entity: EntityInfo,
    tenantId: string,
    field: FieldDef,
    values: number[],
    lock?: RowLockPurpose,
  ): Promise<Array<{ id: number; auditRaw: unknown }>> {
    const out: Array<{ id: number; auditRaw: unknown }> = [];
    const mode = lockOf(qr, lock);
    for (let i = 0; i < values.length; i += IN_CHUNK) {
      const qb = scoped(qr.connection, entity, tenantScope(tenantId), qr);
      if (mode) qb.setLock(mode);
      const rows = await qb
        .andWhere(`${col(qr.connection, field.column)} IN (:...__values)`, {
          __values: values.slice(i, i + IN_CHUNK),
        })
        .select(col(qr.connection, entity.primaryKeyColumn), 'id')
        .addSelect(col(qr.connection, entity.columns.auditData), 'audit')
        .orderBy(col(qr.connection, entity.primaryKeyColumn), 'ASC')
        .getRawMany<{ id: unknown; audit: unknown }>();
      out.push(...rows.map((r) => ({ id: Number(r.id), auditRaw: r.audit })));
    }
    return out;
  }

  /**
   * The codes of a value set (`app_value_sets.vs_values`, spec 2.10): the tenant's row over the
   * system-wide one (D41). Undefined when neither exists or the values are unreadable.
   */
  async valueSetCodes(qr: QueryRunner, code: string, tenantId: string): Promise<Set<string> | undefined> {
    const rows = await configRows(qr.connection, VALUE_SET_TABLE, 'v', tenantId, { queryRunner: qr })
      .select('v.vs_tenant_id', 'tenant')
      .addSelect('v.vs_values', 'vals')
      .andWhere('v.vs_code = :code', { code })
      .getRawMany<{ tenant: unknown; vals: unknown }>();
    const row = rows.find((r) => r.tenant !== null) ?? rows[0];
    const codes = row ? valueSetCodes(row.vals) : undefined;
    return codes ? new Set(codes) : undefined;
  }
}
