import { parse } from 'csv-parse/sync';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DataSource } from 'typeorm';
import { CacheService } from '../../src/cache/cache.service';
import { DatabaseService } from '../../src/database/database.service';
import { authHeaders, signin, TENANT, tenantHeader } from '../support/auth';
import { startTestApp, TestApp, waitFor } from '../support/test-app';

type Rec = Record<string, any>;

/**
 * Exports as jobs (issue 21 #1): the bounds on unfinished exports per user, per tenant and per
 * instance (429 RATE_LIMITED with Retry-After, the error envelope, nothing queued); the 202 of an
 * export that outlives EXPORT_WAIT_MS and its status route — scoped to the tenant (another
 * tenant's job is a 404), its kind, its creator for cancel — and a queued job finishing on the
 * worker with its download.
 */
describe('Export jobs: limits, 202 and the status route (issue 21 #1)', () => {
  describe('with no worker on this instance (jobs stay queued)', () => {
    let t: TestApp;
    let ds: DataSource;
    let dir: string;
    const token: Record<string, string> = {};
    const post = (who: string, tenant: string = TENANT.acme, format = 'csv') =>
      t.app.inject({
        method: 'POST',
        url: '/api/v1/dataviews/customers_grid/export',
        headers: authHeaders(tenant, who),
        payload: { format },
      });
    const get = (url: string, who = token.admin, tenant: string = TENANT.acme) =>
      t.app.inject({ method: 'GET', url, headers: authHeaders(tenant, who) });
    const cancel = (jobId: string, who = token.admin, tenant: string = TENANT.acme) =>
      t.app.inject({
        method: 'POST',
        url: `/api/v1/exports/${jobId}/cancel`,
        headers: authHeaders(tenant, who),
      });
    const refused = (res: { statusCode: number; headers: Rec; json(): Rec }, whose: string) => {
      expect(res.statusCode).toBe(429);
      expect(res.headers['retry-after']).toBe('5');
      expect(res.json()).toMatchObject({
        success: false,
        error: { code: 'RATE_LIMITED', message: expect.stringContaining(whose) },
      });
    };
    const jobs: Record<string, string[]> = { admin: [], viewer: [], globex: [] };

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'export-jobs-'));
      t = await startTestApp({
        label: 'export-jobs',
        env: {
          EXPORT_DIR: dir,
          JOB_WORKER: 'off',
          EXPORT_WAIT_MS: '0',
          EXPORT_MAX_PER_USER: '2',
          EXPORT_MAX_PER_TENANT: '3',
          EXPORT_MAX_PER_INSTANCE: '4',
        },
      });
      ds = t.app.get(DatabaseService).dataSource;
      // globex exports too here, so that a second tenant can reach this instance's bound.
      await ds.query(`UPDATE app_tenants SET tnt_features = '{"export":true}' WHERE tnt_id = 2`);
      const cache = t.app.get(CacheService);
      await cache.delete([cache.keys.tenant(TENANT.globex)]);
      token.admin = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
      token.viewer = (await signin(t.app, TENANT.acme, 'viewer@acme.test')).token;
      token.globex = (await signin(t.app, TENANT.globex, 'admin@globex.test')).token;
    });

    afterAll(async () => {
      await t?.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it('should answer 202 with the job when the file is not ready within EXPORT_WAIT_MS', async () => {
      for (let i = 0; i < 2; i++) {
        const res = await post(token.admin);
        expect(res.statusCode).toBe(202);
        const data = res.json().data;
        expect(data).toMatchObject({
          status: 'PENDING',
          dataviewCode: 'customers_grid',
          format: 'csv',
          processed: 0,
          statusUrl: `/api/v1/exports/${data.jobId}`,
        });
        expect(data.downloadUrl).toBeUndefined();
        jobs.admin.push(data.jobId);
      }
    });

    it('should refuse a user beyond EXPORT_MAX_PER_USER with 429 and Retry-After, queuing nothing', async () => {
      const count = async () =>
        Number((await ds.query<Rec[]>(`SELECT COUNT(*) AS n FROM app_jobs WHERE job_tenant_id = 1`))[0].n);
      const before = await count();
      refused(await post(token.admin), 'for this user');
      expect(await count()).toBe(before);
    });

    it('should refuse the tenant beyond EXPORT_MAX_PER_TENANT, whichever of its users asks', async () => {
      const first = await post(token.viewer);
      expect(first.statusCode).toBe(202);
      jobs.viewer.push(first.json().data.jobId);
      refused(await post(token.viewer), 'for this tenant');
    });

    it('should refuse any tenant beyond EXPORT_MAX_PER_INSTANCE', async () => {
      const first = await post(token.globex, TENANT.globex);
      expect(first.statusCode).toBe(202);
      jobs.globex.push(first.json().data.jobId);
      refused(await post(token.globex, TENANT.globex), 'on this instance');
    });

    it('should show a job to its creator and job administrators only (anyone else gets 404)', async () => {
      const [id] = jobs.admin;
      expect(id).toMatch(/^[A-Za-z0-9_-]{22}$/);
      const own = await get(`/api/v1/exports/${id}`);
      expect(own.statusCode).toBe(200);
      expect(own.json().data).toMatchObject({ jobId: id, status: 'PENDING', dataviewCode: 'customers_grid' });
      // issue 34: the viewer is neither its creator nor a job administrator; the tenant admin (*:*) is.
      expect((await get(`/api/v1/exports/${id}`, token.viewer)).statusCode).toBe(404);
      expect((await get(`/api/v1/exports/${jobs.viewer[0]}`, token.admin)).statusCode).toBe(200);
      const other = await get(`/api/v1/exports/${id}`, token.globex, TENANT.globex);
      expect([other.statusCode, other.json().error.code]).toEqual([404, 'NOT_FOUND']);
      const back = await get(`/api/v1/exports/${jobs.globex[0]}`, token.admin, TENANT.acme);
      expect(back.statusCode).toBe(404);
      const otherCancel = await cancel(id, token.globex, TENANT.globex);
      expect(otherCancel.statusCode).toBe(404);
      expect((await get(`/api/v1/exports/${id}`)).json().data.status).toBe('PENDING');
    });

    it('should not answer a job of another kind, an unknown id, a bad id or a caller without a token', async () => {
      const other = 'OtherKindOtherKind0000';
      await ds.query(
        `INSERT INTO app_jobs (job_tenant_id, job_public_id, job_kind, job_status, job_created_by, job_processed, job_attempts, job_created_at, job_updated_at)
         VALUES (1, '${other}', 'test.other', 'PENDING', 1, 0, 0, '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')`,
      );
      expect((await get(`/api/v1/exports/${other}`)).statusCode).toBe(404);
      // The row key is no id of the routes (issue 34): numbers, and anything else, are 404.
      const [{ id }] = await ds.query<Rec[]>(`SELECT MIN(job_id) AS id FROM app_jobs WHERE job_kind = 'dataview.export'`);
      for (const bad of [String(Number(id)), '99999999', '99999999999', 'abc']) {
        const res = await get(`/api/v1/exports/${bad}`);
        expect([res.statusCode, res.json().error.code]).toEqual([404, 'NOT_FOUND']);
      }
      const anonymous = await t.app.inject({
        method: 'GET',
        url: `/api/v1/exports/${jobs.admin[0]}`,
        headers: { 'x-tenant-id': tenantHeader(TENANT.acme) },
      });
      expect(anonymous.statusCode).toBe(401);
    });

    it('should let only the creator cancel, and free the slot it held', async () => {
      const [id] = jobs.admin;
      // The viewer cannot see the admin's job (404); the admin sees the viewer's but may not cancel it.
      const byViewer = await cancel(id, token.viewer);
      expect([byViewer.statusCode, byViewer.json().error.code]).toEqual([404, 'NOT_FOUND']);
      const byAdmin = await cancel(jobs.viewer[0]);
      expect([byAdmin.statusCode, byAdmin.json().error.code]).toEqual([403, 'FORBIDDEN']);
      const res = await cancel(id);
      expect(res.statusCode).toBe(200);
      expect(res.json().data).toMatchObject({ jobId: id, status: 'CANCELLED' });
      expect(res.json().data.finishedAt).toEqual(expect.any(String));
      expect((await cancel(id)).json().data.status).toBe('CANCELLED');
      const again = await post(token.admin);
      expect(again.statusCode).toBe(202);
    });
  });

  describe('with the worker on', () => {
    let t: TestApp;
    let dir: string;
    let admin: string;

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'export-jobs-run-'));
      t = await startTestApp({
        label: 'export-jobs-run',
        env: { EXPORT_DIR: dir, EXPORT_WAIT_MS: '0', JOB_POLL_MS: '50' },
      });
      admin = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
    });

    afterAll(async () => {
      await t?.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it('should run a queued export to COMPLETED, with its progress and the same file as the route answers', async () => {
      const res = await t.app.inject({
        method: 'POST',
        url: '/api/v1/dataviews/customers_grid/export',
        headers: authHeaders(TENANT.acme, admin),
        payload: { format: 'csv', sort: [{ fieldCode: 'credit_limit', direction: 'desc' }] },
      });
      expect(res.statusCode).toBe(202);
      const url = res.json().data.statusUrl as string;
      let job: Rec = {};
      await waitFor(async () => {
        job = (
          await t.app.inject({ method: 'GET', url, headers: authHeaders(TENANT.acme, admin) })
        ).json().data;
        return job.status === 'COMPLETED';
      });
      expect(job).toMatchObject({ processed: 50, total: 50, format: 'csv' });
      expect(job.filename).toMatch(/^customers_\d{4}-\d{2}-\d{2}\.csv$/);
      const file = await t.app.inject({
        method: 'GET',
        url: job.downloadUrl,
        headers: authHeaders(TENANT.acme, admin),
      });
      const rows: string[][] = parse(file.body, { relax_quotes: false });
      expect(rows).toHaveLength(51);
      const limits = rows.slice(1).map((r) => Number(r[3]));
      expect(limits).toEqual([...limits].sort((a, b) => b - a));
    });

    it('should export hostile text so that a strict CSV parser reads one row per record (issue 21 #2)', async () => {
      const names = ['Frank\n=1+1', 'Carol\r@SUM(1+1)', ' =1+1', ';=1+1', '＝1+1', 'Dave;=2+2'];
      // Straight into the table: such text may come from anywhere (another system, an old row),
      // whatever the entity routes accept today.
      const ds = t.app.get(DatabaseService).dataSource;
      const stamp = new Date().toISOString().replace('T', ' ').replace('Z', '');
      const values = names.map((name, i) => ({
        cus_tenant_id: 1,
        cus_name: name,
        cus_email: `hostile${i}@acme.example`,
        cus_tier: 'gold',
        cus_credit_limit: 1,
        cus_status: 1,
        cus_is_deleted: false,
        cus_last_modified: stamp,
      }));
      await ds.createQueryBuilder().insert().into('demo_customers', Object.keys(values[0])).values(values).execute();
      const res = await t.app.inject({
        method: 'POST',
        url: '/api/v1/dataviews/customers_grid/export',
        headers: authHeaders(TENANT.acme, admin),
        payload: { format: 'csv' },
      });
      const url = res.json().data.statusUrl as string;
      let job: Rec = {};
      await waitFor(async () => {
        job = (await t.app.inject({ method: 'GET', url, headers: authHeaders(TENANT.acme, admin) })).json().data;
        return job.status === 'COMPLETED';
      });
      const file = await t.app.inject({ method: 'GET', url: job.downloadUrl, headers: authHeaders(TENANT.acme, admin) });
      const rows: string[][] = parse(file.body, { relax_quotes: false, relax_column_count: false });
      expect(rows).toHaveLength(job.total + 1);
      expect(rows.every((r) => r.length === 4)).toBe(true);
      const cells = new Set(rows.map((r) => r[0]));
      for (const expected of ["Frank\n'=1+1", "Carol\r'@SUM(1+1)", "' =1+1", "';=1+1", "'＝1+1", 'Dave;=2+2'])
        expect(cells).toContain(expected);
      // Split on every CR and LF, as a careless reader would: no line starts a formula.
      for (const line of file.body.split(/\r\n|\r|\n/))
        expect(line.replace(/^"/, '')).not.toMatch(/^\s*[=+\-@;＝＋－＠]/);
    });

    it('should rebuild the user from the job and fail the job when that user may no longer export', async () => {
      // A job queued for the viewer, who is deactivated before it runs: the worker acts as the user
      // the database has now, so the job fails with 403 — it never exports with a stale right.
      const ds = t.app.get(DatabaseService).dataSource;
      const [{ id: viewerId }] = await ds.query<Rec[]>(
        `SELECT usr_id AS id FROM app_users WHERE usr_email_id = 'viewer@acme.test'`,
      );
      await ds.query(`UPDATE app_users SET usr_status = 0 WHERE usr_id = ${Number(viewerId)}`);
      try {
        const input = JSON.stringify({ dataviewCode: 'customers_grid', body: { format: 'csv' } });
        await ds.query(
          `INSERT INTO app_jobs (job_tenant_id, job_public_id, job_kind, job_status, job_created_by, job_request_id,
             job_input, job_processed, job_attempts, job_created_at, job_updated_at)
           VALUES (1, 'StaleUserStaleUser0000', 'dataview.export', 'PENDING', ${Number(viewerId)}, 'e2e-stale-user',
             '${input}', 0, 0, '2026-01-01 00:00:00.000', '2026-01-01 00:00:00.000')`,
        );
        const url = '/api/v1/exports/StaleUserStaleUser0000';
        let job: Rec = {};
        await waitFor(async () => {
          job = (await t.app.inject({ method: 'GET', url, headers: authHeaders(TENANT.acme, admin) })).json().data;
          return job.status === 'FAILED';
        });
        expect(job.error).toMatchObject({ code: 'FORBIDDEN' });
        expect(job.downloadUrl).toBeUndefined();
      } finally {
        await ds.query(`UPDATE app_users SET usr_status = 1 WHERE usr_id = ${Number(viewerId)}`);
      }
    });
  });
});
