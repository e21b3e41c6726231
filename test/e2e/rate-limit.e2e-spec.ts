import { authHeaders, signin, TENANT, tenantHeader } from '../support/auth';
import { startTestApp, TestApp } from '../support/test-app';
import { testCacheUrl } from '../support/test-database';

/** D39: RATE_LIMIT_POINTS per RATE_LIMIT_WINDOW_S per tenant, spent by authenticated requests only. */
describe('Per-tenant rate limit (D39)', () => {
  let t: TestApp;
  const tokens: Record<string, string> = {};

  beforeAll(async () => {
    t = await startTestApp({
      label: 'ratelimit',
      // One user spends the tenant's budget here: their own limit is set to the tenant's.
      env: { RATE_LIMIT_POINTS: '5', USER_RATE_LIMIT_POINTS: '5', RATE_LIMIT_WINDOW_S: '60' },
    });
    tokens.acme = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
    tokens.globex = (await signin(t.app, TENANT.globex, 'admin@globex.test')).token;
  });

  afterAll(async () => {
    await t?.close();
  });

  const profile = (tenant: 'acme' | 'globex') =>
    t.app.inject({
      method: 'GET',
      url: '/api/v1/auth/profile',
      headers: authHeaders(TENANT[tenant], tokens[tenant]),
    });

  it('should not spend the tenant budget on public or unauthenticated requests', async () => {
    for (let i = 0; i < 10; i++) {
      const config = await t.app.inject({
        method: 'GET',
        url: '/api/v1/auth/tenant-config',
        headers: { 'x-tenant-id': tenantHeader(TENANT.acme) },
      });
      expect(config.statusCode).toBe(200);
      expect(config.headers['x-ratelimit-remaining']).toBeUndefined();
      const anonymous = await t.app.inject({
        method: 'GET',
        url: '/api/v1/auth/profile',
        headers: { 'x-tenant-id': tenantHeader(TENANT.acme) },
      });
      expect(anonymous.statusCode).toBe(401);
    }
  });

  it('should answer the authenticated request past the limit with 429 RATE_LIMITED and Retry-After', async () => {
    for (let i = 0; i < 5; i++) {
      const ok = await profile('acme');
      expect(ok.statusCode).toBe(200);
      expect(ok.headers['x-ratelimit-remaining']).toBe(String(4 - i));
    }
    const limited = await profile('acme');
    expect(limited.statusCode).toBe(429);
    expect(limited.json().error.code).toBe('RATE_LIMITED');
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
  });

  it('should count each tenant on its own', async () => {
    expect((await profile('globex')).statusCode).toBe(200);
  });

  it('should not limit the probes', async () => {
    for (let i = 0; i < 10; i++)
      expect((await t.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
  });
});

/**
 * Issue 21 #4: a per-user limit within the tenant's (USER_RATE_LIMIT_POINTS per RATE_LIMIT_WINDOW_S,
 * default half of RATE_LIMIT_POINTS), so one account cannot spend its tenant's budget. With
 * TEST_CACHE=redis the requests alternate between two instances sharing Redis (one key prefix):
 * both budgets are one for the two. On the embedded default both are the one instance.
 */
describe('Per-user rate limit (issue 21 #4)', () => {
  const apps: TestApp[] = [];
  let sent = 0;

  async function start(label: string, env: Record<string, string>): Promise<void> {
    const first = await startTestApp({ label: `${label}_a`, env });
    apps.push(first);
    if (testCacheUrl())
      apps.push(
        await startTestApp({
          label: `${label}_b`,
          env: { ...env, CACHE_KEY_PREFIX: first.config.cache.keyPrefix },
        }),
      );
  }

  async function stop(): Promise<void> {
    for (const app of apps.splice(0)) await app.close();
  }

  async function tokenOf(email: string): Promise<string> {
    return (await signin(apps[0].app, TENANT.acme, email)).token;
  }

  const profile = (token: string) =>
    apps[sent++ % apps.length].app.inject({
      method: 'GET',
      url: '/api/v1/auth/profile',
      headers: authHeaders(TENANT.acme, token),
    });

  describe('with the default of half the tenant limit', () => {
    beforeAll(() => start('ratelimit_user', { RATE_LIMIT_WINDOW_S: '600', USER_RATE_LIMIT_POINTS: '' }));
    afterAll(stop);

    it('should stop one account at 500 of 650 requests while the tenant admin is still served', async () => {
      expect(apps[0].config.rateLimit).toMatchObject({ points: 1000, userPoints: 500 });
      const viewer = await tokenOf('viewer@acme.test');
      const statuses: number[] = [];
      for (let i = 0; i < 650; i++) statuses.push((await profile(viewer)).statusCode);
      expect(statuses.filter((s) => s === 200)).toHaveLength(500);
      expect(statuses.slice(500).every((s) => s === 429)).toBe(true);

      const limited = await profile(viewer);
      expect(limited.statusCode).toBe(429);
      expect(limited.json().error).toMatchObject({
        code: 'RATE_LIMITED',
        message: 'Too many requests for this user',
      });
      expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
      expect(Number(limited.headers['retry-after'])).toBeLessThanOrEqual(600);

      // The viewer's refused requests spent nothing of the tenant's budget: 1000 - 500 left. With
      // Redis each instance spends the tenant's points in leases of 10 (1 %), and one instance
      // does not count the points another holds unspent: at most a lease short per other instance.
      const admin = await profile(await tokenOf('admin@acme.test'));
      expect(admin.statusCode).toBe(200);
      const remaining = Number(admin.headers['x-ratelimit-remaining']);
      expect(remaining).toBeLessThanOrEqual(1000 - 500 - 1);
      expect(remaining).toBeGreaterThanOrEqual(1000 - 500 - 1 - (apps.length - 1) * 10);
    });
  });

  describe('with a tenant limit that three accounts can spend', () => {
    beforeAll(() =>
      start('ratelimit_users', {
        RATE_LIMIT_POINTS: '12',
        USER_RATE_LIMIT_POINTS: '5',
        RATE_LIMIT_WINDOW_S: '600',
      }),
    );
    afterAll(stop);

    it('should refuse each account past its own limit, then everyone once the tenant limit is spent', async () => {
      const [viewer, admin, root] = await Promise.all(
        ['viewer@acme.test', 'admin@acme.test', 'root@acme.test'].map(tokenOf),
      );
      for (let i = 0; i < 5; i++) expect((await profile(viewer)).statusCode).toBe(200);
      const user = await profile(viewer);
      expect(user.statusCode).toBe(429);
      expect(user.json().error.message).toBe('Too many requests for this user');

      for (let i = 0; i < 5; i++) expect((await profile(admin)).statusCode).toBe(200);
      for (let i = 0; i < 2; i++) expect((await profile(root)).statusCode).toBe(200);
      // 12 spent: root has 3 of its own left, the tenant none.
      const tenant = await profile(root);
      expect(tenant.statusCode).toBe(429);
      expect(tenant.json().error).toMatchObject({
        code: 'RATE_LIMITED',
        message: 'Too many requests for this tenant',
      });

      // Another tenant is not affected.
      const globex = await signin(apps[0].app, TENANT.globex, 'admin@globex.test');
      const other = await apps[0].app.inject({
        method: 'GET',
        url: '/api/v1/auth/profile',
        headers: authHeaders(TENANT.globex, globex.token),
      });
      expect(other.statusCode).toBe(200);
    });
  });
});
