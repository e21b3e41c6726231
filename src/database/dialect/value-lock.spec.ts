import { parseTsql } from '../../../test/support/tsql';
import { isLockTimeout, lockAcquired, valueLockName, valueLockSql } from './value-lock';

describe('value locks (unique values under concurrency)', () => {
  const name = valueLockName({ table: 'demo_customers', tenantId: '1', column: 'cus_email', value: 'a@b.c' });

  it('should name a lock by a digest that fits GET_LOCK and differs per tenant, column and value', () => {
    expect(name).toMatch(/^mtb:u:[0-9a-f]{56}$/);
    expect(name.length).toBeLessThanOrEqual(64);
    const others = [
      { table: 'demo_customers', tenantId: '2', column: 'cus_email', value: 'a@b.c' },
      { table: 'demo_customers', tenantId: '1', column: 'cus_name', value: 'a@b.c' },
      { table: 'demo_customers', tenantId: '1', column: 'cus_email', value: 'a@b.d' },
      { table: 'demo_orders', tenantId: '1', column: 'cus_email', value: 'a@b.c' },
    ].map(valueLockName);
    expect(new Set([name, ...others]).size).toBe(5);
  });

  it('should not let the value text reach the lock name', () => {
    expect(valueLockName({ table: 't', tenantId: '1', column: 'c', value: "x'; DROP TABLE t; --" })).toMatch(
      /^mtb:u:[0-9a-f]{56}$/,
    );
  });

  it('should hold a transaction-scoped advisory lock on PostgreSQL, keyed by a signed 64-bit integer', () => {
    const sql = valueLockSql('postgres', name, 10_000)!;
    expect(sql.acquire.sql).toBe('SELECT pg_advisory_xact_lock($1::bigint) AS locked');
    const key = BigInt(sql.acquire.params[0] as string);
    expect(key >= -(2n ** 63n) && key < 2n ** 63n).toBe(true);
    // The wait is bounded by lock_timeout for this statement only.
    expect(sql.before).toEqual([{ sql: "SELECT set_config('lock_timeout', $1, true)", params: ['10000ms'] }]);
    expect(sql.after).toEqual([{ sql: 'SET LOCAL lock_timeout TO DEFAULT', params: [] }]);
    expect(sql.release).toBeUndefined();
    expect(isLockTimeout({ driverError: { code: '55P03' } })).toBe(true);
    expect(isLockTimeout({ code: '55P03' })).toBe(true);
    expect(isLockTimeout({ code: '23505' })).toBe(false);
  });

  it('should take and later release a named lock on MariaDB/MySQL (session-scoped there)', () => {
    const sql = valueLockSql('mysql', name, 2_500)!;
    expect(sql.acquire).toEqual({ sql: 'SELECT GET_LOCK(?, ?) AS locked', params: [name, 2.5] });
    expect(sql.release).toEqual({ sql: 'SELECT RELEASE_LOCK(?) AS released', params: [name] });
    expect(lockAcquired('mysql', [{ locked: 1 }])).toBe(true);
    expect(lockAcquired('mysql', [{ locked: '1' }])).toBe(true);
    expect(lockAcquired('mysql', [{ locked: 0 }])).toBe(false);
    expect(lockAcquired('mysql', [{ locked: null }])).toBe(false);
  });

  it('should use a transaction-owned sp_getapplock on SQL Server, as valid T-SQL', () => {
    const sql = valueLockSql('mssql', name, 10_000)!;
    expect(sql.release).toBeUndefined();
    expect(sql.acquire.params).toEqual([name, 10_000]);
    const asts = parseTsql(sql.acquire.sql);
    expect(asts.map((a) => a.type)).toEqual(['exec', 'select']);
    expect(sql.acquire.sql).toContain("@LockOwner = 'Transaction'");
    expect(lockAcquired('mssql', [{ locked: 1 }])).toBe(true);
    expect(lockAcquired('mssql', [{ locked: 0 }])).toBe(false);
  });

  it('should need no lock on SQLite, whose write transactions the service runs one at a time', () => {
    expect(valueLockSql('sqlite', name, 10_000)).toBeUndefined();
  });
});
