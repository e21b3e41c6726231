import JSZip from 'jszip';
import type { DataSource } from 'typeorm';
import { DatabaseService } from '../../src/database/database.service';
import {
  EXPORT_TABLES,
  JOB_TABLES,
  OUTBOX_TABLES,
  REVOCATION_TABLES,
  TABLES,
  TENANT_OWNED_TABLES,
  TENANT_USAGE_TABLES,
  IMPORT_TABLES,
  WORKFLOW_STEP_KEYS_TABLE,
  type TableDef,
} from '../../src/database/schema';
import { authHeaders, signin, TENANT } from '../support/auth';
import { startTestApp, TestApp } from '../support/test-app';
import { testDialect } from '../support/test-database';

type Rec = Record<string, any>;
const ALL_TABLES: readonly TableDef[] = [
  ...TABLES,
  ...REVOCATION_TABLES,
  ...EXPORT_TABLES,
  WORKFLOW_STEP_KEYS_TABLE,
  ...JOB_TABLES,
  ...TENANT_USAGE_TABLES,
  ...IMPORT_TABLES,
  ...OUTBOX_TABLES,
];
const PASSWORD = 'umbrella passphrase 1';

/**
 * The tenant lifecycle (D58) on the dialect of the run: a system administrator creates a tenant
 * from a template with a first administrator, reads a tenant's usage and erases a tenant; a tenant
 * administrator (`*:*`, not `admin:system`) can do none of it; an erase leaves every other
 * tenant's rows exactly as they were, and the erased tenant's tokens and headers are refused.
 */
describe(`Tenant lifecycle (D58) on ${testDialect()}`, () => {
  let t: TestApp;
  let ds: DataSource;
  let root: string;
  let created: Rec;

  const call = (
    method: 'GET' | 'POST' | 'DELETE',
    url: string,
    token: string,
    payload?: Rec,
    tenant: string = TENANT.acme,
  ) =>
    t.app.inject({
      method,
      url,
      headers: authHeaders(tenant, token),
      ...(payload !== undefined ? { payload } : {}),
    });

  beforeAll(async () => {
    t = await startTestApp({ label: 'tenant-lifecycle', env: { TENANT_USAGE_FLUSH_MS: '100' } });
    ds = t.app.get(DatabaseService).dataSource;
    root = (await signin(t.app, TENANT.acme, 'root@acme.test')).token;
  });

  afterAll(async () => {
    await t?.close();
  });

  it('lists every table with a tenant column of the configuration database (entity tables aside)', () => {
    const withTenant = ALL_TABLES.filter(
      (d) => d.columns.some((c) => c.name === `${d.prefix}_tenant_id`) && !d.name.startsWith('demo_'),
    ).map((d) => d.name);
    expect([...withTenant].sort()).toEqual(TENANT_OWNED_TABLES.map((o) => o.table).sort());
  });

  it("refuses a tenant administrator every lifecycle route (403), and another tenant's too", async () => {
    const admin = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
    const globex = (await signin(t.app, TENANT.globex, 'admin@globex.test')).token;
    for (const [token, tenant] of [
      [admin, TENANT.acme],
      [globex, TENANT.globex],
    ] as const) {
      expect(
        (await call('POST', '/api/v1/admin/tenants', token, { code: 'nope', name: 'N' }, tenant)).statusCode,
      ).toBe(403);
      expect((await call('GET', '/api/v1/admin/tenants/1/usage', token, undefined, tenant)).statusCode).toBe(
        403,
      );
      expect(
        (await call('DELETE', '/api/v1/admin/tenants/3', token, { confirm: 'initech' }, tenant)).statusCode,
      ).toBe(403);
    }
    const [tenants] = await ds.query(`SELECT COUNT(*) AS n FROM app_tenants WHERE tnt_tenant_code = 'nope'`);
    expect(Number((tenants as Rec).n)).toBe(0);
  });

  it('refuses bad bodies with 400 and a taken code with 409, creating nothing', async () => {
    const before = await ds.query(`SELECT COUNT(*) AS n FROM app_tenants`);
    for (const body of [
      {},
      { code: 'Bad Code', name: 'x' },
      { code: 'ok_code', name: '' },
      { code: 'ok_code', name: 'x', template: 'no_such' },
      { code: 'ok_code', name: 'x', admin: { email_id: 'not-mail', password: PASSWORD } },
    ]) {
      const res = await call('POST', '/api/v1/admin/tenants', root, body);
      expect([res.statusCode, res.json().error.code]).toEqual([400, 'VALIDATION_ERROR']);
    }
    const taken = await call('POST', '/api/v1/admin/tenants', root, { code: 'acme', name: 'Again' });
    expect([taken.statusCode, taken.json().error.code]).toEqual([409, 'CONFLICT']);
    expect(await ds.query(`SELECT COUNT(*) AS n FROM app_tenants`)).toEqual(before);
  });

  it("creates a tenant from a template's configuration, with a first administrator who signs in", async () => {
    const res = await call('POST', '/api/v1/admin/tenants', root, {
      code: 'umbrella',
      name: 'Umbrella Corp',
      template: 'acme',
      admin: { email_id: 'boss@umbrella.test', password: PASSWORD },
    });
    expect(res.statusCode).toBe(201);
    created = res.json().data;
    expect(created).toMatchObject({ code: 'umbrella', tenantId: expect.stringMatching(/^\d+$/) });
    expect(created.copied.app_roles).toBeGreaterThan(0);
    const boss = await signin(t.app, created.tenantId, 'boss@umbrella.test', PASSWORD);
    expect(boss.status).toBe(200);
    // It starts with no data of the template's, and writes its own.
    const list = await call('GET', '/api/v1/customers', boss.token, undefined, created.tenantId);
    expect([list.statusCode, list.json().data.total]).toEqual([200, 0]);
    const made = await call(
      'POST',
      '/api/v1/customers',
      boss.token,
      { name: 'Umbrella buyer', email: 'buyer@umbrella.test' },
      created.tenantId,
    );
    expect(made.statusCode).toBe(201);
    created.token = boss.token;
    // The creation is audited in the administrator's tenant.
    const [audit] = await ds.query(
      `SELECT COUNT(*) AS n FROM app_audit_logs WHERE aud_event = 'tenant.created' AND aud_record_id = '${created.tenantId}'`,
    );
    expect(Number((audit as Rec).n)).toBe(1);
  });

  it("answers a tenant's usage: requests, rows per entity, jobs and stored bytes", async () => {
    const res = await call('GET', `/api/v1/admin/tenants/${created.tenantId}/usage`, root);
    expect(res.statusCode).toBe(200);
    const usage = res.json().data;
    expect(usage).toMatchObject({
      tenantId: created.tenantId,
      code: 'umbrella',
      rows: { customers: 1, orders: 0 },
    });
    expect(usage.requests.last24h).toBeGreaterThanOrEqual(3);
    expect(usage.requests.last30d).toBe(usage.requests.last24h);
    expect(usage.exports).toEqual({ jobs: 0 });
    expect(usage.deliveries).toEqual({ total: 0, dead: 0 });
    expect(usage.stored).toEqual({ files: 0, bytes: 0 });
    const acme = (await call('GET', `/api/v1/admin/tenants/${TENANT.acme}/usage`, root)).json().data;
    expect(acme.rows.customers).toBeGreaterThan(1);
    expect((await call('GET', '/api/v1/admin/tenants/999999/usage', root)).statusCode).toBe(404);
    expect((await call('GET', '/api/v1/admin/tenants/abc/usage', root)).statusCode).toBe(400);
  });

  it("exports every row of a tenant as a ZIP job, secrets left out, downloadable by the administrator's tenant only", async () => {
    const started = await call('POST', `/api/v1/admin/tenants/${created.tenantId}/export`, root);
    expect(started.statusCode).toBe(202);
    const { jobId } = started.json().data;
    let job: Rec = {};
    for (let i = 0; i < 200 && !['COMPLETED', 'FAILED'].includes(job.status); i++) {
      await new Promise((r) => setTimeout(r, 100));
      job = (await call('GET', `/api/v1/admin/tenants/${created.tenantId}/export/${jobId}`, root)).json()
        .data;
    }
    expect(job).toMatchObject({ status: 'COMPLETED', tenantId: created.tenantId });
    expect(job.files['entities/customers.jsonl']).toBe(1);
    // The job is found under its own tenant id only.
    expect(
      (await call('GET', `/api/v1/admin/tenants/${TENANT.globex}/export/${jobId}`, root)).statusCode,
    ).toBe(404);
    const admin = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
    expect(
      (await call('GET', `/api/v1/admin/tenants/${created.tenantId}/export/${jobId}`, admin)).statusCode,
    ).toBe(403);
    const globex = (await signin(t.app, TENANT.globex, 'admin@globex.test')).token;
    expect((await call('GET', job.downloadUrl, globex, undefined, TENANT.globex)).statusCode).toBe(404);

    const zip = await call('GET', job.downloadUrl, root);
    expect([zip.statusCode, zip.headers['content-type']]).toEqual([200, 'application/zip']);
    const archive = await JSZip.loadAsync(zip.rawPayload);
    const lines = async (name: string) =>
      (await archive.file(name)!.async('string'))
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Rec);
    const tenants = await lines('app_tenants.jsonl');
    expect(tenants.map((r): unknown => r.tnt_tenant_code)).toEqual(['umbrella']);
    const customers = await lines('entities/customers.jsonl');
    expect(customers.map((r): unknown => r.cus_name)).toEqual(['Umbrella buyer']);
    const users = await lines('app_users.jsonl');
    expect(users.map((r): unknown => r.usr_email_id)).toEqual(['boss@umbrella.test']);
    expect(users[0]).not.toHaveProperty('usr_password_hash');
    // Every row of every file is the tenant's own.
    for (const name of Object.keys(archive.files).filter((n) => n.endsWith('.jsonl'))) {
      for (const row of await lines(name)) {
        const tenantKey = Object.keys(row).find((k) => k.endsWith('_tenant_id')) ?? 'tnt_id';
        expect([name, String(row[tenantKey])]).toEqual([name, created.tenantId]);
      }
    }
    expect(Object.keys(job.files).sort()).toEqual(
      Object.keys(archive.files)
        .filter((n) => n.endsWith('.jsonl'))
        .sort(),
    );
  });

  /** Every row of every table that is not the erased tenant's, as text (audit of the lifecycle and usage counters aside). */
  async function othersSnapshot(target: string): Promise<string> {
    const out: Rec = {};
    for (const def of [...ALL_TABLES].sort((a, b) => a.name.localeCompare(b.name))) {
      if (def.name === 'app_tenant_usage') continue;
      const tenantCol = def.name === 'app_tenants' ? 'tnt_id' : `${def.prefix}_tenant_id`;
      const hasTenant = def.columns.some((c) => c.name === tenantCol) || def.name === 'app_tenants';
      const qb = ds.createQueryBuilder().select('t.*').from(def.name, 't');
      if (hasTenant)
        qb.where(`(t.${tenantCol} IS NULL OR t.${tenantCol} <> :target)`, { target: Number(target) });
      if (def.name === 'app_audit_logs') qb.andWhere(`t.aud_entity_code <> 'tenants'`);
      qb.orderBy(`t.${def.columns[0].name}`);
      out[def.name] = await qb.getRawMany();
    }
    return JSON.stringify(out);
  }

  it('erases a tenant: confirmation required, its rows gone, others byte-identical, its tokens refused', async () => {
    const before = await othersSnapshot(created.tenantId);
    const wrong = await call('DELETE', `/api/v1/admin/tenants/${created.tenantId}`, root, {
      confirm: 'acme',
    });
    expect([wrong.statusCode, wrong.json().error.code]).toEqual([400, 'VALIDATION_ERROR']);
    const own = await call('DELETE', `/api/v1/admin/tenants/${TENANT.acme}`, root, { confirm: 'acme' });
    expect([own.statusCode, own.json().error.code]).toEqual([409, 'CONFLICT']);
    expect(
      (await call('GET', '/api/v1/customers', created.token, undefined, created.tenantId)).statusCode,
    ).toBe(200);

    const res = await call('DELETE', `/api/v1/admin/tenants/${created.tenantId}`, root, {
      confirm: 'umbrella',
    });
    expect(res.statusCode).toBe(200);
    const erased = res.json().data;
    expect(erased).toMatchObject({ tenantId: created.tenantId, entities: { customers: 1 } });
    expect(erased.archived.app_users).toBe(1);
    expect(erased.archived.app_roles).toBe(created.copied.app_roles);

    expect(await othersSnapshot(created.tenantId)).toBe(before);
    const [rows] = await ds.query(
      `SELECT COUNT(*) AS n FROM demo_customers WHERE cus_tenant_id = ${Number(created.tenantId)}`,
    );
    expect(Number((rows as Rec).n)).toBe(0);
    // Its header and token are refused; its administrator cannot sign in.
    expect(
      (await call('GET', '/api/v1/customers', created.token, undefined, created.tenantId)).statusCode,
    ).toBe(403);
    expect((await signin(t.app, created.tenantId, 'boss@umbrella.test', PASSWORD)).status).toBe(403);
    // Its code stays taken (the tenant row is kept, deleted): the id is never reused.
    expect(
      (await call('POST', '/api/v1/admin/tenants', root, { code: 'umbrella', name: 'Again' })).statusCode,
    ).toBe(409);
    // Running it again finishes nothing more and still answers.
    const again = await call('DELETE', `/api/v1/admin/tenants/${created.tenantId}`, root, {
      confirm: 'umbrella',
    });
    expect(again.statusCode).toBe(200);
    expect(again.json().data.entities).toEqual({ customers: 0, orders: 0 });
    const [audit] = await ds.query(
      `SELECT COUNT(*) AS n FROM app_audit_logs WHERE aud_event = 'tenant.erased' AND aud_record_id = '${created.tenantId}'`,
    );
    expect(Number((audit as Rec).n)).toBe(2);
  });
});
