import { Injectable, Module, type OnModuleInit } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { DatabaseService } from '../../src/database/database.service';
import type { ClaimedJob, JobHandler, JobRun } from '../../src/jobs/job.types';
import { JobWorker } from '../../src/jobs/job-worker';
import { JobsModule } from '../../src/jobs/jobs.module';
import { TENANT, tenantHeader } from '../support/auth';
import { ServiceCluster, type ServiceProcess } from '../support/service-cluster';
import { startTestApp, waitFor, type TestApp } from '../support/test-app';
import { migratedDataSource, testDialect } from '../support/test-database';

type Rec = Record<string, unknown>;
const dialect = testDialect();
const KIND = 'test.poison';
/** Every run of the test kind, by job id: what a retried job would do again. */
const runs = new Map<number, number>();

/** A job kind of this test only: counts its runs, reports progress, completes. */
@Injectable()
class CountingJob implements JobHandler, OnModuleInit {
  readonly kind = KIND;
  readonly concurrency = 4;
  readonly maxAttempts = 3;
  constructor(private readonly worker: JobWorker) {}
  onModuleInit(): void {
    this.worker.register(this);
  }
  async run(job: ClaimedJob, run: JobRun): Promise<unknown> {
    runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
    await run.progress(1, 1);
    return { ran: true };
  }
}

const BATCHES_KIND = 'test.batches';
/** Batches each job of the batches kind got past its hold, by job id. */
const held = new Map<number, number>();

/** A job kind of this test only: 400 batches, each checked by the per-batch hold, 10 ms apart. */
@Injectable()
class BatchesJob implements JobHandler, OnModuleInit {
  readonly kind = BATCHES_KIND;
  readonly concurrency = 4;
  readonly maxAttempts = 3;
  constructor(
    private readonly worker: JobWorker,
    private readonly database: DatabaseService,
  ) {}
  onModuleInit(): void {
    this.worker.register(this);
  }
  async run(job: ClaimedJob, run: JobRun): Promise<unknown> {
    for (let i = 1; i <= 400; i++) {
      const qr = this.database.dataSource.createQueryRunner();
      try {
        await run.hold(qr);
      } finally {
        await qr.release();
      }
      held.set(job.id, i);
      await run.progress(i, 400);
      await new Promise((r) => setTimeout(r, 10));
    }
    return { batches: 400 };
  }
}

@Module({ imports: [JobsModule], providers: [CountingJob, BatchesJob] })
class CountingJobModule {}

const text = (v: unknown) => (Buffer.isBuffer(v) ? v.toString('utf8') : typeof v === 'string' ? v : '');
const errorOf = (row: Rec) =>
  JSON.parse(text(row.error) || 'null') as { code: string; message: string } | null;

jest.setTimeout(300_000);

/**
 * The poison-job rule (issue 34 #1, docs/operations.md › Background jobs): a job whose instance
 * died while running it is claimed again once its lease runs out; a claim that died before any
 * progress is quarantined — FAILED with JOB_QUARANTINED and the attempt that died, never run again
 * — while one that had made progress resumes (D53), and a job a graceful shutdown released runs as
 * if nothing happened. The dead claims are rows as a killed instance leaves them (RUNNING, an owner,
 * a lease run out), of a job kind this test registers and whose runs it counts.
 */
describe(`The poison-job rule on ${dialect} (issue 34 #1)`, () => {
  let t: TestApp;
  let ds: DataSource;

  beforeAll(async () => {
    t = await startTestApp({
      label: 'job-poison',
      extraModules: [CountingJobModule],
      env: { JOB_POLL_MS: '50', JOB_LEASE_MS: '2000' },
    });
    ds = t.app.get(DatabaseService).dataSource;
  });

  afterAll(async () => {
    await t?.close();
  });

  /** A job row of the test kind as `state` leaves it; its id. */
  async function jobLeft(tenant: string, state: 'crashed' | 'released', processed: number): Promise<number> {
    const marker = `poison-${Math.random().toString(36).slice(2)}`;
    const past = "'2020-01-01 00:00:00.000'";
    const [status, owner, lease, attempts] =
      state === 'crashed' ? ['RUNNING', "'dead-host:1:dead0000#1'", past, 1] : ['PENDING', 'NULL', 'NULL', 0];
    await ds.query(
      `INSERT INTO app_jobs (job_tenant_id, job_kind, job_status, job_request_id, job_processed, job_attempts,
         job_lease_owner, job_lease_until, job_created_at, job_started_at, job_updated_at)
       VALUES (${tenant}, '${KIND}', '${status}', '${marker}', ${processed}, ${attempts}, ${owner}, ${lease},
         ${past}, ${state === 'crashed' ? past : 'NULL'}, ${past})`,
    );
    const [{ id }] = await ds.query<Rec[]>(
      `SELECT job_id AS id FROM app_jobs WHERE job_request_id = '${marker}'`,
    );
    return Number(id);
  }

  async function queued(tenant: string, kind: string): Promise<number> {
    const marker = `batches-${Math.random().toString(36).slice(2)}`;
    await ds.query(
      `INSERT INTO app_jobs (job_tenant_id, job_kind, job_status, job_request_id, job_processed, job_attempts,
         job_created_at, job_updated_at)
       VALUES (${tenant}, '${kind}', 'PENDING', '${marker}', 0, 0, '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')`,
    );
    const [{ id }] = await ds.query<Rec[]>(
      `SELECT job_id AS id FROM app_jobs WHERE job_request_id = '${marker}'`,
    );
    return Number(id);
  }

  const jobRow = async (id: number): Promise<Rec> =>
    (
      await ds.query<Rec[]>(
        `SELECT job_tenant_id AS tenant, job_status AS status, job_attempts AS attempts, job_error AS error,
           job_lease_owner AS owner FROM app_jobs WHERE job_id = ${id}`,
      )
    )[0];

  it('should quarantine a job whose claim died before any progress, and resume one that had made progress', async () => {
    const dead = await jobLeft(TENANT.acme, 'crashed', 0);
    const deadGlobex = await jobLeft(TENANT.globex, 'crashed', 0);
    const midway = await jobLeft(TENANT.acme, 'crashed', 7);
    const released = await jobLeft(TENANT.globex, 'released', 0);
    const ids = [dead, deadGlobex, midway, released];
    await waitFor(
      async () => {
        const rows = await Promise.all(ids.map(jobRow));
        return rows.every((r) => ['COMPLETED', 'FAILED'].includes(String(r.status)));
      },
      30_000,
      50,
    );

    for (const [id, tenant] of [
      [dead, TENANT.acme],
      [deadGlobex, TENANT.globex],
    ] as const) {
      const row = await jobRow(id);
      expect(row).toMatchObject({ status: 'FAILED', owner: null });
      // The job stays its tenant's, the claim it died in is counted, and it never ran again.
      expect(String(row.tenant)).toBe(tenant);
      expect(Number(row.attempts)).toBe(2);
      expect(errorOf(row)).toMatchObject({
        code: 'JOB_QUARANTINED',
        message: expect.stringMatching(/stopped during attempt 1, .*not retried/),
      });
      expect(runs.get(id)).toBeUndefined();
    }
    const resumed = await jobRow(midway);
    expect(resumed).toMatchObject({ status: 'COMPLETED', owner: null });
    expect(Number(resumed.attempts)).toBe(2);
    expect(runs.get(midway)).toBe(1);
    // A graceful shutdown released it: not a crash, the attempt was given back.
    const again = await jobRow(released);
    expect(again).toMatchObject({ status: 'COMPLETED' });
    expect(Number(again.attempts)).toBe(1);
    expect(runs.get(released)).toBe(1);
  });

  it("should stop a running job at its next batch once its tenant is no longer active, and only that tenant's", async () => {
    const globex = await queued(TENANT.globex, BATCHES_KIND);
    const acme = await queued(TENANT.acme, BATCHES_KIND);
    await waitFor(async () => (held.get(globex) ?? 0) >= 3 && (held.get(acme) ?? 0) >= 3, 30_000, 10);
    // Archived (as an erase also does first): its job fails at its next hold or progress write.
    await ds.query(`UPDATE app_tenants SET tnt_status = 0 WHERE tnt_id = ${TENANT.globex}`);
    try {
      let row: Rec = {};
      await waitFor(async () => (row = await jobRow(globex)).status === 'FAILED', 10_000, 20);
      expect(errorOf(row)).toEqual({ code: 'FORBIDDEN', message: 'Tenant is not active' });
      expect(row.owner).toBeNull();
      const stoppedAt = held.get(globex)!;
      expect(stoppedAt).toBeLessThan(400);
      await new Promise((r) => setTimeout(r, 300));
      expect(held.get(globex)).toBe(stoppedAt);
      // Another tenant's job of the same kind runs on to its end.
      await waitFor(async () => (await jobRow(acme)).status === 'COMPLETED', 30_000, 50);
      expect(held.get(acme)).toBe(400);
    } finally {
      await ds.query(`UPDATE app_tenants SET tnt_status = 1 WHERE tnt_id = ${TENANT.globex}`);
    }
  });
});

/**
 * The same rule against a real crash: the process running an import is killed (SIGKILL) while the
 * import is still reading its file, before any batch has committed; started again, the process
 * quarantines the job instead of running it again, and no row of the file is ever written.
 */
describe(`An import whose instance was killed before any progress, on ${dialect} (issue 34 #1)`, () => {
  const ROWS = 90_000;
  let cluster: ServiceCluster;
  let ds: DataSource;
  const jobRow = async (id: number): Promise<Rec> =>
    (
      await ds.query<Rec[]>(
        `SELECT job_status AS status, job_processed AS processed, job_lease_owner AS owner, job_attempts AS attempts,
           job_error AS error FROM app_jobs WHERE job_id = ${id} AND job_tenant_id = 1`,
      )
    )[0];
  const count = async (sql: string): Promise<number> => Number((await ds.query<Rec[]>(sql))[0].n);

  beforeAll(async () => {
    cluster = await ServiceCluster.start({
      label: 'job-poison-kill',
      dialect,
      size: 1,
      env: { JOB_LEASE_MS: '1500', JOB_POLL_MS: '100', IMPORT_MAX_ROWS: String(ROWS) },
    });
    ds = await migratedDataSource(cluster.db);
    await cluster.signin();
  });

  afterAll(async () => {
    await ds?.destroy();
    await cluster?.close();
  });

  async function upload(node: ServiceProcess, marker: string): Promise<number> {
    const lines = Array.from(
      { length: ROWS },
      (_, i) => `${marker} ${i},${marker.toLowerCase()}-${i}@acme.example,silver,${i}`,
    );
    const form = new FormData();
    form.append(
      'file',
      new Blob([`name,email,tier,credit_limit\n${lines.join('\n')}\n`], { type: 'text/csv' }),
      'big.csv',
    );
    const res = await fetch(`${node.client.baseUrl}/api/v1/customers/imports?onError=skip`, {
      method: 'POST',
      headers: { 'x-tenant-id': tenantHeader(TENANT.acme), authorization: `Bearer ${node.client.token}` },
      body: form,
    });
    expect(res.status).toBe(202);
    const body = (await res.json()) as { data: { importId: unknown } };
    const [{ id }] = await ds.query<Rec[]>(
      `SELECT MAX(job_id) AS id FROM app_jobs WHERE job_tenant_id = 1 AND job_kind = 'entity.import'`,
    );
    expect(body.data.importId).toBeDefined();
    return Number(id);
  }

  it('should fail the job as quarantined after the restart, never running it again', async () => {
    const node = cluster.node(0);
    let jobId = 0;
    let marker = '';
    // Catch the job before its first batch commits (a fast machine may get there first: then again).
    for (let attempt = 0; attempt < 3 && !marker; attempt++) {
      const m = `Poison${Date.now()}x${attempt}`;
      jobId = await upload(node, m);
      let row: Rec = {};
      await waitFor(async () => (row = await jobRow(jobId)).status !== 'PENDING', 60_000, 2);
      await node.kill();
      row = await jobRow(jobId);
      const batches = await count(
        `SELECT COUNT(*) AS n FROM app_import_batches WHERE imb_job_id = ${jobId} AND imb_tenant_id = 1`,
      );
      if (row.status === 'RUNNING' && Number(row.processed) === 0 && batches === 0) marker = m;
      await node.restart();
      if (!marker)
        await waitFor(
          async () => ['COMPLETED', 'FAILED'].includes(String((await jobRow(jobId)).status)),
          120_000,
        );
    }
    expect(marker).not.toBe('');

    let done: Rec = {};
    await waitFor(async () => (done = await jobRow(jobId)).status === 'FAILED', 30_000, 100);
    expect(Number(done.attempts)).toBe(2);
    expect(done.owner).toBeNull();
    expect(errorOf(done)).toMatchObject({
      code: 'JOB_QUARANTINED',
      message: expect.stringContaining('attempt 1'),
    });
    expect(node.stdout()).toMatch(
      new RegExp(`"event":"job_quarantined","jobId":${jobId},"kind":"entity.import","attempt":1`),
    );
    expect(node.stdout()).not.toMatch(new RegExp(`"event":"job_started","jobId":${jobId},`));
    // A moment later still nothing of the file: the job is not claimed again.
    await new Promise((r) => setTimeout(r, 2000));
    expect(await jobRow(jobId)).toMatchObject({ status: 'FAILED' });
    expect(
      await count(
        `SELECT COUNT(*) AS n FROM demo_customers WHERE cus_tenant_id = 1 AND cus_name LIKE '${marker} %'`,
      ),
    ).toBe(0);
  });
});
