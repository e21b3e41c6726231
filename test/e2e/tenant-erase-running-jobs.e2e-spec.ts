import type { DataSource } from 'typeorm';
import { TENANT, tenantHeader } from '../support/auth';
import { ServiceClient, ServiceCluster, type ServiceProcess } from '../support/service-cluster';
import { waitFor } from '../support/test-app';
import { migratedDataSource, testDialect } from '../support/test-database';

type Rec = Record<string, unknown>;

/**
 * Erasing a tenant while its import runs (issue 34 #4, D58): the erase stops the tenant's jobs
 * first — cancelled in the job table, which the worker checks per batch and at each progress
 * report, on whichever instance it runs — and waits for their workers to let go; only then does it
 * delete. Afterwards, and for good, the tenant has no entity row, no outbox event, no audit row,
 * no import batch and no job left. On PostgreSQL and MariaDB the import runs on one process and the
 * erase is asked of the other (SQLite: one process). Another tenant's jobs and rows stay as they were.
 */
const dialect = testDialect();
const SIZE = dialect === 'sqlite' ? 1 : 2;
// Enough 500-row batches that the import is still running when the erase's cancel lands.
const ROWS = 20_000;
const PASSWORD = 'erase-mid-import passphrase 1';

jest.setTimeout(300_000);

describe(`Erasing a tenant while its import runs, ${SIZE} process(es) on ${dialect} (issue 34 #4)`, () => {
  let cluster: ServiceCluster;
  let ds: DataSource;
  let root: ServiceClient;
  const count = async (sql: string): Promise<number> => Number((await ds.query<Rec[]>(sql))[0].n);
  const text = (v: unknown) => (Buffer.isBuffer(v) ? v.toString('utf8') : typeof v === 'string' ? v : '');

  beforeAll(async () => {
    cluster = await ServiceCluster.start({
      label: 'erase-running-jobs',
      dialect,
      size: SIZE,
      env: { JOB_LEASE_MS: '3000', JOB_POLL_MS: '100' },
    });
    ds = await migratedDataSource(cluster.db);
    root = new ServiceClient(cluster.node(0).client.baseUrl, TENANT.acme);
    await root.signin('root@acme.test');
  });

  afterAll(async () => {
    await ds?.destroy();
    await cluster?.close();
  });

  /** What is left of tenant `id` in the tables an import writes to. */
  async function leftOf(id: number): Promise<Record<string, number>> {
    return {
      customers: await count(`SELECT COUNT(*) AS n FROM demo_customers WHERE cus_tenant_id = ${id}`),
      events: await count(`SELECT COUNT(*) AS n FROM app_events WHERE evt_tenant_id = ${id}`),
      audits: await count(`SELECT COUNT(*) AS n FROM app_audit_logs WHERE aud_tenant_id = ${id}`),
      batches: await count(`SELECT COUNT(*) AS n FROM app_import_batches WHERE imb_tenant_id = ${id}`),
      jobs: await count(`SELECT COUNT(*) AS n FROM app_jobs WHERE job_tenant_id = ${id}`),
    };
  }

  async function upload(
    node: ServiceProcess,
    tenantId: string,
    token: string,
    marker: string,
  ): Promise<void> {
    const lines = Array.from(
      { length: ROWS },
      (_, i) => `${marker} ${i},${marker.toLowerCase()}-${i}@erase.example,silver,${i}`,
    );
    const form = new FormData();
    form.append(
      'file',
      new Blob([`name,email,tier,credit_limit\n${lines.join('\n')}\n`], { type: 'text/csv' }),
      'c.csv',
    );
    const res = await fetch(`${node.client.baseUrl}/api/v1/customers/imports?onError=skip`, {
      method: 'POST',
      headers: { 'x-tenant-id': tenantHeader(tenantId), authorization: `Bearer ${token}` },
      body: form,
    });
    expect(res.status).toBe(202);
  }

  it('should stop the import on whichever process runs it, and leave no row of the tenant', async () => {
    const code = `erasemid${Date.now() % 100000}`;
    const created = await root.request('POST', '/api/v1/admin/tenants', {
      code,
      name: 'Erased mid-import',
      template: 'acme',
      admin: { email_id: `boss@${code}.test`, password: PASSWORD },
    });
    expect(created.status).toBe(201);
    const tenantId = String(created.body.data.tenantId);
    const boss = new ServiceClient(cluster.node(0).client.baseUrl, tenantId);
    await boss.signin(`boss@${code}.test`, PASSWORD);
    // Another tenant's work, which the erase must not touch: a queued job of a kind no instance runs
    // and acme's customers.
    await ds.query(
      `INSERT INTO app_jobs (job_tenant_id, job_kind, job_status, job_processed, job_attempts, job_created_at, job_updated_at)
       VALUES (1, 'test.parked', 'PENDING', 0, 0, '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')`,
    );
    const acmeBefore = await count(`SELECT COUNT(*) AS n FROM demo_customers WHERE cus_tenant_id = 1`);

    await upload(cluster.node(0), tenantId, boss.token, `Erase${code}`);
    let job: Rec = {};
    await waitFor(
      async () => {
        [job] = await ds.query<Rec[]>(
          `SELECT job_id AS id, job_status AS status, job_processed AS processed, job_lease_owner AS owner
           FROM app_jobs WHERE job_tenant_id = ${Number(tenantId)}`,
        );
        return job?.status === 'RUNNING' && Number(job.processed) >= 500;
      },
      120_000,
      5,
    );
    expect(Number(job.processed)).toBeLessThan(ROWS);
    const runner = cluster.byWorker(text(job.owner))!;
    expect(runner).toBeDefined();
    // The erase is asked of a process that does not run the import (when there are two).
    const asked = cluster.nodes.find((n) => n !== runner) ?? runner;
    const eraser = new ServiceClient(asked.client.baseUrl, TENANT.acme);
    eraser.token = root.token;
    const erased = await eraser.request('DELETE', `/api/v1/admin/tenants/${tenantId}`, { confirm: code });
    expect(erased.status).toBe(200);

    const none = { customers: 0, events: 0, audits: 0, batches: 0, jobs: 0 };
    expect(await leftOf(Number(tenantId))).toEqual(none);
    // The worker stopped, and let go: nothing is written after the erase either.
    const jobLines = () =>
      runner
        .stdout()
        .split('\n')
        .filter((l) => l.includes(`"jobId":${Number(job.id)},`))
        .join('\n');
    await waitFor(async () => jobLines().includes('"event":"job_stopped"'), 10_000).catch(() => undefined);
    expect(jobLines()).toMatch(new RegExp(`"event":"job_stopped","jobId":${Number(job.id)},`));
    expect(jobLines()).not.toMatch(/"status":"COMPLETED","committed":true/);
    await new Promise((r) => setTimeout(r, 3000));
    expect(await leftOf(Number(tenantId))).toEqual(none);

    const [parked] = await ds.query<Rec[]>(
      `SELECT job_status AS status FROM app_jobs WHERE job_kind = 'test.parked'`,
    );
    expect(parked).toMatchObject({ status: 'PENDING' });
    expect(await count(`SELECT COUNT(*) AS n FROM demo_customers WHERE cus_tenant_id = 1`)).toBe(acmeBefore);
  });
});
