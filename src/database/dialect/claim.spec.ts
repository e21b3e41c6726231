import type { DataSource, QueryRunner } from 'typeorm';
import { assertParsesAsTsql } from '../../../test/support/tsql';
import { loadConfig } from '../../config/config.schema';
import { createDataSource } from '../data-source.factory';
import { mssqlDataSource } from '../mssql-sql';
import { skipLockedClaim } from './claim';

const SECRETS = {
  JWT_SECRET: 'claim-spec-jwt-secret-0123456789abcdef0123',
  TENANT_ENCRYPTION_KEY: '0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef',
};

function offline(type: 'sqlite' | 'postgres' | 'mariadb' | 'mssql'): DataSource {
  if (type === 'mssql') return mssqlDataSource();
  return createDataSource(
    loadConfig({
      ...SECRETS,
      NODE_ENV: 'test',
      DB_TYPE: type,
      ...(type === 'sqlite' ? { DB_NAME: ':memory:' } : {}),
    }).db,
  );
}

/** The next queue rows of a tenant whose lease has run out (what a workflow worker claims). */
function claimOf(type: 'sqlite' | 'postgres' | 'mariadb' | 'mssql') {
  const ds = offline(type);
  const qr = { connection: ds } as unknown as QueryRunner;
  const qb = ds
    .createQueryBuilder(qr)
    .select('q.wfq_id', 'id')
    .from('wft_queue', 'q')
    .where('q.wfq_status = :status', { status: 'queued' })
    .andWhere('(q.wfq_lease_until IS NULL OR q.wfq_lease_until < :now)', { now: '2026-01-01 00:00:00.000' })
    .orderBy('q.wfq_id', 'ASC')
    .limit(5);
  return skipLockedClaim(qr, qb);
}

describe('skipLockedClaim (D49)', () => {
  it('should skip rows another worker holds with FOR UPDATE SKIP LOCKED on PostgreSQL and MariaDB', () => {
    for (const type of ['postgres', 'mariadb'] as const) {
      const { sql, params } = claimOf(type);
      expect(sql).toMatch(/ FOR UPDATE SKIP LOCKED$/);
      expect(params).toEqual(['queued', '2026-01-01 00:00:00.000']);
    }
  });

  it('should read past locked rows with WITH (UPDLOCK, READPAST, ROWLOCK) on SQL Server, as valid T-SQL', () => {
    const { sql } = claimOf('mssql');
    expect(sql).toContain('FROM "wft_queue" "q" WITH (UPDLOCK, READPAST, ROWLOCK) WHERE');
    expect(sql).toMatch(/OFFSET 0 ROWS FETCH NEXT 5 ROWS ONLY$/);
    assertParsesAsTsql(sql);
  });

  it('should read plainly on SQLite, whose write transactions run one at a time', () => {
    const { sql } = claimOf('sqlite');
    expect(sql).not.toMatch(/FOR UPDATE|LOCK/);
    expect(sql).toMatch(/LIMIT 5$/);
  });
});
