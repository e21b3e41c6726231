import type { DataSource } from 'typeorm';
import { CacheService } from '../../src/cache/cache.service';
import {
  CONFIG_NEGATIVE_TTL_S,
  ConfigDeliveryService,
} from '../../src/config-delivery/config-delivery.service';
import type { ConfigKind } from '../../src/config-delivery/config-kinds';
import { DatabaseService } from '../../src/database/database.service';
import { toDbTimestamp } from '../../src/database/dialect/timestamps';
import { DEMO_NAVIGATIONS, DEMO_PAGES, DEMO_VALUE_SETS } from '../../src/database/seed/demo-data';
import { authHeaders, signin, TENANT, tenantHeader } from '../support/auth';
import { startTestApp, TestApp } from '../support/test-app';

type Rec = Record<string, any>;

interface Route {
  kind: ConfigKind;
  path: string;
  table: string;
  p: string;
  cacheType: 'page' | 'navigation' | 'valueset';
  /** The key of the served JSON, and a row of that kind with a JSON column of that shape. */
  bodyKey: 'schema' | 'structure' | 'values';
  bodyColumn: string;
  row: (code: string, tag: string) => Rec;
  tagOf: (data: Rec) => unknown;
}

const ROUTES: readonly Route[] = [
  {
    kind: 'page',
    path: 'pages',
    table: 'app_page_configs',
    p: 'pgc',
    cacheType: 'page',
    bodyKey: 'schema',
    bodyColumn: 'pgc_schema',
    row: (code, tag) => ({
      pgc_code: code,
      pgc_name: tag,
      pgc_type: 'form',
      pgc_object_code: 'customers',
      pgc_schema: JSON.stringify({ sections: [{ name: tag, fields: [] }] }),
    }),
    tagOf: (data): unknown => data.name,
  },
  {
    kind: 'navigation',
    path: 'navigation',
    table: 'app_navigation_configs',
    p: 'nav',
    cacheType: 'navigation',
    bodyKey: 'structure',
    bodyColumn: 'nav_structure',
    row: (code, tag) => ({ nav_code: code, nav_structure: JSON.stringify({ menu: [{ id: tag }] }) }),
    tagOf: (data): unknown => data.structure?.menu?.[0]?.id,
  },
  {
    kind: 'valueSet',
    path: 'value-sets',
    table: 'app_value_sets',
    p: 'vs',
    cacheType: 'valueset',
    bodyKey: 'values',
    bodyColumn: 'vs_values',
    row: (code, tag) => ({
      vs_code: code,
      vs_description: tag,
      vs_values: JSON.stringify([{ code: 'a', label: tag, description: '' }]),
    }),
    tagOf: (data): unknown => data.name,
  },
];

/**
 * Configuration delivery for SPA clients (D41, D50): `GET /api/v1/config/{pages|navigation|value-sets}/{code}`.
 * The tenant's row over the system row, live and active rows only, never another tenant's; JSON
 * parsed; a version that changes with the row, as ETag with 304 on If-None-Match; cached per tenant
 * with the TTLs of spec §8.
 */
describe('Configuration delivery (D41, D50)', () => {
  let t: TestApp;
  let ds: DataSource;
  let cache: CacheService;
  let service: ConfigDeliveryService;
  const token: Record<string, string> = {};

  const get = (
    url: string,
    who: 'acme' | 'globex' | 'viewer' = 'acme',
    headers: Record<string, string> = {},
  ) =>
    t.app.inject({
      method: 'GET',
      url: `/api/v1/config/${url}`,
      headers: { ...authHeaders(who === 'globex' ? TENANT.globex : TENANT.acme, token[who]), ...headers },
    });

  const insert = async (route: Route, row: Rec): Promise<number> => {
    const p = route.p;
    await ds
      .createQueryBuilder()
      .insert()
      .into(route.table)
      .values({
        [`${p}_status`]: 1,
        [`${p}_is_deleted`]: 0,
        [`${p}_last_modified`]: toDbTimestamp(Date.now()),
        ...row,
      })
      .execute();
    const [last] = await ds
      .createQueryBuilder()
      .select(`c.${p}_id`, 'id')
      .from(route.table, 'c')
      .orderBy(`c.${p}_id`, 'DESC')
      .limit(1)
      .getRawMany<{ id: unknown }>();
    return Number(last.id);
  };
  const update = (route: Route, id: number, set: Rec) =>
    ds.createQueryBuilder().update(route.table).set(set).where(`${route.p}_id = :id`, { id }).execute();
  /** What the cache holds for a kind goes: the next read sees the database. */
  const dropCache = (route: Route) => cache.deletePattern(`${cache.keys.prefix}:${route.cacheType}:*`);

  beforeAll(async () => {
    t = await startTestApp({ label: 'config_delivery' });
    ds = t.app.get(DatabaseService).dataSource;
    cache = t.app.get(CacheService);
    service = t.app.get(ConfigDeliveryService);
    token.acme = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
    token.viewer = (await signin(t.app, TENANT.acme, 'viewer@acme.test')).token;
    token.globex = (await signin(t.app, TENANT.globex, 'admin@globex.test')).token;
  });

  afterAll(async () => {
    await t?.close();
  });

  describe('the seeded system rows', () => {
    it('should answer the page customer_form of docs/demo-data.md with its schema parsed', async () => {
      const res = await get('pages/customer_form');
      expect(res.statusCode).toBe(200);
      const body = res.json();
      expect(Object.keys(body)).toEqual(['success', 'data', 'meta']);
      const [demo] = DEMO_PAGES;
      expect(body.data).toEqual({
        code: 'customer_form',
        name: demo.name,
        type: 'form',
        objectCode: 'customers',
        schema: demo.schema,
        version: expect.stringMatching(/^[A-Za-z0-9_-]{22}$/),
      });
      expect(res.headers.etag).toBe(`"${body.data.version}"`);
      expect(res.headers['cache-control']).toBe('private, no-cache');
      const [section] = body.data.schema.sections;
      expect(section.name).toBe('Customer');
      expect(
        (section.fields as Rec[]).map((f) => [f.fieldCode, f.fieldType, f.isRequired] as unknown[]),
      ).toEqual([
        ['name', 'text', true],
        ['email', 'email', true],
        ['tier', 'select', false],
        ['credit_limit', 'numeric', false],
      ]);
      for (const f of section.fields)
        expect(Object.keys(f).sort()).toEqual(
          ['fieldCode', 'fieldName', 'fieldType', 'isRequired', 'options', 'validation'].sort(),
        );
      expect(section.fields[0].validation).toEqual({ maxLength: 100 });
      expect(section.fields[2].options).toEqual([
        { value: 'bronze', label: 'Bronze' },
        { value: 'silver', label: 'Silver' },
        { value: 'gold', label: 'Gold' },
      ]);
    });

    it('should answer the navigation main with its structure parsed', async () => {
      const res = await get('navigation/main');
      expect(res.statusCode).toBe(200);
      expect(res.json().data).toEqual({
        code: 'main',
        name: 'main',
        structure: DEMO_NAVIGATIONS[0].structure,
        version: expect.any(String),
      });
    });

    it.each(DEMO_VALUE_SETS.map((v) => [v.code, v] as const))(
      'should answer the value set %s with its values parsed',
      async (code, demo) => {
        const res = await get(`value-sets/${code}`);
        expect(res.statusCode).toBe(200);
        expect(res.json().data).toEqual({
          code,
          name: demo.description,
          values: demo.values,
          version: expect.any(String),
        });
      },
    );

    it('should serve every signed-in user of the tenant, whatever the role', async () => {
      for (const url of ['pages/customer_form', 'navigation/main', 'value-sets/order_status'])
        expect({ url, status: (await get(url, 'viewer')).statusCode }).toEqual({ url, status: 200 });
    });

    it('should cache each answer per tenant with the TTL of spec §8', async () => {
      const ttls = [
        ['page', 'customer_form', 5 * 3600],
        ['navigation', 'main', 8 * 3600],
        ['valueset', 'customer_tiers', 12 * 3600],
      ] as const;
      for (const [type, code, ttl] of ttls) {
        const key = cache.keys.config(type, TENANT.acme, code);
        expect(await cache.getJson<Rec>(key)).toMatchObject({ answer: { code } });
        const left = await cache.store.ttl(key);
        expect({ type, ok: left > ttl - 60 && left <= ttl }).toEqual({ type, ok: true });
      }
    });
  });

  describe('conditional requests', () => {
    it('should answer 304 without a body when If-None-Match names the current ETag', async () => {
      const etag = (await get('pages/customer_form')).headers.etag as string;
      for (const header of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
        const res = await get('pages/customer_form', 'acme', { 'if-none-match': header });
        expect({ header, status: res.statusCode, body: res.body, etag: res.headers.etag }).toEqual({
          header,
          status: 304,
          body: '',
          etag,
        });
      }
      expect((await get('pages/customer_form', 'acme', { 'if-none-match': '"stale"' })).statusCode).toBe(200);
      // The same system row for another tenant: the same version.
      expect((await get('pages/customer_form', 'globex')).headers.etag).toBe(etag);
      expect((await get('value-sets/customer_tiers')).headers.etag).not.toBe(etag);
    });
  });

  describe.each(ROUTES.map((r) => [r.path, r] as const))('/api/v1/config/%s', (path, route) => {
    const p = route.p;

    it('should prefer the tenant’s row over the system row, for that tenant only', async () => {
      const code = `layered_${p}`;
      await insert(route, { [`${p}_tenant_id`]: null, ...route.row(code, 'system') });
      const own = await insert(route, { [`${p}_tenant_id`]: 1, ...route.row(code, 'acme') });
      await insert(route, { [`${p}_tenant_id`]: 1, ...route.row(code, 'acme later') });
      await insert(route, { [`${p}_tenant_id`]: 1, ...route.row(code.toUpperCase(), 'another code') });
      const tag = async (who: 'acme' | 'globex' = 'acme', c = code): Promise<unknown> => {
        const res = await get(`${path}/${c}`, who);
        return res.statusCode === 200 ? route.tagOf(res.json().data) : res.statusCode;
      };
      expect(await tag()).toBe('acme');
      expect(await tag('globex')).toBe('system');
      expect(await tag('acme', code.toUpperCase())).toBe('another code');
      expect(await tag('globex', code.toUpperCase())).toBe(404);

      // Another tenant's own row is never served to acme.
      const globexOnly = `globex_only_${p}`;
      await insert(route, { [`${p}_tenant_id`]: 2, ...route.row(globexOnly, 'globex') });
      expect(await tag('globex', globexOnly)).toBe('globex');
      expect(await tag('acme', globexOnly)).toBe(404);

      // Deleted and inactive rows are ignored.
      for (const [set, expected] of [
        [{ [`${p}_is_deleted`]: 1 }, 'acme later'],
        [{ [`${p}_is_deleted`]: 0 }, 'acme'],
        [{ [`${p}_status`]: 0 }, 'acme later'],
        [{ [`${p}_status`]: -1 }, 'acme later'],
        [{ [`${p}_status`]: 1 }, 'acme'],
      ] as const) {
        await update(route, own, set);
        await dropCache(route);
        expect({ set, tag: await tag() }).toEqual({ set, tag: expected });
      }
    });

    it('should answer 404 NOT_FOUND when every row of the code is deleted or inactive', async () => {
      const code = `hidden_${p}`;
      const deleted = await insert(route, { [`${p}_tenant_id`]: null, ...route.row(code, 'x') });
      await update(route, deleted, { [`${p}_is_deleted`]: 1 });
      await insert(route, { [`${p}_tenant_id`]: 1, [`${p}_status`]: 0, ...route.row(code, 'y') });
      const res = await get(`${path}/${code}`);
      expect([res.statusCode, res.json().error.code]).toEqual([404, 'NOT_FOUND']);
    });

    it('should change the version when the row changes, once its cached answer is dropped', async () => {
      const code = `versioned_${p}`;
      const id = await insert(route, { [`${p}_tenant_id`]: 1, ...route.row(code, 'v1') });
      const first = await get(`${path}/${code}`);
      expect(route.tagOf(first.json().data)).toBe('v1');
      const etag = first.headers.etag as string;

      await update(route, id, {
        ...route.row(code, 'v2'),
        [`${p}_last_modified`]: toDbTimestamp(Date.now() + 1000),
      });
      // Served from the cache until the key expires or is dropped (the tables are not entities).
      expect((await get(`${path}/${code}`, 'acme', { 'if-none-match': etag })).statusCode).toBe(304);
      expect(await service.invalidate(route.kind, code, TENANT.acme)).toBe(1);

      const second = await get(`${path}/${code}`, 'acme', { 'if-none-match': etag });
      expect(second.statusCode).toBe(200);
      expect(route.tagOf(second.json().data)).toBe('v2');
      expect(second.headers.etag).not.toBe(etag);
      expect(second.json().data.version).not.toBe(first.json().data.version);

      // The same content with only a new last-modified instant is a new version too.
      await update(route, id, { [`${p}_last_modified`]: toDbTimestamp(Date.now() + 5000) });
      await service.invalidate(route.kind, code);
      const third = await get(`${path}/${code}`);
      expect(third.headers.etag).not.toBe(second.headers.etag);
    });

    it('should remember an unknown code as unknown for a minute only', async () => {
      const code = `late_${p}`;
      expect((await get(`${path}/${code}`)).statusCode).toBe(404);
      const key = cache.keys.config(route.cacheType, TENANT.acme, code);
      expect(await cache.getJson(key)).toEqual({ answer: null });
      expect(await cache.store.ttl(key)).toBeLessThanOrEqual(CONFIG_NEGATIVE_TTL_S);
      await insert(route, { [`${p}_tenant_id`]: null, ...route.row(code, 'late') });
      await service.invalidate(route.kind, code);
      expect(route.tagOf((await get(`${path}/${code}`)).json().data)).toBe('late');
    });

    it('should treat a row whose JSON column has the wrong shape as not found', async () => {
      const code = `broken_${p}`;
      const body = route.bodyKey === 'values' ? '{"a":1}' : '[1, 2]';
      await insert(route, { [`${p}_tenant_id`]: 1, ...route.row(code, 'x'), [route.bodyColumn]: body });
      expect((await get(`${path}/${code}`)).statusCode).toBe(404);
    });

    it.each(['no_such_code', 'Customer_Form'])('should answer 404 NOT_FOUND for %s', async (code) => {
      const res = await get(`${path}/${code}`);
      expect([res.statusCode, res.json().error.code]).toEqual([404, 'NOT_FOUND']);
    });

    it.each(['a%20b', 'a*b', 'a:b', "a'b", '%C3%A9', 'a%00'])(
      'should answer 400 VALIDATION_ERROR for the code %s',
      async (code) => {
        const res = await get(`${path}/${code}`);
        expect([res.statusCode, res.json().error.code, res.json().error.details]).toEqual([
          400,
          'VALIDATION_ERROR',
          [{ field: 'code', error: expect.any(String) }],
        ]);
      },
    );

    it('should answer 401 without a token and 400 without the tenant header', async () => {
      const noToken = await t.app.inject({
        method: 'GET',
        url: `/api/v1/config/${path}/main`,
        headers: { 'x-tenant-id': tenantHeader(TENANT.acme) },
      });
      expect([noToken.statusCode, noToken.json().error.code]).toEqual([401, 'UNAUTHORIZED']);
      const noTenant = await t.app.inject({
        method: 'GET',
        url: `/api/v1/config/${path}/main`,
        headers: { authorization: `Bearer ${token.acme}` },
      });
      expect(noTenant.statusCode).toBe(400);
    });

    it('should refuse a token of another tenant', async () => {
      const res = await t.app.inject({
        method: 'GET',
        url: `/api/v1/config/${path}/main`,
        headers: authHeaders(TENANT.acme, token.globex),
      });
      expect(res.statusCode).toBe(403);
    });
  });
});
