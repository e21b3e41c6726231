import { parse } from 'csv-parse/sync';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DataSource } from 'typeorm';
import { CacheService } from '../../src/cache/cache.service';
import { hashPassword } from '../../src/common/crypto/password';
import { DatabaseService } from '../../src/database/database.service';
import { authHeaders, DEMO_PASSWORD, signin, TENANT } from '../support/auth';
import { startTestApp, TestApp, waitFor } from '../support/test-app';

type Rec = Record<string, any>;

/** What acme's importers may do: read, create and export customers, nothing administrative. */
const IMPORTER_PERMISSIONS = [
  'read:entity',
  'create:entity',
  'update:entity',
  'read:dataview',
  'export:dataview',
];

/** A user of acme with a role of its own holding `permissions`; its token. */
async function userWith(t: TestApp, ds: DataSource, code: string, permissions: string[]): Promise<string> {
  await ds
    .createQueryBuilder()
    .insert()
    .into('app_roles')
    .values({
      rol_tenant_id: 1,
      rol_code: code,
      rol_permissions: JSON.stringify(permissions),
      rol_status: 1,
      rol_is_deleted: 0,
    })
    .execute();
  const role = await ds
    .createQueryBuilder()
    .select('r.rol_id', 'id')
    .from('app_roles', 'r')
    .where('r.rol_tenant_id = 1 AND r.rol_code = :code', { code })
    .getRawOne<{ id: unknown }>();
  const email = `${code.toLowerCase()}@acme.test`;
  await ds
    .createQueryBuilder()
    .insert()
    .into('app_users')
    .values({
      usr_tenant_id: 1,
      usr_email_id: email,
      usr_role_id: Number(role?.id),
      usr_password_hash: await hashPassword(DEMO_PASSWORD),
      usr_status: 1,
      usr_is_deleted: 0,
    })
    .execute();
  return (await signin(t.app, TENANT.acme, email)).token;
}

/**
 * Who may see a job and its files (issue 34, attack suite): an import, its error file, an export,
 * its download and a tenant export ZIP are found by their creator and by the job administrators
 * (acme's admin holds `*:*`, so `admin:jobs`; root holds `admin:system`) — a tenant export by
 * `admin:system` only. Everyone else gets 404, as for an id that names nothing: the viewer (no
 * create permission), another importer of the same tenant, and another tenant's administrator.
 * Ids are opaque: neighbouring numbers and the row keys find nothing. The error file holds the
 * failed rows as their creator may see them (phone masked, internal_notes left out), formulas
 * neutralized (D48). The files live in the shared store (EXPORT_STORE=database, their kind and
 * owner in their rows); a second app checks the directory store's rule on the same routes.
 */
describe('Who may see a job and its files (issue 34)', () => {
  let t: TestApp;
  let ds: DataSource;
  const token: Record<string, string> = {};
  const tenantOf: Record<string, string> = {
    importer: TENANT.acme,
    otherImporter: TENANT.acme,
    viewer: TENANT.acme,
    admin: TENANT.acme,
    root: TENANT.acme,
    globex: TENANT.globex,
  };
  const get = (url: string, who: string) =>
    t.app.inject({ method: 'GET', url, headers: authHeaders(tenantOf[who], token[who]) });
  const post = (url: string, who: string, payload?: unknown, type?: string) =>
    t.app.inject({
      method: 'POST',
      url,
      headers: { ...authHeaders(tenantOf[who], token[who]), ...(type ? { 'content-type': type } : {}) },
      ...(payload === undefined ? {} : { payload: payload as string }),
    });
  /** The 404 an unknown id gets: the error envelope, nothing that tells the job or file exists. */
  const expectNotFound = (res: { statusCode: number; json(): Rec }, label: string) =>
    expect([label, res.statusCode, res.json().error?.code]).toEqual([label, 404, 'NOT_FOUND']);

  const OUTSIDERS = ['viewer', 'otherImporter', 'globex'] as const;
  let importJob: Rec = {};
  let exportJob: Rec = {};
  let tenantExport: Rec = {};
  let keys: { importKey: number; exportKey: number; tenantExportKey: number };

  beforeAll(async () => {
    t = await startTestApp({
      label: 'job-visibility',
      env: { EXPORT_STORE: 'database', EXPORT_WAIT_MS: '0', JOB_POLL_MS: '50' },
    });
    ds = t.app.get(DatabaseService).dataSource;
    // globex exports too here, so that its administrator reaches the job routes (not a 403 FEATURE_DISABLED).
    await ds.query(`UPDATE app_tenants SET tnt_features = '{"export":true}' WHERE tnt_id = 2`);
    const cache = t.app.get(CacheService);
    await cache.delete([cache.keys.tenant(TENANT.globex)]);
    token.importer = await userWith(t, ds, 'IMPORTER', IMPORTER_PERMISSIONS);
    token.otherImporter = await userWith(t, ds, 'IMPORTER_TWO', IMPORTER_PERMISSIONS);
    token.viewer = (await signin(t.app, TENANT.acme, 'viewer@acme.test')).token;
    token.admin = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
    token.root = (await signin(t.app, TENANT.acme, 'root@acme.test')).token;
    token.globex = (await signin(t.app, TENANT.globex, 'admin@globex.test')).token;

    // The importer's import: one good row, three that fail, with a phone its profile masks, the
    // internal_notes its profile excludes (still writable: a projection limits reads only) and
    // formulas; credit_limit is numeric (-5 fails its minimum and must come back as -5).
    const csv = [
      'name,email,tier,phone,internal_notes,credit_limit',
      'Visibility Good,visibility-good@acme.example,silver,+1 555 0100 1111,fine,10',
      '"=HYPERLINK(""http://evil.example"",""x"")",bad-email-1,silver,+1 555 0100 7777,secret note one,-5',
      '@SUM(1),bad-email-2,silver,,secret note two,7',
      '+1+1,bad-email-3,silver,,secret note three,3',
    ].join('\n');
    const queued = await post('/api/v1/customers/imports?onError=skip', 'importer', `${csv}\n`, 'text/csv');
    expect(queued.statusCode).toBe(202);
    await waitFor(async () => {
      importJob = (await get(queued.json().data.statusUrl, 'importer')).json().data;
      return importJob.status === 'COMPLETED';
    });
    // The importer's export, still rendering after EXPORT_WAIT_MS = 0: a job, then a file.
    const exported = await post('/api/v1/dataviews/customers_grid/export', 'importer', { format: 'csv' });
    expect(exported.statusCode).toBe(202);
    await waitFor(async () => {
      exportJob = (await get(exported.json().data.statusUrl, 'importer')).json().data;
      return exportJob.status === 'COMPLETED';
    });
    // Root's export of another tenant (D58): a job of acme, a ZIP of globex.
    const started = await post(`/api/v1/admin/tenants/${TENANT.globex}/export`, 'root');
    expect(started.statusCode).toBe(202);
    await waitFor(async () => {
      const url = `/api/v1/admin/tenants/${TENANT.globex}/export/${started.json().data.jobId}`;
      tenantExport = (await get(url, 'root')).json().data;
      return tenantExport.status === 'COMPLETED';
    }, 60_000);
    const keyOf = async (publicId: string) =>
      Number(
        (await ds.query<Rec[]>(`SELECT job_id AS id FROM app_jobs WHERE job_public_id = '${publicId}'`))[0]
          .id,
      );
    keys = {
      importKey: await keyOf(importJob.importId),
      exportKey: await keyOf(exportJob.jobId),
      tenantExportKey: await keyOf(tenantExport.jobId),
    };
  }, 120_000);

  afterAll(async () => {
    await t?.close();
  });

  it('should give every job an opaque id of 22 base64url characters, and no row key', () => {
    expect(importJob).toMatchObject({ status: 'COMPLETED', created: 1, failed: 3 });
    for (const id of [importJob.importId, exportJob.jobId, tenantExport.jobId])
      expect(id).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(importJob.statusUrl).toBe(`/api/v1/imports/${importJob.importId}`);
    expect(exportJob.statusUrl).toBe(`/api/v1/exports/${exportJob.jobId}`);
    expect(new Set([importJob.importId, exportJob.jobId, tenantExport.jobId]).size).toBe(3);
  });

  it('should show the import and its error file to their creator and the job administrators only', async () => {
    for (const who of ['importer', 'admin', 'root']) {
      expect([who, (await get(importJob.statusUrl, who)).statusCode]).toEqual([who, 200]);
      expect([who, (await get(importJob.errorFileUrl, who)).statusCode]).toEqual([who, 200]);
    }
    for (const who of OUTSIDERS) {
      expectNotFound(await get(importJob.statusUrl, who), `${who} reads the import`);
      expectNotFound(await get(importJob.errorFileUrl, who), `${who} downloads its error file`);
      expectNotFound(await post(`${importJob.statusUrl}/cancel`, who), `${who} cancels the import`);
    }
  });

  it('should show the export and its download to their creator and the job administrators only', async () => {
    for (const who of ['importer', 'admin', 'root']) {
      expect([who, (await get(exportJob.statusUrl, who)).statusCode]).toEqual([who, 200]);
      expect([who, (await get(exportJob.downloadUrl, who)).statusCode]).toEqual([who, 200]);
    }
    for (const who of OUTSIDERS) {
      expectNotFound(await get(exportJob.statusUrl, who), `${who} reads the export`);
      expectNotFound(await get(exportJob.downloadUrl, who), `${who} downloads it`);
      expectNotFound(await post(`${exportJob.statusUrl}/cancel`, who), `${who} cancels it`);
    }
  });

  it('should serve a tenant export ZIP to holders of admin:system only, even within its tenant', async () => {
    const zip = await get(tenantExport.downloadUrl, 'root');
    expect([zip.statusCode, zip.headers['content-type']]).toEqual([200, 'application/zip']);
    // acme's tenant administrator (*:*) administers acme's jobs, not a system administrator's.
    for (const who of [...OUTSIDERS, 'admin', 'importer'])
      expectNotFound(await get(tenantExport.downloadUrl, who), `${who} downloads the tenant ZIP`);
    // Its status route needs admin:system first: the same 403 for this job and for no job at all.
    for (const jobId of [tenantExport.jobId, 'AAAAAAAAAAAAAAAAAAAAAA']) {
      const res = await get(`/api/v1/admin/tenants/${TENANT.globex}/export/${jobId}`, 'admin');
      expect([res.statusCode, res.json().error.code]).toEqual([403, 'FORBIDDEN']);
    }
  });

  it('should find nothing by the row keys or their neighbours, nor by a near miss of a public id', async () => {
    const { importKey, exportKey, tenantExportKey } = keys;
    const numbers = new Set<number>();
    for (const key of [importKey, exportKey, tenantExportKey])
      for (let n = Math.max(1, key - 3); n <= key + 3; n++) numbers.add(n);
    for (const n of numbers) {
      for (const who of ['importer', 'admin', 'root']) {
        expectNotFound(await get(`/api/v1/imports/${n}`, who), `${who} GET imports/${n}`);
        expectNotFound(await get(`/api/v1/exports/${n}`, who), `${who} GET exports/${n}`);
      }
      expectNotFound(
        await get(`/api/v1/admin/tenants/${TENANT.globex}/export/${n}`, 'root'),
        `root GET tenant export ${n}`,
      );
    }
    const flip = (id: string) => id.slice(0, -1) + (id.endsWith('A') ? 'B' : 'A');
    expectNotFound(await get(`/api/v1/imports/${flip(importJob.importId)}`, 'importer'), 'near import id');
    expectNotFound(await get(`/api/v1/exports/${flip(exportJob.jobId)}`, 'importer'), 'near export id');
    // An import's id is no export's, nor the other way round.
    expectNotFound(await get(`/api/v1/exports/${importJob.importId}`, 'importer'), 'import id as an export');
    expectNotFound(await get(`/api/v1/imports/${exportJob.jobId}`, 'importer'), 'export id as an import');
  });

  it('should write the error file as its creator sees the rows: masked, projected, formulas neutralized', async () => {
    const file = await get(importJob.errorFileUrl, 'admin');
    expect(file.headers['content-type']).toMatch(/^text\/csv/);
    const rows: string[][] = parse(file.body, { relax_column_count: false });
    expect(rows[0]).toEqual(['name', 'email', 'tier', 'phone', 'credit_limit', 'error']);
    expect(file.body).not.toContain('secret note');
    expect(file.body).not.toContain('555 0100 7777');
    const cells = rows.slice(1).map((r) => r.slice(0, 5));
    expect(cells).toEqual([
      ['\'=HYPERLINK("http://evil.example","x")', 'bad-email-1', 'silver', '************7777', '-5'],
      ["'@SUM(1)", 'bad-email-2', 'silver', '', '7'],
      ["'+1+1", 'bad-email-3', 'silver', '', '3'],
    ]);
    expect(rows.slice(1).every((r) => r[5].includes('email'))).toBe(true);
  });
});

/** The embedded store (EXPORT_DIR) keeps a file's owner and kind in its metadata: the same rule. */
describe('Who may download a file of the directory store (issue 34)', () => {
  let t: TestApp;
  let dir: string;
  const token: Record<string, string> = {};

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'job-visibility-'));
    t = await startTestApp({ label: 'job-visibility-dir', env: { EXPORT_DIR: dir } });
    for (const who of ['viewer', 'admin'])
      token[who] = (await signin(t.app, TENANT.acme, `${who}@acme.test`)).token;
  });

  afterAll(async () => {
    await t?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("should serve the viewer's export to the viewer and the tenant administrator, not the other way round", async () => {
    const exportAs = async (who: string) => {
      const res = await t.app.inject({
        method: 'POST',
        url: '/api/v1/dataviews/customers_grid/export',
        headers: authHeaders(TENANT.acme, token[who]),
        payload: { format: 'csv' },
      });
      expect(res.statusCode).toBe(200);
      return res.json().data.downloadUrl as string;
    };
    const download = (url: string, who: string) =>
      t.app.inject({ method: 'GET', url, headers: authHeaders(TENANT.acme, token[who]) });
    const viewers = await exportAs('viewer');
    expect((await download(viewers, 'viewer')).statusCode).toBe(200);
    expect((await download(viewers, 'admin')).statusCode).toBe(200);
    const admins = await exportAs('admin');
    expect((await download(admins, 'admin')).statusCode).toBe(200);
    const refused = await download(admins, 'viewer');
    expect([refused.statusCode, refused.json().error.code]).toEqual([404, 'NOT_FOUND']);
  });
});
