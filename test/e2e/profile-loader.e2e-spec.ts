import { httpStatusOf } from '../../src/common/errors/error-codes';
import { ExecutionContext, Logger } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { CacheService } from '../../src/cache/cache.service';
import { AppError } from '../../src/common/errors/app-error';
import { DatabaseService } from '../../src/database/database.service';
import { ProfileLoaderGuard } from '../../src/entity/entity.guards';
import {
  LoadedProfile,
  ProfileLoaderService,
  ProfileRequest,
} from '../../src/profile/profile-loader.service';
import { ProfileRepository } from '../../src/profile/profile.repository';
import { RegistryService } from '../../src/registry/registry.service';
import { authHeaders, signin, TENANT } from '../support/auth';
import { startTestApp, TestApp } from '../support/test-app';

const ALL = { read: true, write: true, delete: true, export: true, approve: true };
const NO_READ = { ...ALL, read: false };

/**
 * Profile loader rules 1-11 of spec §4.3 (with D20), one test per rule. Every test that changes
 * configuration rows works on entity codes of its own (copies of the demo `customers` entity over
 * demo_customers), so the demo rows stay as seeded.
 */
describe('Profile loader (spec §4.3 rules 1-11, D20)', () => {
  let t: TestApp;
  let loader: ProfileLoaderService;
  let cache: CacheService;
  let registry: RegistryService;
  const token: Record<string, string> = {};
  /** The demo customers registry row's payload, reused by every test entity. */
  let customersPayload: string;

  beforeAll(async () => {
    t = await startTestApp({ label: 'profile-loader' });
    loader = t.app.get(ProfileLoaderService);
    cache = t.app.get(CacheService);
    registry = t.app.get(RegistryService);
    token.acme = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
    token.globex = (await signin(t.app, TENANT.globex, 'admin@globex.test')).token;
    const row = await ds()
      .createQueryBuilder()
      .select('r.obj_payload', 'payload')
      .from('app_object_registries', 'r')
      .where('r.obj_code = :code AND r.obj_tenant_id IS NULL', { code: 'customers' })
      .getRawOne<{ payload: unknown }>();
    customersPayload = typeof row?.payload === 'string' ? row.payload : JSON.stringify(row?.payload);
  });

  afterAll(async () => {
    await t?.close();
  });

  const ds = () => t.app.get(DatabaseService).dataSource;
  const newCode = (label: string) => `plt_${label}_${randomBytes(3).toString('hex')}`;
  const key = (tenantId: string, code: string) => cache.keys.profileRequest(tenantId, code);
  const get = (code: string, tenant: string, who: string) =>
    t.app.inject({ method: 'GET', url: `/api/v1/${code}?limit=1`, headers: authHeaders(tenant, token[who]) });

  /** A registry row (a copy of `customers` under another code); booleans bound as 0/1. */
  async function insertEntity(
    code: string,
    opts: { status?: number; deleted?: boolean; tenantId?: number | null } = {},
  ): Promise<void> {
    const columns = [
      'obj_tenant_id',
      'obj_code',
      'obj_description',
      'obj_type_code',
      'obj_connection_code',
      'obj_payload',
      'obj_payload_object_name',
      'obj_payload_identifier',
      'obj_payload_column_prefix',
      'obj_payload_table',
      'obj_name',
      'obj_db_key',
      'obj_status',
      'obj_is_deleted',
      'obj_add_dtls',
    ];
    await ds()
      .createQueryBuilder()
      .insert()
      .into('app_object_registries', columns)
      .values({
        obj_tenant_id: opts.tenantId ?? null,
        obj_code: code,
        obj_description: `Profile loader test ${code}`,
        obj_type_code: 'TABLE',
        obj_connection_code: 'default',
        obj_payload: customersPayload,
        obj_payload_object_name: 'demo_customers',
        obj_payload_identifier: 'cus_id',
        obj_payload_column_prefix: 'cus_',
        obj_payload_table: 'demo_customers',
        obj_name: code,
        obj_db_key: 'cus_id',
        obj_status: opts.status ?? 1,
        obj_is_deleted: opts.deleted ? 1 : 0,
        obj_add_dtls: JSON.stringify({ maintainedBy: 'tenant' }),
      })
      .execute();
  }

  /** A profile row of `objectCode`; returns its prf_id. */
  async function insertProfile(
    objectCode: string,
    opts: {
      tenantId?: number | null;
      permissions?: Record<string, boolean>;
      mode?: string;
      status?: number;
      deleted?: boolean;
      projection?: unknown;
    } = {},
  ): Promise<number> {
    const prfCode = `${objectCode}_${randomBytes(3).toString('hex')}`;
    const columns = [
      'prf_tenant_id',
      'prf_code',
      'prf_description',
      'prf_object_code',
      'prf_mode_code',
      'prf_policy',
      'prf_policy_projection',
      'prf_status',
      'prf_is_deleted',
    ];
    await ds()
      .createQueryBuilder()
      .insert()
      .into('app_object_profiles', columns)
      .values({
        prf_tenant_id: opts.tenantId ?? null,
        prf_code: prfCode,
        prf_description: `Profile ${prfCode}`,
        prf_object_code: objectCode,
        prf_mode_code: opts.mode ?? 'FULL',
        prf_policy: JSON.stringify({
          tenantPolicy: { mode: 'STRICT' },
          permissions: opts.permissions ?? ALL,
        }),
        prf_policy_projection: opts.projection === undefined ? null : JSON.stringify(opts.projection),
        prf_status: opts.status ?? 1,
        prf_is_deleted: opts.deleted ? 1 : 0,
      })
      .execute();
    const row = await ds()
      .createQueryBuilder()
      .select('p.prf_id', 'id')
      .from('app_object_profiles', 'p')
      .where('p.prf_code = :prfCode', { prfCode })
      .getRawOne<{ id: unknown }>();
    return Number(row?.id);
  }

  async function updateRow(
    table: 'registry' | 'profile',
    where: Record<string, unknown>,
    set: Record<string, unknown>,
  ) {
    const [name, prefix] =
      table === 'registry' ? ['app_object_registries', 'obj'] : ['app_object_profiles', 'prf'];
    const [column, value] = Object.entries(where)[0];
    await ds()
      .createQueryBuilder()
      .update(name)
      .set(set)
      .where(`${prefix}_${column} = :value`, { value })
      .execute();
  }

  /** Drops every cached view of an entity (registry and profile loader) after a row changed. */
  async function forget(code: string): Promise<void> {
    await registry.invalidate(code);
    await loader.invalidateEntityCache(code);
  }

  function fakeContext(request: Record<string, unknown>): ExecutionContext {
    return { switchToHttp: () => ({ getRequest: () => request }) } as unknown as ExecutionContext;
  }

  async function guardError(request: Record<string, unknown>): Promise<AppError> {
    const guard = t.app.get(ProfileLoaderGuard);
    const err: unknown = await Promise.resolve()
      .then(() => guard.canActivate(fakeContext(request)))
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(AppError);
    return err as AppError;
  }

  const user = { id: '1', tenantId: TENANT.acme, permissions: ['*:*'] };

  it('rule 1: should answer 400 when the path names no entity code', async () => {
    // Every HTTP route of the loader chain has an `:entity_code` path parameter, so the rule is
    // exercised on the guard itself (a request without one) and on GET /api/v1/records, whose entity
    // code is optional in the URL (D28) and reaches the same check when it is missing.
    const err = await guardError({ params: {}, query: {}, user, tenant: { id: TENANT.acme } });
    expect({ code: err.code, status: httpStatusOf(err.code) }).toEqual({
      code: 'VALIDATION_ERROR',
      status: 400,
    });

    const res = await t.app.inject({
      method: 'GET',
      url: '/api/v1/records',
      headers: authHeaders(TENANT.acme, token.acme),
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ success: false, error: { code: 'VALIDATION_ERROR' } });
  });

  it('rule 2: should answer 401 without a user context', async () => {
    const err = await guardError({
      params: { entity_code: 'customers' },
      query: {},
      tenant: { id: TENANT.acme },
    });
    expect({ code: err.code, status: httpStatusOf(err.code) }).toEqual({ code: 'UNAUTHORIZED', status: 401 });

    const res = await t.app.inject({
      method: 'GET',
      url: '/api/v1/customers',
      headers: { 'x-tenant-id': authHeaders(TENANT.acme, '')['x-tenant-id'] },
    });
    expect(res.statusCode).toBe(401);
  });

  it('rule 3: should consult and fill the cache only when enabled and a tenant id is known', async () => {
    const code = newCode('cache');
    await insertEntity(code);
    await insertProfile(code);
    const k = key(TENANT.acme, code);
    expect(k).toBe(`${t.config.cache.keyPrefix}:prf:${TENANT.acme}:${code}`);

    // Disabled: the database every time, and no key written.
    for (let i = 0; i < 2; i++) {
      const off = await loader.loadProfile({ entityCode: code, tenantId: TENANT.acme, cacheEnabled: false });
      expect(off?.meta).toMatchObject({ source: 'database', cached: false });
    }
    expect(await cache.store.get(k)).toBeNull();

    // Enabled (the default): the first load fills the key, the second is served from it.
    const first = await loader.loadProfile({ entityCode: code, tenantId: TENANT.acme });
    expect(first?.meta).toMatchObject({ source: 'database', cached: false });
    expect(await cache.store.get(k)).not.toBeNull();
    const second = await loader.loadProfile({ entityCode: code, tenantId: TENANT.acme, cacheEnabled: true });
    expect(second?.meta).toMatchObject({
      source: 'redis',
      cached: true,
      entityCode: code,
      tenantId: TENANT.acme,
    });
    expect(second?.profile.prf_id).toBe(first?.profile.prf_id);

    // Disabled again: the filled key is not consulted.
    const bypass = await loader.loadProfile({ entityCode: code, tenantId: TENANT.acme, cacheEnabled: false });
    expect(bypass?.meta).toMatchObject({ source: 'database', cached: false });

    // No tenant id: no profile key is read or written.
    const reads = jest.spyOn(cache.store, 'get');
    const writes = jest.spyOn(cache.store, 'set');
    try {
      await loader.loadProfile({ entityCode: code, tenantId: '' });
      const prfKeys = (calls: unknown[][]) =>
        calls.map((c) => String(c[0])).filter((s) => s.includes(':prf:'));
      expect(prfKeys(reads.mock.calls)).toEqual([]);
      expect(prfKeys(writes.mock.calls)).toEqual([]);
    } finally {
      reads.mockRestore();
      writes.mockRestore();
    }
  });

  it('rule 4: should give 404 / null for an inactive or soft-deleted registry row', async () => {
    const inactive = newCode('inactive');
    await insertEntity(inactive);
    await insertProfile(inactive);
    expect((await get(inactive, TENANT.acme, 'acme')).statusCode).toBe(200);

    await updateRow('registry', { code: inactive }, { obj_status: 0 });
    await forget(inactive);
    expect(await loader.loadProfile({ entityCode: inactive, tenantId: TENANT.acme })).toBeNull();
    const res = await get(inactive, TENANT.acme, 'acme');
    expect(res.statusCode).toBe(404);
    expect(res.json()).toMatchObject({ success: false, entityCode: inactive, error: { code: 'NOT_FOUND' } });

    const deleted = newCode('deleted');
    await insertEntity(deleted, { deleted: true });
    await insertProfile(deleted);
    expect(await loader.loadProfile({ entityCode: deleted, tenantId: TENANT.acme })).toBeNull();
    const res2 = await get(deleted, TENANT.acme, 'acme');
    expect(res2.statusCode).toBe(404);
    expect(res2.json()).toMatchObject({ entityCode: deleted, error: { code: 'NOT_FOUND' } });

    // The registry row of another tenant does not count either (D20).
    const foreign = newCode('foreign');
    await insertEntity(foreign, { tenantId: Number(TENANT.globex) });
    await insertProfile(foreign);
    expect(await loader.loadProfile({ entityCode: foreign, tenantId: TENANT.acme })).toBeNull();
    expect(await loader.loadProfile({ entityCode: foreign, tenantId: TENANT.globex })).not.toBeNull();
  });

  it('rule 5: should give 404 / null when the entity has no live, active profile', async () => {
    const none = newCode('noprf');
    await insertEntity(none);
    expect(await loader.loadProfile({ entityCode: none, tenantId: TENANT.acme })).toBeNull();
    const res = await get(none, TENANT.acme, 'acme');
    expect(res.statusCode).toBe(404);
    expect(res.json()).toMatchObject({ success: false, entityCode: none, error: { code: 'NOT_FOUND' } });

    const dead = newCode('deadprf');
    await insertEntity(dead);
    await insertProfile(dead, { status: 0 });
    await insertProfile(dead, { deleted: true });
    expect(await loader.loadProfile({ entityCode: dead, tenantId: TENANT.acme })).toBeNull();
    const res2 = await get(dead, TENANT.acme, 'acme');
    expect(res2.statusCode).toBe(404);
    expect(res2.json()).toMatchObject({ entityCode: dead, error: { code: 'NOT_FOUND' } });

    // A live, active one makes the entity usable.
    await insertProfile(dead);
    await forget(dead);
    expect((await get(dead, TENANT.acme, 'acme')).statusCode).toBe(200);
  });

  it('rule 6: should use exactly one profile, the lowest live prf_id', async () => {
    const code = newCode('lowest');
    await insertEntity(code);
    const firstId = await insertProfile(code, { permissions: ALL });
    const secondId = await insertProfile(code, { permissions: NO_READ });
    expect(secondId).toBeGreaterThan(firstId);

    const loaded = await loader.loadProfile({ entityCode: code, tenantId: TENANT.acme });
    expect(loaded?.profile.prf_id).toBe(firstId);
    expect(loaded?.policy.permissions.read).toBe(true);
    expect((await get(code, TENANT.acme, 'acme')).statusCode).toBe(200);

    // With the first soft-deleted, the second (which forbids reads) takes over once the cache is dropped.
    await updateRow('profile', { id: firstId }, { prf_is_deleted: 1 });
    await loader.invalidateCache(code, TENANT.acme);
    const next = await loader.loadProfile({ entityCode: code, tenantId: TENANT.acme });
    expect(next?.profile.prf_id).toBe(secondId);
    expect(next?.policy.permissions.read).toBe(false);
    const res = await get(code, TENANT.acme, 'acme');
    expect(res.statusCode).toBe(403);
    expect(res.json().error.code).toBe('FORBIDDEN');
  });

  it('rule 7 + D20: should never use another tenant’s profile row, even with a lower prf_id', async () => {
    const code = newCode('tenantprf');
    await insertEntity(code);
    const globexId = await insertProfile(code, { tenantId: Number(TENANT.globex), permissions: NO_READ });
    const systemId = await insertProfile(code, { tenantId: null, permissions: ALL });
    expect(globexId).toBeLessThan(systemId);

    const acme = await loader.loadProfile({ entityCode: code, tenantId: TENANT.acme });
    expect(acme?.profile.prf_id).toBe(systemId);
    expect(acme?.policy.permissions.read).toBe(true);
    expect((await get(code, TENANT.acme, 'acme')).statusCode).toBe(200);

    // Globex's own row is a candidate for globex, and the lowest id wins there (no tenant priority
    // beyond the id order).
    const globex = await loader.loadProfile({ entityCode: code, tenantId: TENANT.globex });
    expect(globex?.profile.prf_id).toBe(globexId);
    expect(globex?.profile.prf_tenant_id).toBe(Number(TENANT.globex));
    expect((await get(code, TENANT.globex, 'globex')).statusCode).toBe(403);

    // A third tenant sees only the system row.
    const initech = await loader.loadProfile({ entityCode: code, tenantId: TENANT.initech });
    expect(initech?.profile.prf_id).toBe(systemId);
  });

  it('rule 8: should attach the parsed profile, its registry entity and {source, cached, loadedAt, entityCode, tenantId}', async () => {
    const code = newCode('attach');
    await insertEntity(code);
    const projection = { type: 'exclude', excludeFields: ['internal_notes'] };
    const prfId = await insertProfile(code, { projection });
    const request: Record<string, unknown> = {
      params: { entity_code: code },
      query: {},
      user,
      tenant: { id: TENANT.acme },
    };
    const before = Date.now();
    await expect(t.app.get(ProfileLoaderGuard).canActivate(fakeContext(request))).resolves.toBe(true);
    const loaded = request.profile as LoadedProfile;
    expect(loaded.meta).toEqual({
      source: 'database',
      cached: false,
      loadedAt: expect.any(String),
      entityCode: code,
      tenantId: TENANT.acme,
    });
    expect(Date.parse(loaded.meta.loadedAt)).toBeGreaterThanOrEqual(before - 1000);
    expect(loaded.profile.prf_id).toBe(prfId);
    expect(loaded.profile.prf_policy).toEqual({ tenantPolicy: { mode: 'STRICT' }, permissions: ALL });
    expect(loaded.profile.prf_policy_projection).toEqual(projection);
    expect(loaded.profile.prf_payload).toBeNull();
    expect(loaded.entity).toMatchObject({ code });
    expect(loaded.policy.projection).not.toBeNull();

    // The second request gets the same shape from the cache.
    const again: Record<string, unknown> = { ...request, profile: undefined };
    await t.app.get(ProfileLoaderGuard).canActivate(fakeContext(again));
    const cached = again.profile as LoadedProfile;
    expect(cached.meta).toMatchObject({
      source: 'redis',
      cached: true,
      entityCode: code,
      tenantId: TENANT.acme,
    });
    expect(cached.profile.prf_policy).toEqual(loaded.profile.prf_policy);
    expect(cached.entity).toMatchObject({ code });
  });

  it('rule 9: should fall through to the database on cache failures, without an HTTP error', async () => {
    const code = newCode('cachefail');
    await insertEntity(code);
    await insertProfile(code);
    await loader.loadProfile({ entityCode: code, tenantId: TENANT.acme }); // fills the key

    const warn = jest.spyOn(Logger.prototype, 'warn');
    // With Redis, the in-process tier would answer (issue 13 #3); this is about the shared store
    // failing with nothing held in process.
    cache.tier?.clear();
    const down = jest.spyOn(cache.store, 'get').mockRejectedValue(new Error('down'));
    try {
      const loaded = await loader.loadProfile({ entityCode: code, tenantId: TENANT.acme });
      expect(loaded?.meta).toMatchObject({ source: 'database', cached: false });
      expect(warn).toHaveBeenCalledWith(
        expect.objectContaining({ key: key(TENANT.acme, code), err: 'down' }),
        expect.any(String),
      );
      const res = await get(code, TENANT.acme, 'acme');
      expect(res.statusCode).toBe(200);
    } finally {
      down.mockRestore();
      warn.mockRestore();
    }

    // An unparsable or foreign value under the key is a miss too.
    for (const value of ['{not json', '"a string"', '{"unexpected":true}', '42']) {
      await cache.store.set(key(TENANT.acme, code), value, 60);
      cache.tier?.clear(); // written behind the service's back: nothing in process knows
      const loaded = await loader.loadProfile({ entityCode: code, tenantId: TENANT.acme });
      expect({ value, meta: loaded?.meta }).toMatchObject({
        value,
        meta: { source: 'database', cached: false },
      });
      expect(loaded?.policy.permissions.read).toBe(true);
      await cache.store.set(key(TENANT.acme, code), value, 60);
      cache.tier?.clear();
      expect({ value, status: (await get(code, TENANT.acme, 'acme')).statusCode }).toEqual({
        value,
        status: 200,
      });
    }
  });

  it('should load a missed profile once for concurrent requests (single flight, issue 13 #3)', async () => {
    const code = newCode('flight');
    await insertEntity(code);
    await insertProfile(code);
    await cache.delete([key(TENANT.acme, code)]);
    const reads = jest.spyOn(t.app.get(ProfileRepository), 'findForEntity');
    try {
      const loaded = await Promise.all(
        Array.from({ length: 20 }, () => loader.loadProfile({ entityCode: code, tenantId: TENANT.acme })),
      );
      expect(loaded.every((l) => l?.profile.prf_policy !== undefined)).toBe(true);
      expect(
        reads.mock.calls.filter(([tenant, entity]) => tenant === TENANT.acme && entity === code),
      ).toHaveLength(1);
    } finally {
      reads.mockRestore();
    }
  });

  it('rule 10: should store the profile with TTL 3600 s by default, or cacheTTL when given', async () => {
    const code = newCode('ttl');
    await insertEntity(code);
    await insertProfile(code);
    await loader.loadProfile({ entityCode: code, tenantId: TENANT.acme });
    const ttl = await cache.store.ttl(key(TENANT.acme, code));
    expect(ttl).toBeGreaterThan(3590);
    expect(ttl).toBeLessThanOrEqual(3600);

    await loader.loadProfile({ entityCode: code, tenantId: TENANT.globex, cacheTTL: 120 });
    const custom = await cache.store.ttl(key(TENANT.globex, code));
    expect(custom).toBeGreaterThan(110);
    expect(custom).toBeLessThanOrEqual(120);

    // The request path uses the default.
    await loader.invalidateCache(code, TENANT.acme);
    expect((await get(code, TENANT.acme, 'acme')).statusCode).toBe(200);
    expect(await cache.store.ttl(key(TENANT.acme, code))).toBeGreaterThan(3590);
  });

  it('rule 11: should offer middleware(options) with cacheEnabled and cacheTTL', async () => {
    const code = newCode('mw');
    await insertEntity(code);
    await insertProfile(code);
    const request = (tenantId: string, extra: Record<string, unknown> = {}) => ({
      params: { entity_code: code },
      query: {},
      user,
      tenant: { id: tenantId },
      ...extra,
    });

    // cacheEnabled false: the profile is attached, from the database, and no key is written.
    const off: ProfileRequest = request(TENANT.acme);
    await loader.middleware({ cacheEnabled: false })(off);
    expect(off.profile?.meta).toMatchObject({ source: 'database', cached: false, entityCode: code });
    expect(await cache.store.get(key(TENANT.acme, code))).toBeNull();

    // cacheTTL: written with that TTL, then served from the cache.
    await loader.middleware({ cacheTTL: 90 })(request(TENANT.acme));
    const ttl = await cache.store.ttl(key(TENANT.acme, code));
    expect(ttl).toBeGreaterThan(80);
    expect(ttl).toBeLessThanOrEqual(90);
    const hit: ProfileRequest = request(TENANT.acme);
    await loader.middleware()(hit);
    expect(hit.profile?.meta.cached).toBe(true);

    // Rules 1 and 2 as the guard has them.
    const noCode = await loader
      .middleware()({ params: {}, query: {}, user, tenant: { id: TENANT.acme } })
      .catch((e: unknown) => e);
    expect(noCode).toMatchObject({ code: 'VALIDATION_ERROR' });
    const noUser = await loader
      .middleware()(request(TENANT.acme, { user: undefined }))
      .catch((e: unknown) => e);
    expect(noUser).toMatchObject({ code: 'UNAUTHORIZED' });
  });

  it('rule 11: should offer loadBulk, invalidateCache and invalidateEntityCache', async () => {
    const a = newCode('bulk_a');
    const b = newCode('bulk_b');
    const broken = newCode('bulk_broken');
    const unknown = newCode('bulk_unknown');
    for (const c of [a, b, broken]) await insertEntity(c);
    await insertProfile(a);
    await insertProfile(b);
    await insertProfile(broken, { mode: 'NOT_A_MODE' });

    // loadBulk: a map of the loadable codes; the unknown and the failing ones are skipped.
    const bulk = await loader.loadBulk(TENANT.acme, [a, unknown, broken, b, 'customers']);
    expect(bulk).toBeInstanceOf(Map);
    expect([...bulk.keys()].sort()).toEqual([a, b, 'customers'].sort());
    expect(bulk.get(a)?.meta).toMatchObject({ entityCode: a, tenantId: TENANT.acme });
    await expect(loader.loadProfile({ entityCode: broken, tenantId: TENANT.acme })).rejects.toThrow();

    // invalidateCache: one tenant's key of one entity.
    await loader.loadProfile({ entityCode: a, tenantId: TENANT.globex });
    await loader.loadProfile({ entityCode: a, tenantId: TENANT.initech });
    await loader.loadProfile({ entityCode: b, tenantId: TENANT.globex });
    await loader.invalidateCache(a, TENANT.acme);
    expect(await cache.store.get(key(TENANT.acme, a))).toBeNull();
    expect(await cache.store.get(key(TENANT.globex, a))).not.toBeNull();
    expect(await cache.store.get(key(TENANT.acme, b))).not.toBeNull();
    expect((await loader.loadProfile({ entityCode: a, tenantId: TENANT.acme }))?.meta.source).toBe(
      'database',
    );

    // invalidateEntityCache: every tenant's key of that entity (by scanning), nothing else.
    expect(await loader.invalidateEntityCache(a)).toBe(3);
    for (const tenant of [TENANT.acme, TENANT.globex, TENANT.initech])
      expect(await cache.store.get(key(tenant, a))).toBeNull();
    expect(await cache.store.get(key(TENANT.acme, b))).not.toBeNull();
    expect(await cache.store.get(key(TENANT.globex, b))).not.toBeNull();
    expect(await cache.store.keys(`${t.config.cache.keyPrefix}:prf:*:${a}`)).toEqual([]);
  });
});
