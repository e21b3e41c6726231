import { CacheService } from '../../src/cache/cache.service';
import { DatabaseService } from '../../src/database/database.service';
import { hashPassword } from '../../src/common/crypto/password';
import { authHeaders, DEMO_PASSWORD, signin, TENANT } from '../support/auth';
import { copyEntityConfig } from '../support/entity-fixtures';
import { startTestApp, TestApp } from '../support/test-app';

/** Reads of spec §4.3 on the demo entities, and every way a user of one tenant might reach another's rows. */
describe('Entity reads (spec §4.3, D20-D28)', () => {
  let t: TestApp;
  const token: Record<string, string> = {};
  let acmeCustomerIds: number[];
  let globexCustomerIds: number[];

  beforeAll(async () => {
    t = await startTestApp({ label: 'entity-read' });
    token.acmeAdmin = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
    token.acmeViewer = (await signin(t.app, TENANT.acme, 'viewer@acme.test')).token;
    token.globexAdmin = (await signin(t.app, TENANT.globex, 'admin@globex.test')).token;
    const ds = t.app.get(DatabaseService).dataSource;
    const ids = async (tenant: number) =>
      (
        await ds.query<Array<{ id: number }>>(
          `SELECT cus_id AS id FROM demo_customers WHERE cus_tenant_id = ${tenant} ORDER BY cus_id`,
        )
      ).map((r) => Number(r.id));
    acmeCustomerIds = await ids(1);
    globexCustomerIds = await ids(2);
  });

  afterAll(async () => {
    await t?.close();
  });

  const get = (url: string, tenant: string, who: string) =>
    t.app.inject({ method: 'GET', url, headers: authHeaders(tenant, token[who]) });

  describe('list', () => {
    it('should list the caller tenant’s customers with {records, total, limit, skip, meta}', async () => {
      const res = await get('/api/v1/customers', TENANT.acme, 'acmeAdmin');
      expect(res.statusCode).toBe(200);
      const data = res.json().data;
      expect(data).toMatchObject({
        total: 50,
        limit: 100,
        skip: 0,
        meta: { entityCode: 'customers', retrievedAt: expect.any(String) },
      });
      expect(data.records).toHaveLength(50);
      expect(data.records.every((r: { email: string }) => r.email.endsWith('@acme.example'))).toBe(true);
    });

    it('should page with limit and skip in a stable order', async () => {
      const page = (skip: number) =>
        get(`/api/v1/customers?limit=20&skip=${skip}&sortBy=name&sortOrder=desc`, TENANT.acme, 'acmeAdmin');
      const ids = [];
      for (const skip of [0, 20, 40])
        ids.push(...(await page(skip)).json().data.records.map((r: { id: number }) => r.id));
      expect(new Set(ids).size).toBe(50);
    });

    it('should filter with filters[field]=value, typed', async () => {
      const res = await get('/api/v1/customers?filters[tier]=gold', TENANT.acme, 'acmeAdmin');
      expect(res.json().data.total).toBe(10);
      const orders = await get(
        `/api/v1/orders?filters[customer_id]=${acmeCustomerIds[0]}`,
        TENANT.acme,
        'acmeAdmin',
      );
      expect(orders.json().data.total).toBeGreaterThanOrEqual(2);
    });

    it('should hide excluded fields and mask masked ones (read rule 6)', async () => {
      const record = (await get('/api/v1/customers?limit=1', TENANT.acme, 'acmeAdmin')).json().data
        .records[0];
      expect(record).not.toHaveProperty('internal_notes');
      expect(record.phone === null || /\*/.test(record.phone)).toBe(true);
      const user = (await get('/api/v1/users?limit=1', TENANT.acme, 'acmeAdmin')).json().data.records[0];
      expect(user).not.toHaveProperty('password_hash');
    });

    it.each([
      ['a hidden field in a filter', '/api/v1/customers?filters[internal_notes]=x'],
      ['a masked field in a filter', '/api/v1/customers?filters[phone]=1'],
      ['a hidden field in the sort', '/api/v1/customers?sortBy=internal_notes'],
      ['an unknown field', '/api/v1/customers?filters[cus_tenant_id]=2'],
      ['a limit above maxPageSize', '/api/v1/customers?limit=501'],
      ['a bad sortOrder', '/api/v1/customers?sortOrder=sideways'],
      ['a non-integer filter on an integer field', '/api/v1/orders?filters[customer_id]=1%20OR%201=1'],
      ['an unknown parameter', '/api/v1/customers?tenant=2'],
    ])('should refuse %s with 400 VALIDATION_ERROR', async (_, url) => {
      const res = await get(url, TENANT.acme, 'acmeAdmin');
      expect({ status: res.statusCode, code: res.json().error?.code }).toEqual({
        status: 400,
        code: 'VALIDATION_ERROR',
      });
      expect(Array.isArray(res.json().error.details)).toBe(true);
    });

    it('should treat SQL in filter values as data', async () => {
      const res = await get(
        `/api/v1/customers?filters[name]=${encodeURIComponent("x' OR '1'='1")}`,
        TENANT.acme,
        'acmeAdmin',
      );
      expect(res.statusCode).toBe(200);
      expect(res.json().data.total).toBe(0);
    });
  });

  describe('profile loader and access', () => {
    it('should answer an unknown entity with 404 NOT_FOUND and entityCode', async () => {
      const res = await get('/api/v1/no_such_entity', TENANT.acme, 'acmeAdmin');
      expect(res.statusCode).toBe(404);
      expect(res.json()).toMatchObject({
        success: false,
        entityCode: 'no_such_entity',
        error: { code: 'NOT_FOUND' },
      });
    });

    it('should let a VIEWER read (read:entity)', async () => {
      expect((await get('/api/v1/orders?limit=1', TENANT.acme, 'acmeViewer')).statusCode).toBe(200);
    });

    it('should answer 401 without a token before loading anything', async () => {
      const res = await t.app.inject({
        method: 'GET',
        url: '/api/v1/customers',
        headers: { 'x-tenant-id': authHeaders(TENANT.acme, '')['x-tenant-id'] },
      });
      expect(res.statusCode).toBe(401);
    });
  });

  describe('tenant isolation (reads)', () => {
    it('should never list another tenant’s rows', async () => {
      const res = await get('/api/v1/customers?limit=500', TENANT.globex, 'globexAdmin');
      expect(res.json().data.total).toBe(30);
      const ids = res.json().data.records.map((r: { id: number }) => r.id);
      expect(ids.filter((id: number) => acmeCustomerIds.includes(id))).toEqual([]);
    });

    it('should answer 404 for every acme customer read by id as globex', async () => {
      for (const id of acmeCustomerIds) {
        const res = await get(`/api/v1/customers/${id}`, TENANT.globex, 'globexAdmin');
        expect({ id, status: res.statusCode }).toEqual({ id, status: 404 });
      }
      expect(
        (await get(`/api/v1/customers/${globexCustomerIds[0]}`, TENANT.globex, 'globexAdmin')).statusCode,
      ).toBe(200);
    });

    it('should not find acme rows by filtering on their values as globex', async () => {
      const res = await get(
        '/api/v1/customers?filters[email]=customer1%40acme.example',
        TENANT.globex,
        'globexAdmin',
      );
      expect(res.json().data.total).toBe(0);
    });

    it('should answer style 1 with ten_id of another tenant with 403 (D28)', async () => {
      const res = await get('/api/entity/customers/get?ten_id=1', TENANT.globex, 'globexAdmin');
      expect(res.statusCode).toBe(403);
      const own = await get('/api/entity/customers/get?ten_id=2', TENANT.globex, 'globexAdmin');
      expect(own.statusCode).toBe(200);
      expect(own.json().data).toHaveLength(30);
    });

    it('should serve /api/v1/records?entity= as a plain array of the caller’s rows only (D28)', async () => {
      const res = await get('/api/v1/records?entity=orders&limit=500', TENANT.globex, 'globexAdmin');
      expect(res.statusCode).toBe(200);
      expect(res.json().data).toHaveLength(60);
    });

    it('should not let a token of one tenant read with another tenant’s header', async () => {
      const res = await t.app.inject({
        method: 'GET',
        url: '/api/v1/customers',
        headers: authHeaders(TENANT.acme, token.globexAdmin),
      });
      expect(res.statusCode).toBe(403);
      expect(res.json().error.code).toBe('TENANT_MISMATCH');
    });

    it('should not serve another tenant’s users or roles', async () => {
      const users = (await get('/api/v1/users?limit=500', TENANT.globex, 'globexAdmin')).json().data.records;
      expect(users.map((u: { email_id: string }) => u.email_id)).toEqual(['admin@globex.test']);
      const roles = (await get('/api/v1/roles?limit=500', TENANT.globex, 'globexAdmin')).json().data.records;
      expect(roles.map((r: { code: string }) => r.code).sort()).toEqual(['ADMIN', 'VIEWER']);
    });
  });
});

describe('Entity list cache (D27)', () => {
  let t: TestApp;
  let acme: string;
  let globex: string;

  beforeAll(async () => {
    t = await startTestApp({ label: 'entity-cache' });
    acme = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
    globex = (await signin(t.app, TENANT.globex, 'admin@globex.test')).token;
  });

  afterAll(async () => {
    await t?.close();
  });

  it('should cache a list under the tenant and never serve it to another tenant', async () => {
    const url = '/api/v1/customers?limit=5&sortBy=name';
    const first = (await t.app.inject({ method: 'GET', url, headers: authHeaders(TENANT.acme, acme) })).json()
      .data;
    const cache = t.app.get(CacheService);
    const acmeKeys = await cache.store.keys(cache.keys.entityListAll(TENANT.acme, 'customers'));
    // The page and the total of its filters.
    expect(acmeKeys).toHaveLength(2);
    expect(acmeKeys.filter((k) => k.includes(':total-'))).toHaveLength(1);
    const again = (await t.app.inject({ method: 'GET', url, headers: authHeaders(TENANT.acme, acme) })).json()
      .data;
    expect(again.records).toEqual(first.records);
    const other = (
      await t.app.inject({ method: 'GET', url, headers: authHeaders(TENANT.globex, globex) })
    ).json().data;
    expect(other.total).toBe(30);
    expect(
      other.records
        .map((r: { email: string }) => r.email)
        .every((e: string) => e.endsWith('@globex.example')),
    ).toBe(true);
    expect(await cache.store.keys(cache.keys.entityListAll(TENANT.globex, 'customers'))).toHaveLength(2);
  });

  it('should serve a cached page without querying the database again', async () => {
    const url = '/api/v1/orders?limit=3';
    const cache = t.app.get(CacheService);
    await t.app.inject({ method: 'GET', url, headers: authHeaders(TENANT.acme, acme) });
    const [key] = (await cache.store.keys(cache.keys.entityListAll(TENANT.acme, 'orders'))).filter(
      (k) => !k.includes(':total-'),
    );
    const cached = await cache.getJson<{ total: number }>(key);
    await cache.setJson(key, { ...cached, total: -1 }, 60);
    const res = (await t.app.inject({ method: 'GET', url, headers: authHeaders(TENANT.acme, acme) })).json()
      .data;
    expect(res.total).toBe(-1);
  });

  it('should count a query once for all its pages and sorts, per tenant and filter, until a write', async () => {
    const cache = t.app.get(CacheService);
    await cache.deletePattern(cache.keys.entityListAll(TENANT.acme, 'customers'));
    const list = async (query: string, tenant: string = TENANT.acme, token = acme) => {
      const res = await t.app.inject({
        method: 'GET',
        url: `/api/v1/customers?${query}`,
        headers: authHeaders(tenant, token),
      });
      expect(res.statusCode).toBe(200);
      return res.json().data as { total: number; records: Array<{ id: number; tier: string }> };
    };
    expect((await list('limit=5&filters[tier]=gold')).total).toBeGreaterThan(0);
    const totals = (await cache.store.keys(cache.keys.entityListAll(TENANT.acme, 'customers'))).filter((k) =>
      k.includes(':total-'),
    );
    expect(totals).toHaveLength(1);
    // A planted total shows that other pages and sorts of the same filters read it, not COUNT(*).
    await cache.setText(totals[0], '777', 60);
    expect((await list('limit=5&skip=5&filters[tier]=gold')).total).toBe(777);
    expect((await list('limit=7&sortBy=name&sortOrder=desc&filters[tier]=gold')).total).toBe(777);
    // Other filters, and the other tenant with the same query, are counted for themselves.
    const silver = await list('limit=5&filters[tier]=silver');
    expect(silver.total).not.toBe(777);
    expect(silver.records.every((r) => r.tier === 'silver')).toBe(true);
    const globexPage = await list('limit=5&skip=5&filters[tier]=gold', TENANT.globex, globex);
    expect(globexPage.total).not.toBe(777);
    // A write of the entity drops the pages and the totals together.
    const created = await t.app.inject({
      method: 'POST',
      url: '/api/v1/customers',
      headers: { ...authHeaders(TENANT.acme, acme), 'content-type': 'application/json' },
      payload: { name: 'Counted Once', email: 'counted.once@acme.example', tier: 'gold' },
    });
    expect(created.statusCode).toBe(201);
    const counted = await t.app.inject({
      method: 'GET',
      url: '/api/v1/customers?limit=1&filters[tier]=gold',
      headers: authHeaders(TENANT.acme, acme),
    });
    const after = (await list('limit=5&skip=5&filters[tier]=gold')).total;
    expect(after).toBe(counted.json().data.total);
    expect(after).not.toBe(777);
  });
});

describe('Row-filter variables (D23)', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({ label: 'row-filter-vars' });
  });

  afterAll(async () => {
    await t?.close();
  });

  it('should bind @user variables as data: an e-mail holding SQL matches nothing', async () => {
    const ds = t.app.get(DatabaseService).dataSource;
    const crafted = "x'or'1'='1@acme.test";
    await ds
      .createQueryBuilder()
      .insert()
      .into('app_users')
      .values({
        usr_tenant_id: 1,
        usr_email_id: crafted,
        usr_role_id: 1,
        usr_password_hash: await hashPassword(DEMO_PASSWORD),
        usr_status: 1,
        usr_is_deleted: 0,
      })
      .execute();
    // A copy of `customers` whose profile only shows rows whose e-mail equals the caller's.
    await copyEntityConfig(ds, 'customers', 'own_customers', {
      profile: {
        prf_mode_code: 'READ',
        prf_policy: JSON.stringify({
          tenantPolicy: { mode: 'STRICT' },
          rowFilters: { where: 'email = @user.email' },
        }),
      },
    });
    const crafty = (await signin(t.app, TENANT.acme, crafted)).token;
    const res = await t.app.inject({
      method: 'GET',
      url: '/api/v1/own_customers?limit=500',
      headers: authHeaders(TENANT.acme, crafty),
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().data.total).toBe(0);
    // The same filter with an ordinary matching e-mail finds exactly that row.
    await ds.query(`UPDATE demo_customers SET cus_email = '${crafted.replace(/'/g, "''")}' WHERE cus_id = 1`);
    const again = await t.app.inject({
      method: 'GET',
      url: '/api/v1/own_customers?limit=500&filters[tier]=bronze',
      headers: authHeaders(TENANT.acme, crafty),
    });
    expect(again.json().data.records.map((r: { id: number }) => r.id)).toEqual([1]);
  });
});
