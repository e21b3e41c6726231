import { TENANT, tenantHeader } from '../support/auth';
import { startTestApp, TestApp } from '../support/test-app';

/** D39: RATE_LIMIT_POINTS per RATE_LIMIT_WINDOW_S per tenant. */
describe('Per-tenant rate limit (D39)', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({
      label: 'ratelimit',
      env: { RATE_LIMIT_POINTS: '5', RATE_LIMIT_WINDOW_S: '60' },
    });
  });

  afterAll(async () => {
    await t?.close();
  });

  const tenantConfig = (tenant: string) =>
    t.app.inject({
      method: 'GET',
      url: '/api/v1/auth/tenant-config',
      headers: { 'x-tenant-id': tenantHeader(tenant) },
    });

  it('should answer the request past the limit with 429 RATE_LIMITED and Retry-After', async () => {
    for (let i = 0; i < 5; i++) {
      const ok = await tenantConfig(TENANT.acme);
      expect(ok.statusCode).toBe(200);
      expect(ok.headers['x-ratelimit-remaining']).toBe(String(4 - i));
    }
    const limited = await tenantConfig(TENANT.acme);
    expect(limited.statusCode).toBe(429);
    expect(limited.json().error.code).toBe('RATE_LIMITED');
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
  });

  it('should count each tenant on its own', async () => {
    expect((await tenantConfig(TENANT.globex)).statusCode).toBe(200);
  });

  it('should not limit the probes', async () => {
    for (let i = 0; i < 10; i++)
      expect((await t.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
  });
});
