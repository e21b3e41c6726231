import type { DataSource } from 'typeorm';
import { DatabaseService } from '../../src/database/database.service';
import { seedDemo } from '../../src/database/seed/demo-seed';
import { authHeaders, DEMO_PASSWORD, signin, TENANT } from '../support/auth';
import { startTestApp, type TestApp } from '../support/test-app';

type Json = Record<string, any>;

/**
 * Issue 34 #14: a freshly seeded database's demo records have their first version — an
 * `entity.created` entry per record, written by the seed — so their history starts at version 1
 * and "restore version 1" works; a second run of the seed writes no entry twice. Another tenant's
 * record's version stays out of reach.
 */
describe('demo records start at version 1 (issue 34 #14)', () => {
  let t: TestApp;
  let ds: DataSource;
  let token: string;

  beforeAll(async () => {
    t = await startTestApp({ label: 'seed-history' });
    ds = t.app.get(DatabaseService).dataSource;
    token = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
  });

  afterAll(async () => {
    await t?.close();
  });

  const call = (method: 'GET' | 'POST' | 'PUT', url: string, payload?: Json, tenant: string = TENANT.acme) =>
    t.app.inject({ method, url, headers: authHeaders(tenant, token), ...(payload ? { payload } : {}) });
  const entries = async () =>
    Number(
      (await ds.query(`SELECT COUNT(*) AS n FROM app_audit_logs WHERE aud_event = 'entity.created'`))[0].n,
    );

  it('should show version 1 of a seeded customer, created, with its seeded values', async () => {
    const res = await call('GET', '/api/v1/customers/1/history/1');
    expect(res.statusCode).toBe(200);
    const data = res.json().data as Json;
    expect(data).toMatchObject({ version: 1, action: 'created', deleted: false });
    expect(data.record).toMatchObject({ id: 1, email: 'customer1@acme.example' });
    const history = (await call('GET', '/api/v1/customers/1/history')).json().data as Json;
    expect(history.entries.map((e: Json) => Number(e.version))).toEqual([1]);
  });

  it('should restore version 1 of a seeded customer after a change', async () => {
    const before = (await call('GET', '/api/v1/customers/2')).json().data as Json;
    const changed = await call('PUT', '/api/v1/customers/2', {
      lastModified: before.lastModified,
      credit_limit: 123,
    });
    expect(changed.statusCode).toBe(200);
    const history = (await call('GET', '/api/v1/customers/2/history')).json().data as Json;
    expect(history.entries.map((e: Json) => Number(e.version))).toEqual([2, 1]);
    const restored = await call('POST', '/api/v1/customers/2/restore', {
      version: 1,
      lastModified: changed.json().data.lastModified,
    });
    expect(restored.statusCode).toBe(200);
    expect(restored.json().data.record).toMatchObject({ id: 2, credit_limit: before.credit_limit });
  });

  it('should give seeded orders their version 1 too', async () => {
    const res = await call('GET', '/api/v1/orders/1/history/1');
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toMatchObject({ version: 1, action: 'created' });
  });

  it("should not show another tenant's seeded record's version", async () => {
    const globexCustomer = Number(
      (await ds.query(`SELECT MIN(cus_id) AS id FROM demo_customers WHERE cus_tenant_id = 2`))[0].id,
    );
    const res = await call('GET', `/api/v1/customers/${globexCustomer}/history/1`);
    expect(res.statusCode).toBe(404);
    expect(res.json().error.code).toBe('NOT_FOUND');
  });

  it('should write no entry twice when the seed runs again', async () => {
    const before = await entries();
    const { inserted } = await seedDemo(ds, { password: DEMO_PASSWORD });
    expect(inserted.app_audit_logs).toBe(0);
    expect(await entries()).toBe(before);
  });
});
