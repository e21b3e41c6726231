import { authHeaders, signin, TENANT, tenantHeader } from '../support/auth';
import { startTestApp, TestApp } from '../support/test-app';

/** D39: RATE_LIMIT_POINTS per RATE_LIMIT_WINDOW_S per tenant, spent by authenticated requests only. */
describe('Per-tenant rate limit (D39)', () => {
  let t: TestApp;
  const tokens: Record<string, string> = {};

  beforeAll(async () => {
    t = await startTestApp({
      label: 'ratelimit',
      env: { RATE_LIMIT_POINTS: '5', RATE_LIMIT_WINDOW_S: '60' },
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
