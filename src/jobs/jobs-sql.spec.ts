import type { DataSource, QueryRunner } from 'typeorm';
import { assertParsesAsTsql } from '../../test/support/tsql';
import { loadConfig } from '../config/config.schema';
import { createDataSource } from '../database/data-source.factory';
import type { DatabaseService } from '../database/database.service';
import { skipLockedClaim } from '../database/dialect/claim';
import { mssqlDataSource } from '../database/mssql-sql';
import type { ClaimedJob } from './job.types';
import { JobHolds } from './job-holds';
import { JobsRepository } from './jobs.repository';
import { plainParams } from '../../test/support/sql-params';

type Dialect = 'mssql' | 'postgres' | 'mariadb' | 'sqlite';
const DIALECTS: readonly Dialect[] = ['mssql', 'postgres', 'mariadb', 'sqlite'];

const SECRETS = {
  JWT_SECRET: 'jobs-sql-spec-jwt-secret-0123456789abcdef0123',
  TENANT_ENCRYPTION_KEY: '0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef',
};

/** The application's DataSource for a dialect, never connected. */
function offline(dialect: Dialect): DataSource {
  if (dialect === 'mssql') return mssqlDataSource();
  return createDataSource(
    loadConfig({
      ...SECRETS,
      NODE_ENV: 'test',
      DB_TYPE: dialect,
      ...(dialect === 'sqlite' ? { DB_NAME: ':memory:' } : {}),
    }).db,
  );
}

const TENANT = '4242';
const NOW = Date.UTC(2026, 10, 23, 12, 0, 0);
const JOB: ClaimedJob = {
  id: 7373,
  publicId: null,
  tenantId: TENANT,
  kind: 'dataview.export',
  status: 'RUNNING',
  createdBy: 9191,
  requestId: 'req',
  input: null,
  processed: 0,
  total: null,
  result: null,
  error: null,
  attempts: 1,
  createdAt: NOW,
  startedAt: NOW,
  updatedAt: NOW,
  finishedAt: null,
  owner: 'host:1:abcd#1',
  leaseUntil: NOW + 30_000,
};

/**
 * The statements of JobsRepository per dialect, built by the real drivers on DataSources that are
 * never connected, printed (snapshot) for review (STYLE), parsed as T-SQL for SQL Server: the claim
 * reads past rows other workers hold; every read and write for a tenant carries the tenant as a
 * bound parameter of its WHERE; a worker's writes are fenced on its lease owner.
 */
describe.each(DIALECTS)('JobsRepository SQL on %s (no server)', (dialect) => {
  const ds = offline(dialect);
  const repo = new JobsRepository({ dataSource: ds } as unknown as DatabaseService);
  const holds = new JobHolds({ dataSource: ds } as unknown as DatabaseService);
  const qr = { connection: ds } as unknown as QueryRunner;
  const tsql = (sql: string) => {
    if (dialect === 'mssql') assertParsesAsTsql(sql);
  };
  const ph = '(?:\\$\\d+|\\?|@\\d+)';
  const values = (_sql: string, params: unknown[]) => plainParams(params);

  it('claims due PENDING jobs and RUNNING ones whose lease ran out, oldest first, skipping locked rows', () => {
    const claim = skipLockedClaim(qr, repo.claimCandidates(qr, 'dataview.export', NOW, 4));
    expect(claim.sql).toMatchSnapshot();
    expect(claim.params[0]).toBe('dataview.export');
    expect(new Set(claim.params.slice(1))).toEqual(new Set(['2026-11-23 12:00:00.000']));
    if (dialect === 'mssql') expect(claim.sql).toContain('"app_jobs" "j" WITH (UPDLOCK, READPAST, ROWLOCK)');
    if (dialect === 'postgres' || dialect === 'mariadb') expect(claim.sql).toMatch(/FOR UPDATE SKIP LOCKED$/);
    if (dialect === 'sqlite') expect(claim.sql).not.toMatch(/LOCK/);
    tsql(claim.sql);
  });

  it('takes a candidate only while it is still claimable, and spends an attempt', () => {
    const [sql, params] = repo.claimOne(qr, JOB, 'host:2:ef01#9', 30_000, NOW).getQueryAndParameters();
    expect(sql).toMatchSnapshot();
    expect(sql).toMatch(/= job_attempts \+ 1/);
    expect(sql).toMatch(/job_status = 'PENDING'\) OR \(job_status = 'RUNNING' AND job_lease_until </);
    expect(values(sql, params)).toContain(Number(TENANT));
    tsql(sql);
  });

  it('reads and counts a job only within its tenant, the tenant bound as a parameter', () => {
    for (const [sql, params] of [
      repo.findQuery(TENANT, 7373).getQueryAndParameters(),
      repo.countActiveQuery(TENANT, 'dataview.export', 9191).getQueryAndParameters(),
    ]) {
      expect(sql).toMatchSnapshot();
      expect(sql).toMatch(new RegExp(`WHERE j\\.job_tenant_id = ${ph} AND `));
      expect(values(sql, params)).toContain(Number(TENANT));
      expect(sql).not.toContain(TENANT);
      tsql(sql);
    }
  });

  it('fences a worker write on the tenant, the job and the lease owner', () => {
    const [sql, params] = repo
      .fencedQuery(undefined, JOB, { job_processed: 5, job_updated_at: '2026-11-23 12:00:00.000' })
      .getQueryAndParameters();
    expect(sql).toMatchSnapshot();
    expect(sql).toMatch(
      /WHERE job_tenant_id = .+ AND job_id = .+ AND job_lease_owner = .+ AND job_status = 'RUNNING'/,
    );
    expect(values(sql, params)).toEqual(expect.arrayContaining([Number(TENANT), 7373, JOB.owner]));
    expect(sql).not.toContain(JOB.owner);
    tsql(sql);
  });

  it('renews a lease, and holds a job for a batch, only while its tenant is active (issue 34 #4)', () => {
    for (const [sql, params] of [
      repo.renewQuery(JOB, 30_000, NOW, { processed: 500, total: 1000 }).getQueryAndParameters(),
      holds.holdQuery(qr, JOB, NOW).getQueryAndParameters(),
    ]) {
      expect(sql).toMatchSnapshot();
      expect(sql).toMatch(
        /WHERE job_tenant_id = .+ AND job_id = .+ AND job_lease_owner = .+ AND job_status = 'RUNNING' AND \(job_tenant_id = 0 OR EXISTS \(SELECT 1 FROM .*app_tenants.* jt WHERE jt\.tnt_id = job_tenant_id AND jt\.tnt_status = 1 AND/,
      );
      expect(values(sql, params)).toEqual(expect.arrayContaining([Number(TENANT), 7373, JOB.owner]));
      tsql(sql);
    }
  });

  it("cancels a tenant's unfinished jobs keeping their owners, counts the ones still held, lets a claim go", () => {
    const cancel = holds.cancelTenantQuery(undefined, TENANT, NOW).getQueryAndParameters();
    const held = holds.heldQuery(TENANT, NOW).getQueryAndParameters();
    const letGo = holds.letGoQuery(JOB).getQueryAndParameters();
    for (const [sql, params] of [cancel, held, letGo]) {
      expect(sql).toMatchSnapshot();
      expect(sql).toMatch(new RegExp(`WHERE (j\\.)?job_tenant_id = ${ph} AND `));
      expect(values(sql, params)).toContain(Number(TENANT));
      tsql(sql);
    }
    expect(cancel[0]).not.toMatch(/job_lease_owner/);
    expect(letGo[0]).toMatch(/WHERE job_tenant_id = .+ AND job_id = .+ AND job_lease_owner = /);
    expect(held[0]).toMatch(/job_lease_owner IS NOT NULL AND j\.job_lease_until >= /);
  });

  it('starts each claim at 0 processed, so that a dead claim tells whether it made progress (issue 34 #1)', () => {
    const [sql] = repo.claimOne(qr, JOB, 'host:2:ef01#9', 30_000, NOW).getQueryAndParameters();
    expect(sql).toMatch(/[`"]?job_processed[`"]? = /);
  });
});
