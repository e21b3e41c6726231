import type { DataSource } from 'typeorm';
import { CacheService } from '../../src/cache/cache.service';
import { classifyKey, isSecurityNamespace } from '../../src/catalog/cache-clear';
import {
  CATALOG_RELOAD_ENTITY,
  ProfileCatalogService,
} from '../../src/catalog/profile-catalog.service';
import { CollectionEvent, CollectionEventsService } from '../../src/cache/collection-events';
import { DatabaseService } from '../../src/database/database.service';
import { DEMO_PROFILES } from '../../src/database/seed/demo-data';
import { ReadinessService } from '../../src/health/readiness.service';
import { authHeaders, signin, TENANT, tenantHeader } from '../support/auth';
import { copyEntityConfig } from '../support/entity-fixtures';
import { startTestApp, TestApp, waitFor } from '../support/test-app';

type Json = Record<string, any>;
type Who = 'root' | 'acmeAdmin' | 'globexAdmin' | 'viewer';

const DEMO_CODES = DEMO_PROFILES.map((p) => p.code).sort();
const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/**
 * The start-up profile catalog and the cache routes (spec §3.3, §4.5, D38): `{prefix}:profile:{PRF_CODE}`
 * for every live, active profile, without expiry, before the `cache` readiness flag; the catalog,
 * reload and clear routes with their permissions; the reload on profile and registry writes and on
 * another instance's reload.
 */
describe('Cache catalog and cache routes (spec §4.5, D38)', () => {
  let t: TestApp;
  let ds: DataSource;
  let cache: CacheService;
  let prefix: string;
  const token = {} as Record<Who, string>;

  const headersOf = (who: Who): Record<string, string> =>
    authHeaders(who === 'globexAdmin' ? TENANT.globex : TENANT.acme, token[who]);
  const call = (method: 'GET' | 'POST' | 'DELETE', url: string, who: Who, payload?: unknown) =>
    t.app.inject({
      method,
      url,
      headers: headersOf(who),
      ...(payload === undefined ? {} : { payload: payload as Json }),
    });
  const catalogCodes = async (who: Who = 'root'): Promise<string[]> => {
    const res = await call('GET', '/api/cache/catalog', who);
    expect(res.statusCode).toBe(200);
    return res.json().data.profiles.keys as string[];
  };
  const reload = async (who: Who = 'root'): Promise<Json> => {
    const res = await call('POST', '/api/cache/reload', who);
    expect(res.statusCode).toBe(200);
    return res.json().data as Json;
  };
  const clear = (who: Who, body?: unknown) => call('POST', '/api/v1/admin/cache/clear', who, body);
  const allKeys = async (): Promise<string[]> => (await cache.store.keys(`${prefix}:*`)).sort();
  const namespaceOf = (key: string): string => key.slice(prefix.length + 1).split(':')[0];
  const tenantOf = (key: string): string | undefined => classifyKey(key, prefix)?.tenant;

  let serial = 0;
  async function insertProfile(row: Json): Promise<string> {
    const code = `catalog_probe_${++serial}`;
    await ds
      .createQueryBuilder()
      .insert()
      .into('app_object_profiles')
      .values({
        prf_code: code,
        prf_object_code: 'customers',
        prf_mode_code: 'READ',
        prf_status: 1,
        prf_is_deleted: false,
        ...row,
      })
      .execute();
    return code;
  }
  const retire = (code: string) =>
    ds
      .createQueryBuilder()
      .update('app_object_profiles')
      .set({ prf_is_deleted: true })
      .where('prf_code = :code', { code })
      .execute();

  beforeAll(async () => {
    t = await startTestApp({ label: 'cache_catalog' });
    ds = t.app.get(DatabaseService).dataSource;
    cache = t.app.get(CacheService);
    prefix = cache.keys.prefix;
    token.root = (await signin(t.app, TENANT.acme, 'root@acme.test')).token;
    token.acmeAdmin = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
    token.viewer = (await signin(t.app, TENANT.acme, 'viewer@acme.test')).token;
    token.globexAdmin = (await signin(t.app, TENANT.globex, 'admin@globex.test')).token;
  });

  afterAll(async () => {
    await t?.close();
  });

  describe('start-up (spec §3.3, §4.5)', () => {
    it('should have every active profile in {prefix}:profile:{PRF_CODE} without expiry once ready', async () => {
      expect(t.app.get(ReadinessService).ready).toBe(true);
      expect(await catalogCodes()).toEqual(DEMO_CODES);
      for (const code of DEMO_CODES) {
        const key = `${prefix}:profile:${code}`;
        expect(await cache.store.ttl(key)).toBe(-1);
        expect(await cache.getJson(key)).toMatchObject({ code, tenantId: null, objectCode: code });
      }
    });
  });

  describe('GET /api/cache/catalog', () => {
    it('should answer {profiles: {count, keys}} to admin:system and admin:cache holders', async () => {
      for (const who of ['root', 'acmeAdmin'] as const) {
        const res = await call('GET', '/api/cache/catalog', who);
        expect(res.statusCode).toBe(200);
        expect(res.json().data).toEqual({ profiles: { count: DEMO_CODES.length, keys: DEMO_CODES } });
      }
    });

    it("should show a tenant's administrator the system-wide profiles and its own tenant's only", async () => {
      const globexCode = await insertProfile({ prf_tenant_id: 2 });
      const acmeCode = await insertProfile({ prf_tenant_id: 1 });
      try {
        await reload();
        expect(await catalogCodes('root')).toEqual([...DEMO_CODES, globexCode, acmeCode].sort());
        expect(await catalogCodes('acmeAdmin')).toEqual([...DEMO_CODES, acmeCode].sort());
        expect(await catalogCodes('globexAdmin')).toEqual([...DEMO_CODES, globexCode].sort());
      } finally {
        await retire(globexCode);
        await retire(acmeCode);
        await reload();
      }
      expect(await catalogCodes()).toEqual(DEMO_CODES);
    });
  });

  describe('POST /api/cache/reload', () => {
    it('should answer {profiles: {count, keys, failed}, reloadedAt}', async () => {
      const before = Date.now();
      const data = await reload();
      expect(data).toEqual({
        profiles: { count: DEMO_CODES.length, keys: DEMO_CODES, failed: [] },
        reloadedAt: expect.stringMatching(ISO_8601),
      });
      expect(Date.parse(data.reloadedAt)).toBeGreaterThanOrEqual(before - 5);
    });

    it('should restore a catalog key deleted from the store', async () => {
      await cache.delete([`${prefix}:profile:orders`]);
      expect(await catalogCodes()).toEqual(DEMO_CODES.filter((c) => c !== 'orders'));
      expect((await reload()).profiles.keys).toEqual(DEMO_CODES);
      expect(await catalogCodes()).toEqual(DEMO_CODES);
    });

    it('should drop the keys of profiles no longer active and leave out inactive or deleted ones', async () => {
      const code = await insertProfile({});
      const inactive = await insertProfile({ prf_status: 0 });
      const deleted = await insertProfile({ prf_is_deleted: true });
      expect((await reload()).profiles.keys).toEqual([...DEMO_CODES, code].sort());
      await retire(code);
      expect((await reload()).profiles.keys).toEqual(DEMO_CODES);
      expect(await cache.store.get(`${prefix}:profile:${code}`)).toBeNull();
      expect([inactive, deleted].some((c) => DEMO_CODES.includes(c))).toBe(false);
    });

    it('should load the other profiles and report the ones that cannot be read (partial outcome)', async () => {
      const broken = await insertProfile({ prf_policy: '{not json' });
      const badPolicy = await insertProfile({
        prf_policy: JSON.stringify({ tenantPolicy: { mode: 'NOPE' } }),
      });
      try {
        const data = await reload();
        expect(data.profiles.keys).toEqual(DEMO_CODES);
        expect(data.profiles.failed).toEqual([
          { code: broken, tenantId: null, stage: 'serialize', reason: expect.stringContaining('prf_policy') },
          { code: badPolicy, tenantId: null, stage: 'serialize', reason: expect.any(String) },
        ]);
        expect(await catalogCodes()).toEqual(DEMO_CODES);
      } finally {
        await retire(broken);
        await retire(badPolicy);
      }
      expect((await reload()).profiles.failed).toEqual([]);
    });

    it('should tell the other instances to reload (a collection event on the same channel)', async () => {
      const other = new CollectionEventsService(cache);
      const heard: CollectionEvent[] = [];
      other.subscribe((event) => {
        heard.push(event);
      });
      try {
        await waitFor(async () => other.listening, 10000, 10);
        await reload('acmeAdmin');
        await waitFor(async () => heard.some((e) => e.entityCode === CATALOG_RELOAD_ENTITY), 10000, 10);
        expect(heard.find((e) => e.entityCode === CATALOG_RELOAD_ENTITY)).toMatchObject({
          type: 'updated',
          tenantId: TENANT.acme,
          id: 0,
        });
      } finally {
        await other.onApplicationShutdown();
      }
    });

    it("should reload when another instance's reload is heard", async () => {
      await cache.delete([`${prefix}:profile:users`]);
      const other = new CollectionEventsService(cache);
      try {
        await other.publish({
          type: 'updated',
          entityCode: CATALOG_RELOAD_ENTITY,
          tenantId: TENANT.globex,
          id: 0,
          at: new Date().toISOString(),
        });
        await waitFor(async () => (await cache.store.get(`${prefix}:profile:users`)) !== null, 10000, 10);
      } finally {
        await other.onApplicationShutdown();
      }
    });

    it('should drop the profile loader entries with the reload', async () => {
      expect((await call('GET', '/api/v1/customers?limit=1', 'acmeAdmin')).statusCode).toBe(200);
      expect(await cache.store.keys(`${prefix}:prf:*`)).not.toEqual([]);
      await reload();
      expect(await cache.store.keys(`${prefix}:prf:*`)).toEqual([]);
    });
  });

  describe('profile and registry writes through the entity routes (spec §4.5)', () => {
    beforeAll(async () => {
      // object_profiles: an entity over app_object_profiles, registered by configuration only.
      await copyEntityConfig(ds, 'orders', 'object_profiles', {
        registry: {
          obj_description: 'Object profiles',
          obj_name: 'Object profiles',
          obj_payload_table: 'app_object_profiles',
          obj_payload_object_name: 'app_object_profiles',
          obj_payload_identifier: 'prf_id',
          obj_db_key: 'prf_id',
          obj_payload_column_prefix: 'prf_',
          obj_add_dtls: JSON.stringify({ maintainedBy: 'tenant' }),
          obj_payload: JSON.stringify({
            fields: [
              { name: 'id', column: 'prf_id', type: 'integer', readOnly: true },
              { name: 'code', column: 'prf_code', type: 'text', required: true, maxLength: 100 },
              {
                name: 'object_code',
                column: 'prf_object_code',
                type: 'text',
                required: true,
                maxLength: 100,
              },
              { name: 'mode_code', column: 'prf_mode_code', type: 'text', required: true, maxLength: 20 },
              { name: 'policy', column: 'prf_policy', type: 'json' },
            ],
            relations: [],
          }),
        },
        profile: {
          prf_mode_code: 'FULL',
          prf_policy: JSON.stringify({
            tenantPolicy: { mode: 'STRICT' },
            permissions: { read: true, write: true, delete: true, export: true, approve: true },
          }),
        },
      });
      // Registry rows written to the database directly are picked up by a reload.
      await reload();
    });

    it('should reload the catalog after a profile is created and after it is deleted', async () => {
      const res = await call('POST', '/api/v1/object_profiles', 'acmeAdmin', {
        code: 'acme_written_profile',
        object_code: 'customers',
        mode_code: 'READ',
        policy: { tenantPolicy: { mode: 'STRICT' } },
      });
      expect(res.statusCode).toBe(201);
      const id = res.json().data.id as number;
      await waitFor(
        async () => (await catalogCodes('acmeAdmin')).includes('acme_written_profile'),
        10000,
        20,
      );
      expect(await cache.getJson(`${prefix}:profile:acme_written_profile`)).toMatchObject({
        tenantId: TENANT.acme,
        mode: 'READ',
      });
      expect(await catalogCodes('globexAdmin')).not.toContain('acme_written_profile');

      expect((await call('DELETE', `/api/v1/object_profiles/${id}`, 'acmeAdmin')).statusCode).toBe(200);
      await waitFor(async () => !(await catalogCodes()).includes('acme_written_profile'), 10000, 20);
    });

    it("should reload on another instance's collection event of a profile entity", async () => {
      await cache.delete([`${prefix}:profile:roles`]);
      const other = new CollectionEventsService(cache);
      try {
        await other.publish({
          type: 'updated',
          entityCode: 'object_profiles',
          tenantId: TENANT.acme,
          id: 1,
          at: new Date().toISOString(),
        });
        await waitFor(async () => (await cache.store.get(`${prefix}:profile:roles`)) !== null, 10000, 10);
      } finally {
        await other.onApplicationShutdown();
      }
    });

    it('should not reload on events of other entities', async () => {
      const catalog = t.app.get(ProfileCatalogService);
      expect(catalog.isSourceEntity('object_profiles')).toBe(true);
      expect(catalog.isSourceEntity(CATALOG_RELOAD_ENTITY)).toBe(true);
      expect(catalog.isSourceEntity('customers')).toBe(false);
      const spy = jest.spyOn(catalog, 'reload');
      try {
        const res = await call('POST', '/api/v1/customers', 'acmeAdmin', {
          name: 'Catalog Bystander',
          email: 'catalog-bystander@acme.example',
        });
        expect(res.statusCode).toBe(201);
        await new Promise((r) => setTimeout(r, 200));
        expect(spy).not.toHaveBeenCalled();
      } finally {
        spy.mockRestore();
      }
    });
  });

  describe('POST /api/v1/admin/cache/clear', () => {
    /**
     * One key of each cache namespace for tenants 1 and 2, and one of each security namespace. The
     * tenant rows and user states (`tenant`, `user`) are the guards' own, written by the requests.
     */
    const SEEDED = (p: string): string[] => [
      ...['1', '2'].flatMap((tn) => [
        `${p}:prf:${tn}:customers`,
        `${p}:registry:${tn}:customers`,
        `${p}:page:${tn}:customer_form`,
        `${p}:workflow:${tn}:customer_onboarding`,
        `${p}:dataview:${tn}:7`,
        `${p}:dataview-code:${tn}:customers_grid`,
        `${p}:navigation:${tn}:main`,
        `${p}:valueset:${tn}:customer_tiers`,
        `${p}:config:customers:${tn}`,
        `${p}:list:${tn}:customers:abc123`,
        `${p}:rate:${tn}`,
        `${p}:otp:${tn}:emailhash`,
        `${p}:otp:${tn}:emailhash:attempts:0123456789abcdef`,
        `${p}:signin-fail-addr:${tn}:emailhash:addrhash`,
        `${p}:signin-fail-acct:${tn}:emailhash`,
      ]),
      `${p}:revoked:some-jti`,
      `${p}:signup-session:sessionhash`,
      `${p}:rate-public:addr`,
      `${p}:rate-fail-addr:addr`,
    ];
    const SCOPE_NAMESPACES: Record<string, string[] | 'all'> = {
      profiles: ['profile', 'prf'],
      config: [
        'registry',
        'page',
        'workflow',
        'dataview',
        'dataview-code',
        'navigation',
        'valueset',
        'config',
      ],
      lists: ['list'],
      all: 'all',
    };
    const inScope = (scope: string, key: string): boolean => {
      const ns = namespaceOf(key);
      if (isSecurityNamespace(ns)) return false;
      const names = SCOPE_NAMESPACES[scope];
      return names === 'all' || names.includes(ns);
    };

    let acmeProfile: string;
    beforeAll(async () => {
      acmeProfile = await insertProfile({ prf_tenant_id: 1 });
    });
    afterAll(async () => {
      await retire(acmeProfile);
      await reload();
    });

    /** Seeds the keys, refreshes the catalog and the callers' guard entries, and lists the store. */
    async function prepare(): Promise<string[]> {
      await reload();
      for (const key of SEEDED(prefix)) await cache.store.set(key, '"x"', 600);
      // Real security state: a revoked token (logout) and a failed sign-in.
      const spare = (await signin(t.app, TENANT.acme, 'viewer@acme.test')).token;
      await t.app.inject({
        method: 'POST',
        url: '/api/v1/auth/logout',
        headers: authHeaders(TENANT.acme, spare),
      });
      await t.app.inject({
        method: 'POST',
        url: '/api/v1/auth/signin',
        headers: { 'x-tenant-id': tenantHeader(TENANT.acme) },
        payload: { email_id: 'nobody@acme.test', password: 'wrong-password' },
      });
      // The callers' tenant rows and user states are cached before the listing, not during the clear.
      for (const who of ['root', 'acmeAdmin', 'globexAdmin'] as const) await catalogCodes(who);
      return allKeys();
    }

    it.each(['profiles', 'config', 'lists', 'all'])(
      'should remove exactly the keys of scope %s, of every tenant, for a system administrator',
      async (scope) => {
        const before = await prepare();
        expect(before.filter((k) => namespaceOf(k) === 'revoked').length).toBeGreaterThanOrEqual(2);
        if (cache.kind === 'redis')
          expect(before.some((k) => namespaceOf(k).startsWith('signin'))).toBe(true);
        const res = await clear('root', { scope });
        expect(res.statusCode).toBe(200);
        const after = await allKeys();
        const removed = before.filter((k) => !after.includes(k));
        expect(removed).toEqual(before.filter((k) => inScope(scope, k)));
        expect(res.json().data).toEqual({ cleared: removed.length });
        for (const key of before.filter((k) => isSecurityNamespace(namespaceOf(k))))
          expect(after).toContain(key);
      },
    );

    it('should default to scope all', async () => {
      const before = await prepare();
      const res = await clear('root');
      expect(res.statusCode).toBe(200);
      const after = await allKeys();
      expect(before.filter((k) => !after.includes(k))).toEqual(before.filter((k) => inScope('all', k)));
    });

    it("should remove only its own tenant's keys for a tenant's administrator (admin:cache via *:*)", async () => {
      const before = await prepare();
      const res = await clear('acmeAdmin', { scope: 'all' });
      expect(res.statusCode).toBe(200);
      const after = await allKeys();
      const removed = before.filter((k) => !after.includes(k));
      // Keys of tenant 1 and its own profile's catalog key; never tenant 2's or the system catalog.
      const own = `${prefix}:profile:${acmeProfile}`;
      expect(removed).toEqual(before.filter((k) => k === own || (inScope('all', k) && tenantOf(k) === '1')));
      expect(removed).toContain(own);
      expect(removed).toContain(`${prefix}:list:1:customers:abc123`);
      for (const code of DEMO_CODES) expect(after).toContain(`${prefix}:profile:${code}`);
      expect(removed.every((k) => !isSecurityNamespace(namespaceOf(k)))).toBe(true);
      expect(res.json().data).toEqual({ cleared: removed.length });
    });

    it("should let a tenant's administrator name its own tenant, and forbid another's (403)", async () => {
      await prepare();
      expect((await clear('acmeAdmin', { scope: 'lists', tenantId: TENANT.acme })).statusCode).toBe(200);
      expect(await cache.store.get(`${prefix}:list:1:customers:abc123`)).toBeNull();
      const res = await clear('acmeAdmin', { scope: 'lists', tenantId: TENANT.globex });
      expect(res.statusCode).toBe(403);
      expect(res.json().error.code).toBe('FORBIDDEN');
      expect(await cache.store.get(`${prefix}:list:2:customers:abc123`)).not.toBeNull();
    });

    it("should clear one other tenant's keys for a system administrator naming it", async () => {
      const before = await prepare();
      const res = await clear('root', { scope: 'config', tenantId: Number(TENANT.globex) });
      expect(res.statusCode).toBe(200);
      const after = await allKeys();
      const removed = before.filter((k) => !after.includes(k));
      expect(removed).toEqual(before.filter((k) => inScope('config', k) && tenantOf(k) === '2'));
      expect(removed.length).toBeGreaterThanOrEqual(8);
    });

    it.each([
      [{ scope: 'everything' }, 'scope'],
      [{ tenantId: 'abc' }, 'tenantId'],
      [{ tenantId: true }, 'tenantId'],
      [{ scope: 'all', extra: 1 }, 'extra'],
    ])('should answer 400 VALIDATION_ERROR to %j', async (body, field) => {
      const res = await clear('root', body);
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toMatchObject({
        code: 'VALIDATION_ERROR',
        details: [expect.objectContaining({ field })],
      });
    });
  });

  describe('protection', () => {
    const ROUTES = [
      ['GET', '/api/cache/catalog'],
      ['POST', '/api/cache/reload'],
      ['POST', '/api/v1/admin/cache/clear'],
    ] as const;

    it.each(ROUTES)(
      '%s %s should answer 403 to a user without admin:cache or admin:system',
      async (method, url) => {
        const res = await call(method, url, 'viewer', method === 'POST' ? {} : undefined);
        expect(res.statusCode).toBe(403);
        expect(res.json().error.code).toBe('FORBIDDEN');
      },
    );

    it.each(ROUTES)('%s %s should answer 401 without a token', async (method, url) => {
      const res = await t.app.inject({ method, url, headers: { 'x-tenant-id': tenantHeader(TENANT.acme) } });
      expect(res.statusCode).toBe(401);
    });

    it('should not clear anything for a forbidden caller', async () => {
      await cache.store.set(`${prefix}:list:1:customers:kept`, '"x"', 600);
      expect((await clear('viewer', { scope: 'lists' })).statusCode).toBe(403);
      expect(await cache.store.get(`${prefix}:list:1:customers:kept`)).not.toBeNull();
    });
  });
});
