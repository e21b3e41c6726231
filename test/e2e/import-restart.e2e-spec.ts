import type { DataSource } from 'typeorm';
import { TENANT, tenantHeader } from '../support/auth';
import { ServiceClient, ServiceCluster, type ServiceProcess } from '../support/service-cluster';
import { waitFor } from '../support/test-app';
import { migratedDataSource, testDialect } from '../support/test-database';

type Rec = Record<string, unknown>;

/**
 * An import survives the death of the instance that runs it without writing a row twice (D53,
 * issue 26 #2): the process holding the job's lease is killed (SIGKILL: nothing is released or
 * rolled back by the process) once at least one batch of 500 rows has committed; once the lease has
 * run out, a worker claims the job again — another process on PostgreSQL and MariaDB, the same one
 * started again on SQLite — skips the batches whose idempotency record committed, writes the others
 * and completes: every row of the file exists exactly once. The file is sent as multipart.
 */
const dialect = testDialect();
const SIZE = dialect === 'sqlite' ? 1 : 2;
const LEASE_MS = 1500;
const ROWS = 5000;

jest.setTimeout(300_000);

describe(`An import across a crash, ${SIZE} process(es) on ${dialect} (issue 26 #2)`, () => {
  let cluster: ServiceCluster;
  let ds: DataSource;
  const jobRow = async (id: number): Promise<Rec> =>
    (
      await ds.query<Rec[]>(
        `SELECT job_status AS status, job_processed AS processed, job_lease_owner AS owner, job_attempts AS attempts
         FROM app_jobs WHERE job_id = ${id} AND job_tenant_id = 1`,
      )
    )[0];
  const text = (v: unknown) => (Buffer.isBuffer(v) ? v.toString('utf8') : typeof v === 'string' ? v : '');
  /** The row key of the job a route answered by its public id (issue 34): the logs and the rows use the key. */
  const keyOf = async (publicId: string): Promise<number> =>
    Number(
      (await ds.query<Rec[]>(`SELECT job_id AS id FROM app_jobs WHERE job_public_id = '${publicId}'`))[0].id,
    );

  beforeAll(async () => {
    cluster = await ServiceCluster.start({
      label: 'import-restart',
      dialect,
      size: SIZE,
      env: { JOB_LEASE_MS: String(LEASE_MS), JOB_POLL_MS: '100' },
    });
    ds = await migratedDataSource(cluster.db);
    await cluster.signin();
  });

  afterAll(async () => {
    await ds?.destroy();
    await cluster?.close();
  });

  async function upload(node: ServiceProcess, csv: string): Promise<string> {
    const form = new FormData();
    form.append('file', new Blob([csv], { type: 'text/csv' }), 'customers.csv');
    const res = await fetch(`${node.client.baseUrl}/api/v1/customers/imports?onError=skip`, {
      method: 'POST',
      headers: { 'x-tenant-id': tenantHeader(TENANT.acme), authorization: `Bearer ${node.client.token}` },
      body: form,
    });
    const body = (await res.json()) as { data: { importId: string } };
    expect(res.status).toBe(202);
    return body.data.importId;
  }

  it('should resume on another claim after the worker was killed, writing every row exactly once', async () => {
    let jobId = 0;
    let publicId = '';
    let victim: ServiceProcess | undefined;
    let marker = '';
    // Catch a job after a batch committed and before the last (a fast machine may finish one first).
    for (let attempt = 0; attempt < 3 && !victim; attempt++) {
      marker = `Resume${Date.now()}x${attempt}`;
      const lines = Array.from(
        { length: ROWS },
        (_, i) => `${marker} ${i},${marker.toLowerCase()}-${i}@acme.example,silver,${i}`,
      );
      // One bad row per batch: the failed rows and the error file must survive the restart too.
      lines[10] = `${marker} bad,not-an-email,silver,1`;
      publicId = await upload(cluster.node(0), `name,email,tier,credit_limit\n${lines.join('\n')}\n`);
      jobId = await keyOf(publicId);
      let row: Rec = {};
      await waitFor(
        async () => {
          row = await jobRow(jobId);
          return row.status === 'COMPLETED' || (row.status === 'RUNNING' && Number(row.processed) >= 500);
        },
        120_000,
        5,
      );
      if (row.status !== 'RUNNING' || Number(row.processed) >= ROWS) continue;
      victim = cluster.byWorker(text(row.owner));
      await victim!.kill();
    }
    expect(victim).toBeDefined();
    const orphan = await jobRow(jobId);
    expect(orphan).toMatchObject({ status: 'RUNNING' });
    expect(Number(orphan.processed)).toBeLessThan(ROWS);
    const committedBefore = Number(
      (
        await ds.query<Rec[]>(
          `SELECT COUNT(*) AS n FROM app_import_batches WHERE imb_job_id = ${jobId} AND imb_tenant_id = 1`,
        )
      )[0].n,
    );
    expect(committedBefore).toBeGreaterThanOrEqual(1);

    if (SIZE === 1) await victim!.restart();
    const survivor = cluster.nodes.find((n) => n.running)!;
    if (!survivor.client.token) await survivor.client.signin('admin@acme.test');
    let done: Rec = {};
    await waitFor(async () => (done = await jobRow(jobId)).status === 'COMPLETED', 180_000, 100);
    expect(Number(done.attempts)).toBe(2);
    expect(survivor.stdout()).toMatch(
      new RegExp(`"event":"job_started","jobId":${jobId},"kind":"entity.import","attempt":2`),
    );

    const status = await survivor.client.get(`/api/v1/imports/${publicId}`);
    expect(status.body.data).toMatchObject({
      status: 'COMPLETED',
      total: ROWS,
      processed: ROWS,
      created: ROWS - 1,
      failed: 1,
      errors: [{ row: 12, field: 'email', error: expect.any(String) }],
    });
    // Every row exactly once: as many records as good rows, no e-mail twice.
    const counts = (
      await ds.query<Rec[]>(
        `SELECT COUNT(*) AS n, COUNT(DISTINCT cus_email) AS emails FROM demo_customers
         WHERE cus_tenant_id = 1 AND cus_name LIKE '${marker} %'`,
      )
    )[0];
    expect([Number(counts.n), Number(counts.emails)]).toEqual([ROWS - 1, ROWS - 1]);
    const batches = await ds.query<Rec[]>(
      `SELECT imb_batch AS batch FROM app_import_batches WHERE imb_job_id = ${jobId} AND imb_tenant_id = 1 ORDER BY imb_batch`,
    );
    expect(batches.map((b) => Number(b.batch))).toEqual(
      Array.from({ length: Math.ceil(ROWS / 500) }, (_, i) => i + 1),
    );

    // The job, its status and its error file are the tenant's only.
    const globex = new ServiceClient(survivor.client.baseUrl, TENANT.globex);
    await globex.signin('admin@globex.test');
    expect((await globex.get(`/api/v1/imports/${publicId}`)).status).toBe(404);
    expect((await globex.get(String(status.body.data.errorFileUrl))).status).toBe(404);
    const file = await survivor.client.get(String(status.body.data.errorFileUrl));
    expect(file.status).toBe(200);
    expect(String(file.body)).toContain(`${marker} bad,not-an-email,silver,1,email:`);
  });
});
