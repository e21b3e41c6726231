import type { DataSource } from 'typeorm';
import { DatabaseService } from '../../src/database/database.service';
import { RegistryService } from '../../src/registry/registry.service';
import { RESERVED_ENTITY_CODES } from '../../src/registry/registry-entity';
import { authHeaders, signin, TENANT } from '../support/auth';
import { listRoutes } from '../support/routes';
import { startTestApp, TestApp } from '../support/test-app';

/**
 * Issue 24 #6: the service's own top-level names under /api/v1 shadow an entity of the same code,
 * so the registry refuses such codes. The walk of every registered route keeps the reserved list
 * complete: a new route family under /api/v1 fails here until its name is reserved.
 */
describe('reserved entity codes (top-level names of /api/v1)', () => {
  let t: TestApp;
  let ds: DataSource;
  let token: string;

  beforeAll(async () => {
    t = await startTestApp({ label: 'reserved_codes' });
    ds = t.app.get(DatabaseService).dataSource;
    token = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
  });

  afterAll(async () => {
    await t?.close();
  });

  it('should reserve every static top-level name of the routes under /api/v1', () => {
    const names = new Set<string>();
    for (const r of listRoutes(t.app)) {
      const m = /^\/api\/v1\/([^/{}]+)/.exec(r.path);
      if (m) names.add(m[1]);
    }
    expect(names.size).toBeGreaterThan(0);
    expect([...names].filter((n) => !(RESERVED_ENTITY_CODES as readonly string[]).includes(n))).toEqual([]);
    // The routes of these families exist now; the others are reserved for what comes next.
    for (const name of ['webhooks', 'dataviews', 'workflows', 'auth', 'config', 'downloads', 'admin'])
      expect(names).toContain(name);
  });

  it("should refuse a registry row coded like a route family: the entity is not found, the route stays the service's", async () => {
    const [customers] = await ds.query<Array<Record<string, unknown>>>(
      `SELECT * FROM app_object_registries WHERE obj_code = 'customers' AND obj_tenant_id IS NULL`,
    );
    for (const code of ['webhooks', 'imports']) {
      const { obj_id: _id, ...rest } = customers;
      const row = { ...rest, obj_code: code, obj_tenant_id: Number(TENANT.acme) };
      await ds.createQueryBuilder().insert().into('app_object_registries').values(row).execute();
    }
    const registry = t.app.get(RegistryService);
    expect(await registry.resolve(TENANT.acme, 'webhooks')).toBeUndefined();
    expect(await registry.resolve(TENANT.acme, 'imports')).toBeUndefined();
    expect(await registry.resolve(TENANT.acme, 'customers')).toBeDefined();
    const list = await t.app.inject({
      method: 'GET',
      url: '/api/v1/webhooks',
      headers: authHeaders(TENANT.acme, token),
    });
    expect(list.statusCode).toBe(200);
    expect(list.json().data).toEqual([]);
    const imports = await t.app.inject({
      method: 'GET',
      url: '/api/v1/imports',
      headers: authHeaders(TENANT.acme, token),
    });
    expect(imports.statusCode).toBe(404);
    expect(imports.json()).toMatchObject({ success: false, error: { code: 'NOT_FOUND' } });
  });
});
