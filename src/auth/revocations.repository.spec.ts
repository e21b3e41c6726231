import { mssqlDataSource } from '../database/mssql-sql';
import { parseTsql } from '../../test/support/tsql';
import { fromDbTimestamp, toDbTimestamp } from '../database/dialect/timestamps';
import { revocationQueries } from './revocations.repository';

const AT = Date.UTC(2026, 10, 22, 23, 59, 58, 123);

describe('revocation timestamps', () => {
  it('should write UTC text with milliseconds and read it back from every driver shape', () => {
    expect(toDbTimestamp(AT)).toBe('2026-11-22 23:59:58.123');
    expect(fromDbTimestamp('2026-11-22 23:59:58.123', 'better-sqlite3')).toBe(AT);
    expect(fromDbTimestamp(new Date(AT), 'mysql')).toBe(AT);
    expect(fromDbTimestamp(new Date(AT), 'mssql')).toBe(AT);
    // node-postgres: TIMESTAMP WITHOUT TIME ZONE parsed as local wall-clock time.
    const local = new Date(2026, 10, 22, 23, 59, 58, 123);
    expect(fromDbTimestamp(local, 'postgres')).toBe(AT);
    expect(fromDbTimestamp(null, 'postgres')).toBeNull();
    expect(fromDbTimestamp('not a date', 'better-sqlite3')).toBeNull();
  });
});

/** The statements of RevocationsRepository as SQL Server gets them, parsed as T-SQL (no server). */
describe('revocationQueries on SQL Server', () => {
  const ds = mssqlDataSource();

  it('should insert a row with every column bound', () => {
    const [sql, params] = revocationQueries
      .insert(ds, {
        tenantId: '7',
        userId: 3,
        jti: null,
        notBeforeMs: AT,
        expiresAtMs: AT + 1000,
        createdAtMs: AT,
      })
      .getQueryAndParameters();
    expect(sql).toBe(
      'INSERT INTO "app_revoked_tokens"("rvk_tenant_id", "rvk_user_id", "rvk_jti", "rvk_not_before", ' +
        '"rvk_expires_at", "rvk_created_at") VALUES (@0, @1, @2, @3, @4, @5)',
    );
    expect(params).toEqual([
      7,
      3,
      null,
      '2026-11-22 23:59:58.123',
      '2026-11-22 23:59:59.123',
      '2026-11-22 23:59:58.123',
    ]);
    expect(() => parseTsql(sql)).not.toThrow();
  });

  it('should look a token up within its tenant', () => {
    const [sql, params] = revocationQueries.tokenRevoked(ds, '7', 'abc').getQueryAndParameters();
    expect(sql).toContain('WHERE r.rvk_tenant_id = @0 AND r.rvk_jti = @1');
    expect(params).toEqual([7, 'abc']);
    expect(() => parseTsql(sql)).not.toThrow();
  });

  it("should read a user's latest unexpired not_before within the tenant", () => {
    const [sql, params] = revocationQueries.userNotBefore(ds, '7', 3, AT).getQueryAndParameters();
    expect(sql).toContain('MAX(r.rvk_not_before)');
    expect(sql).toContain(
      'WHERE r.rvk_tenant_id = @0 AND r.rvk_user_id = @1 AND r.rvk_not_before IS NOT NULL AND r.rvk_expires_at > @2',
    );
    expect(params).toEqual([7, 3, '2026-11-22 23:59:58.123']);
    expect(() => parseTsql(sql)).not.toThrow();
  });

  it('should purge the expired rows of every tenant', () => {
    const [sql, params] = revocationQueries.purgeExpired(ds, AT).getQueryAndParameters();
    expect(sql).toBe('DELETE FROM "app_revoked_tokens" WHERE rvk_expires_at <= @0');
    expect(params).toEqual(['2026-11-22 23:59:58.123']);
    expect(() => parseTsql(sql)).not.toThrow();
  });
});
