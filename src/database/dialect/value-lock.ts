import { createHash } from 'node:crypto';
import type { Dialect } from './dialect';

/**
 * Locks that serialise writers of one unique value (registry `unique: true`), so that two concurrent
 * creates of the same e-mail cannot both pass the "is it already used?" check. Entity tables cannot
 * carry unique indexes for these fields (a soft-deleted row may repeat a value), so the database
 * enforces it through a named lock held from the check until the end of the transaction:
 *
 * - PostgreSQL: `pg_advisory_xact_lock(bigint)`, released by COMMIT/ROLLBACK; the wait is bounded by
 *   `lock_timeout`, set for that one statement.
 * - SQL Server: `sp_getapplock` with `@LockOwner = 'Transaction'`, released by COMMIT/ROLLBACK.
 * - MariaDB/MySQL: `GET_LOCK(name, timeout)` is held by the session, not the transaction, so it is
 *   released explicitly (`RELEASE_LOCK`) after COMMIT/ROLLBACK and before the connection returns to
 *   the pool.
 * - SQLite: none; the service runs a database's write transactions one after another.
 *
 * A lock not obtained within the timeout (WRITE_LOCK_TIMEOUT_MS) fails the write with 409.
 */
export interface LockStatement {
  sql: string;
  params: unknown[];
}

export interface ValueLockSql {
  /** Run before `acquire`, in the transaction. */
  before: LockStatement[];
  /** Takes the lock; its row tells whether it is held (lockAcquired). */
  acquire: LockStatement;
  /** Run after `acquire`, in the transaction. */
  after: LockStatement[];
  /** Run after the transaction ended (session-scoped locks only). */
  release?: LockStatement;
}

/** The lock's name: a digest of the value's identity, so no value text reaches lock tables or logs. */
export function valueLockName(parts: {
  table: string;
  tenantId: string;
  column: string;
  value: string;
}): string {
  const digest = createHash('sha256')
    .update(JSON.stringify([parts.table, parts.tenantId, parts.column, parts.value]))
    .digest('hex');
  // GET_LOCK names are limited to 64 characters.
  return `mtb:u:${digest.slice(0, 56)}`;
}

/** A signed 64-bit key for pg_advisory_xact_lock, from the lock name. */
function advisoryKey(name: string): string {
  return createHash('sha256').update(name).digest().readBigInt64BE(0).toString();
}

export function valueLockSql(dialect: Dialect, name: string, timeoutMs: number): ValueLockSql | undefined {
  const ms = Math.max(1, Math.round(timeoutMs));
  switch (dialect) {
    case 'postgres':
      return {
        before: [{ sql: "SELECT set_config('lock_timeout', $1, true)", params: [`${ms}ms`] }],
        acquire: { sql: 'SELECT pg_advisory_xact_lock($1::bigint) AS locked', params: [advisoryKey(name)] },
        after: [{ sql: 'SET LOCAL lock_timeout TO DEFAULT', params: [] }],
      };
    case 'mysql':
      return {
        before: [],
        acquire: { sql: 'SELECT GET_LOCK(?, ?) AS locked', params: [name, ms / 1000] },
        after: [],
        release: { sql: 'SELECT RELEASE_LOCK(?) AS released', params: [name] },
      };
    case 'mssql':
      // sp_getapplock's return code needs `EXEC @rc = …`; APPLOCK_MODE reads the outcome instead.
      return {
        before: [],
        acquire: {
          sql:
            "EXEC sp_getapplock @Resource = @0, @LockMode = 'Exclusive', @LockOwner = 'Transaction', " +
            '@LockTimeout = @1; ' +
            "SELECT CASE WHEN APPLOCK_MODE('public', @0, 'Transaction') = 'Exclusive' THEN 1 ELSE 0 END AS locked",
          params: [name, ms],
        },
        after: [],
      };
    case 'sqlite':
      return undefined;
  }
}

/** Whether the acquire statement's result row says the lock is held (pg's void counts as held). */
export function lockAcquired(dialect: Dialect, rows: unknown): boolean {
  if (dialect === 'postgres') return true;
  const first = Array.isArray(rows) ? (rows[0] as Record<string, unknown> | undefined) : undefined;
  return Number(first?.locked) === 1;
}

/** PostgreSQL's lock_not_available (lock_timeout ran out): the lock was not obtained. */
export function isLockTimeout(err: unknown): boolean {
  const e = err as { code?: unknown; driverError?: { code?: unknown } } | null;
  return (e?.driverError?.code ?? e?.code) === '55P03';
}
