import { createHash } from 'node:crypto';
import type { Dialect } from '../database/dialect';

/**
 * Locks that serialise writers of one unique value (registry `unique: true`), so that two concurrent
 * creates of the same e-mail cannot both pass the "is it already used?" check. Entity tables cannot
 * carry unique indexes for these fields (a soft-deleted row may repeat a value), so the database
 * enforces it through a named lock held from the check until the end of the transaction:
 *
 * - PostgreSQL: `pg_advisory_xact_lock(bigint)`, released by COMMIT/ROLLBACK.
 * - SQL Server: `sp_getapplock` with `@LockOwner = 'Transaction'`, released by COMMIT/ROLLBACK.
 * - MariaDB/MySQL: `GET_LOCK(name, timeout)` is held by the session, not the transaction, so it is
 *   released explicitly (`RELEASE_LOCK`) after COMMIT/ROLLBACK and before the connection returns to
 *   the pool.
 * - SQLite: none; the service runs a database's write transactions one after another.
 */
export const VALUE_LOCK_TIMEOUT_S = 10;

export interface LockStatement {
  sql: string;
  params: unknown[];
}

export interface ValueLockSql {
  acquire: LockStatement;
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

export function valueLockSql(dialect: Dialect, name: string): ValueLockSql | undefined {
  switch (dialect) {
    case 'postgres':
      return {
        acquire: { sql: 'SELECT pg_advisory_xact_lock($1::bigint) AS locked', params: [advisoryKey(name)] },
      };
    case 'mysql':
      return {
        acquire: { sql: 'SELECT GET_LOCK(?, ?) AS locked', params: [name, VALUE_LOCK_TIMEOUT_S] },
        release: { sql: 'SELECT RELEASE_LOCK(?) AS released', params: [name] },
      };
    case 'mssql':
      // sp_getapplock's return code needs `EXEC @rc = …`; APPLOCK_MODE reads the outcome instead.
      return {
        acquire: {
          sql:
            "EXEC sp_getapplock @Resource = @0, @LockMode = 'Exclusive', @LockOwner = 'Transaction', " +
            '@LockTimeout = @1; ' +
            "SELECT CASE WHEN APPLOCK_MODE('public', @0, 'Transaction') = 'Exclusive' THEN 1 ELSE 0 END AS locked",
          params: [name, VALUE_LOCK_TIMEOUT_S * 1000],
        },
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
