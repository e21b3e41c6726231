import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { UNKNOWN_TENANT_TTL_S } from '../../src/tenant/tenant-lookup.service';
import { authHeaders, signin, TENANT, tenantHeader } from '../support/auth';
import { buildService } from '../support/service-cluster';
import { startTestApp, type TestApp, waitFor } from '../support/test-app';
import { TEST_SECRETS } from '../support/test-database';

const ROOT = join(__dirname, '..', '..');
const run = promisify(execFile);

/**
 * Issue 34 #11: a running service that answered 404 "Tenant not found" for a tenant id finds the
 * tenant once it exists — at once when an admin creates it (the service drops its remembered
 * miss) or when `npm run seed:demo` seeds it beside a service on Redis (its tenants-changed step
 * drops the cached entries on Redis and in every instance's tier); within UNKNOWN_TENANT_TTL_S
 * seconds on the in-process cache, which a separate process cannot reach. Never the 60 s of a
 * known tenant's entry.
 */
describe('unknown tenants are not remembered past their creation (issue 34 #11)', () => {
  let t: TestApp;
  const onRedis = () => t.config.cache.url !== undefined;

  const tenantConfig = (tenantId: string | number) =>
    t.app.inject({
      method: 'GET',
      url: '/api/v1/auth/tenant-config',
      headers: { 'x-tenant-id': tenantHeader(tenantId) },
    });

  /** `npm run seed:demo`'s two steps, as separate processes on the test's database and cache. */
  const seedDemo = async () => {
    buildService();
    const env = {
      ...process.env,
      ...TEST_SECRETS,
      NODE_ENV: 'test',
      LOG_LEVEL: 'error',
      ...t.db.env,
      CACHE_KEY_PREFIX: t.config.cache.keyPrefix,
      ...(t.config.cache.url ? { CACHE_URL: t.config.cache.url } : { CACHE_URL: '' }),
    };
    await run(process.execPath, [join(ROOT, 'dist/database/cli/seed-demo.js')], { cwd: ROOT, env });
    const { stdout } = await run(process.execPath, [join(ROOT, 'dist/tenant/cli/tenants-changed.js')], {
      cwd: ROOT,
      env,
    });
    return stdout;
  };

  beforeAll(async () => {
    // A server database as it starts: migrated, not seeded.
    t = await startTestApp({ label: 'unknown-tenant-cache', env: { SEED_DEMO: 'false' } });
  });

  afterAll(async () => {
    await t?.close();
  });

  it('should answer 404 for a tenant of an empty database, then find it after the seed', async () => {
    const before = await tenantConfig(TENANT.acme);
    expect(before.statusCode).toBe(404);
    expect(before.json().error).toMatchObject({ code: 'NOT_FOUND', message: 'Tenant not found' });
    const said = await seedDemo();
    const seeded = Date.now();
    if (onRedis()) {
      expect(said).toMatch(/dropped on Redis/);
      expect((await tenantConfig(TENANT.acme)).statusCode).toBe(200);
    } else {
      expect(said).toMatch(/in-process cache/);
      await waitFor(
        async () => (await tenantConfig(TENANT.acme)).statusCode === 200,
        (UNKNOWN_TENANT_TTL_S + 2) * 1000,
      );
      expect(Date.now() - seeded).toBeLessThan((UNKNOWN_TENANT_TTL_S + 2) * 1000);
    }
    expect((await tenantConfig(TENANT.globex)).statusCode).toBe(200);
  });

  it('should find a tenant an admin creates at once, though it was asked for before', async () => {
    const root = (await signin(t.app, TENANT.acme, 'root@acme.test')).token;
    const next = 4; // the demo has tenants 1–3: the next one created gets 4
    expect((await tenantConfig(next)).statusCode).toBe(404);
    const created = await t.app.inject({
      method: 'POST',
      url: '/api/v1/admin/tenants',
      headers: authHeaders(TENANT.acme, root),
      payload: { code: 'hooli', name: 'Hooli' },
    });
    expect(created.statusCode).toBe(201);
    expect(String(created.json().data.tenantId)).toBe(String(next));
    const found = await tenantConfig(next);
    expect(found.statusCode).toBe(200);
    expect(found.json().success).toBe(true);
  });

  it('should still answer 404 for a tenant nobody created', async () => {
    const res = await tenantConfig(999);
    expect(res.statusCode).toBe(404);
    expect(res.json().error.code).toBe('NOT_FOUND');
  });
});
