import type { DataSource, QueryRunner } from 'typeorm';
import { dialectOf } from '../database/dialect';
import { savepointSql } from '../database/dialect/savepoint';
import type { LockStatement } from '../database/dialect/value-lock';
import { EventSpill } from './outbox/event-spill';
import type { PendingEvent } from './outbox/outbox.types';

/**
 * Audit rows per INSERT: 13 parameters a row, so 100 rows stay far below every driver's limit
 * (SQL Server's 2,100 parameters is the lowest).
 */
const AUDIT_ROWS_PER_INSERT = 100;

/**
 * One write's transaction(s): `data` on the entity's database (D3), `config` on the configuration
 * database (value sets, audit rows). They are the same runner when the entity lives in the
 * configuration database, which makes the write a single transaction.
 */
export class WriteTx {
  /** Session-scoped locks to release once the transaction has ended (MariaDB named locks). */
  readonly releases: LockStatement[] = [];
  /**
   * D54: the events of this write, added to the outbox as the transaction's last statements (so
   * they commit with it, or not at all). Every records write adds its events here.
   */
  readonly events: PendingEvent[] = [];
  /**
   * The write's `app_audit_logs` rows (D29), not yet written: the repository writes them on
   * `config` in multi-row INSERTs before the commit (and between the batches of a bulk session),
   * always outside a savepoint. A savepoint undone drops the rows added inside it.
   */
  readonly audits: Array<Record<string, unknown>> = [];
  /** Events moved to disk by `spillEvents` (a long transaction of many batches). */
  private spill?: EventSpill;

  /**
   * Moves the events emitted so far out of memory (an all-or-none import between its batches, D53):
   * they are appended before the ones emitted later, at the same point of the transaction. Only
   * between savepoints (a savepoint's undo drops the events emitted inside it), one tenant only.
   */
  async spillEvents(tenantId: string): Promise<void> {
    if (this.events.length === 0) return;
    if (this.events.some((e) => e.tenantId !== tenantId)) return;
    this.spill ??= new EventSpill(tenantId);
    if (this.spill.tenantId !== tenantId) return;
    await this.spill.add(this.events);
    this.events.length = 0;
  }

  /** The events on disk, if any (the outbox append reads them back). */
  get spilled(): EventSpill | undefined {
    return this.spill;
  }

  /** Whether the write added any event. */
  get hasEvents(): boolean {
    return this.events.length > 0 || (this.spill?.count ?? 0) > 0;
  }

  /** The tenants of the write's events. */
  get eventTenants(): Set<string> {
    const out = new Set(this.events.map((e) => e.tenantId));
    if (this.spill && this.spill.count > 0) out.add(this.spill.tenantId);
    return out;
  }

  constructor(
    readonly data: QueryRunner,
    readonly config: QueryRunner,
  ) {}

  get dataSource(): DataSource {
    return this.data.connection;
  }

  /** The data connection's TypeORM driver type (timestamps come back per driver). */
  get driverType(): string {
    return this.data.connection.driver.options.type;
  }

  get spansTwoDatabases(): boolean {
    return this.data !== this.config;
  }

  /** Whether `qr` is one of this write's transaction runners (row locks need a transaction). */
  owns(qr: QueryRunner): boolean {
    return qr === this.data || qr === this.config;
  }

  /** Adds an audit row of this write, written in this transaction before it commits. */
  audit(row: Record<string, unknown>): void {
    this.audits.push(row);
  }

  /** Adds an event of this write to the outbox, in this transaction (D54). */
  emit(event: PendingEvent): void {
    this.events.push(event);
  }

  /**
   * Writes the held audit rows on the configuration runner, in statements of
   * AUDIT_ROWS_PER_INSERT rows, in the order they were added. Outside any savepoint: before the
   * commit, and between the batches of a bulk session.
   */
  async flushAudits(): Promise<void> {
    if (this.audits.length === 0) return;
    const rows = this.audits.splice(0);
    for (let i = 0; i < rows.length; i += AUDIT_ROWS_PER_INSERT) {
      const chunk = rows.slice(i, i + AUDIT_ROWS_PER_INSERT);
      await this.config.connection
        .createQueryBuilder(this.config)
        .insert()
        .into('app_audit_logs', Object.keys(chunk[0]))
        .values(chunk)
        .execute();
    }
  }

  /**
   * Runs `work` inside a savepoint of this transaction (on both runners when the entity lives in
   * another database than the configuration): when it throws, its statements alone are undone and
   * the error is thrown on (and so are the outbox events and audit rows it added); what ran before
   * stays. Should the undo itself fail (a deadlock ended the whole transaction on MariaDB),
   * TransactionLost carries the error: the transaction is gone.
   */
  async withinSavepoint<T>(name: string, work: () => Promise<T>): Promise<T> {
    const runners = this.spansTwoDatabases ? [this.data, this.config] : [this.data];
    const sql = runners.map((qr) => savepointSql(dialectOf(qr.connection.driver.options.type), name));
    for (const [i, qr] of runners.entries()) {
      const release = this.deferredReleases.get(qr);
      this.deferredReleases.delete(qr);
      await qr.query(release ? `${release}; ${sql[i].set}` : sql[i].set);
    }
    const eventsBefore = this.events.length;
    const auditsBefore = this.audits.length;
    let result: T;
    try {
      result = await work();
    } catch (err) {
      this.events.length = eventsBefore;
      this.audits.length = auditsBefore;
      try {
        for (const [i, qr] of runners.entries()) await qr.query(sql[i].rollback);
      } catch {
        throw new TransactionLost(err);
      }
      throw err;
    }
    for (const [i, qr] of runners.entries()) {
      const release = sql[i].release;
      if (!release) continue;
      if (dialectOf(qr.connection.driver.options.type) === 'postgres') this.deferredReleases.set(qr, release);
      else await qr.query(release);
    }
    return result;
  }

  /**
   * PostgreSQL: a succeeded savepoint's RELEASE, sent with the runner's next SAVEPOINT as one
   * simple-protocol query (one round trip where a bulk write's row took two; issue 29). One left
   * at the end of the transaction is released by its COMMIT. The other drivers take one statement
   * per query.
   */
  private readonly deferredReleases = new Map<QueryRunner, string>();
}

/**
 * A savepoint could not be undone: the whole transaction is gone (MariaDB ends it on a deadlock).
 * `failure` is the error that made the undo necessary; the write must fail as a whole with it.
 */
export class TransactionLost extends Error {
  constructor(readonly failure: unknown) {
    super('The transaction ended while a savepoint was undone');
  }
}
