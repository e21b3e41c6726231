import type { LightMyRequestResponse } from 'fastify';
import { authHeaders, signin, TENANT, tenantHeader } from '../support/auth';
import { loadConfig } from '../../src/config/config.schema';
import { startTestApp, TestApp } from '../support/test-app';
import { TEST_SECRETS } from '../support/test-database';

/** The per-address limits the test app runs with: the configuration's defaults. */
const ADDRESS_LIMITS = loadConfig({ ...TEST_SECRETS, NODE_ENV: 'test' }).rateLimit;

/** The tenant budget (D39) in this file: small, so that a flood of a few dozen would exhaust it. */
const TENANT_POINTS = 30;

/**
 * Issue 9, finding 3: nobody without a valid token can lock a tenant out. Unauthenticated and
 * failed traffic is limited per client address and spends none of the tenant's budget; public
 * routes have a per-address budget of their own; a blocked address still serves valid tokens.
 */
describe('Abuse limits: per address, not per tenant (issue 9 #3, D39)', () => {
  let t: TestApp;
  /** The acme user who must be served throughout, from an address of its own. */
  let userHeaders: Record<string, string>;
  let userRequests = 0;
  const USER_ADDRESS = '10.200.0.1';

  beforeAll(async () => {
    t = await startTestApp({
      label: 'abuse',
      // One user spends the tenant's budget here: their own limit is set to the tenant's.
      env: {
        RATE_LIMIT_POINTS: String(TENANT_POINTS),
        USER_RATE_LIMIT_POINTS: String(TENANT_POINTS),
        RATE_LIMIT_WINDOW_S: '600',
      },
    });
    const { token } = await signin(t.app, TENANT.acme, 'admin@acme.test');
    expect(token).not.toBe('');
    userHeaders = authHeaders(TENANT.acme, token);
  });

  afterAll(async () => {
    await t?.close();
  });

  function request(
    address: string,
    url: string,
    headers: Record<string, string>,
  ): Promise<LightMyRequestResponse> {
    return t.app.inject({ method: 'GET', url, headers, remoteAddress: address });
  }

  /** The signed-in user of the same tenant, from another address: always 200, budget intact. */
  async function expectUserServed(): Promise<void> {
    const res = await request(USER_ADDRESS, '/api/v1/auth/profile', userHeaders);
    userRequests++;
    expect(res.statusCode).toBe(200);
    // Only the user's own requests have spent the tenant's budget, none of the flood's.
    expect(res.headers['x-ratelimit-remaining']).toBe(String(TENANT_POINTS - userRequests));
  }

  /**
   * `count` requests from `address`, sequentially, with the user served every `every`; returns the
   * statuses in order.
   */
  async function flood(
    count: number,
    send: () => Promise<LightMyRequestResponse>,
    every = 50,
  ): Promise<{ statuses: number[]; last: LightMyRequestResponse }> {
    const statuses: number[] = [];
    let last: LightMyRequestResponse | undefined;
    for (let i = 1; i <= count; i++) {
      last = await send();
      statuses.push(last.statusCode);
      if (i % every === 0) await expectUserServed();
    }
    return { statuses, last: last! };
  }

  /** The failure budget is used up once, the rest is 429 (a little slack: points are counted after the answer). */
  function expectBlockedAfterFailureBudget(statuses: number[], failureStatus: number): void {
    const failures = statuses.filter((s) => s === failureStatus).length;
    const limited = statuses.filter((s) => s === 429).length;
    expect(failures + limited).toBe(statuses.length);
    expect(failures).toBeGreaterThanOrEqual(ADDRESS_LIMITS.failurePoints);
    expect(failures).toBeLessThanOrEqual(ADDRESS_LIMITS.failurePoints + 5);
    expect(statuses.slice(-10)).toEqual(Array<number>(10).fill(429));
  }

  function expectRateLimited(res: LightMyRequestResponse): void {
    expect(res.statusCode).toBe(429);
    expect(res.json().error.code).toBe('RATE_LIMITED');
    const retryAfter = Number(res.headers['retry-after']);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(ADDRESS_LIMITS.failureWindowS);
  }

  const floodSize = ADDRESS_LIMITS.failurePoints + 40;

  it('should take floods bigger than the tenant budget to prove the point', () => {
    expect(floodSize).toBeGreaterThan(TENANT_POINTS * 4);
  });

  it('should block an anonymous flood (no token) per address and keep serving the tenant', async () => {
    const address = '10.1.2.3';
    const tenantOnly = { 'x-tenant-id': tenantHeader(TENANT.acme) };
    const { statuses, last } = await flood(floodSize, () =>
      request(address, '/api/v1/customers', tenantOnly),
    );
    expectBlockedAfterFailureBudget(statuses, 401);
    expectRateLimited(last);
    await expectUserServed();

    // The same address still serves a valid token of an active user (NAT: users share addresses).
    const withToken = await request(address, '/api/v1/customers', userHeaders);
    userRequests++;
    expect(withToken.statusCode).toBe(200);
    // …but not a public route without a token, nor a protected one.
    expectRateLimited(await request(address, '/api/v1/auth/tenant-config', tenantOnly));
    expectRateLimited(await request(address, '/api/v1/customers', tenantOnly));
    // Another address is not affected.
    expect((await request('10.1.2.4', '/api/v1/customers', tenantOnly)).statusCode).toBe(401);
  });

  it('should block an invalid-token flood per address and keep serving the tenant', async () => {
    const address = '10.1.3.3';
    const forged = `${userHeaders.authorization.slice(0, -4)}AAAA`;
    const headers = { 'x-tenant-id': tenantHeader(TENANT.acme), authorization: forged };
    const { statuses, last } = await flood(floodSize, () =>
      request(address, '/api/v1/auth/profile', headers),
    );
    expectBlockedAfterFailureBudget(statuses, 401);
    expectRateLimited(last);
    await expectUserServed();
    const withToken = await request(address, '/api/v1/auth/profile', userHeaders);
    userRequests++;
    expect(withToken.statusCode).toBe(200);
  });

  it('should block a flood with a bad tenant header per address (400s count as failures)', async () => {
    const address = '10.1.4.3';
    const headers = { 'x-tenant-id': 'not-a-header' };
    const { statuses, last } = await flood(floodSize, () =>
      request(address, '/api/v1/auth/tenant-config', headers),
    );
    expectBlockedAfterFailureBudget(statuses, 400);
    expectRateLimited(last);
    await expectUserServed();
  });

  it('should limit a tenant-config flood per address on its public budget, not the tenant budget', async () => {
    const address = '10.1.5.3';
    const headers = { 'x-tenant-id': tenantHeader(TENANT.acme) };
    const { statuses, last } = await flood(
      ADDRESS_LIMITS.publicPoints + 20,
      () => request(address, '/api/v1/auth/tenant-config', headers),
      100,
    );
    expect(statuses.slice(0, ADDRESS_LIMITS.publicPoints)).toEqual(
      Array<number>(ADDRESS_LIMITS.publicPoints).fill(200),
    );
    expect(statuses.slice(ADDRESS_LIMITS.publicPoints)).toEqual(Array<number>(20).fill(429));
    expectRateLimited(last);
    expect(Number(last.headers['retry-after'])).toBeLessThanOrEqual(ADDRESS_LIMITS.publicWindowS);
    await expectUserServed();
    // Another address still reads the tenant's configuration.
    expect((await request('10.1.5.4', '/api/v1/auth/tenant-config', headers)).statusCode).toBe(200);
  });

  it('should count the X-Forwarded-For client behind a trusted proxy (the bundled tenant proxy)', async () => {
    const tenantOnly = { 'x-tenant-id': tenantHeader(TENANT.acme) };
    const viaProxy = (client: string, headers: Record<string, string>) =>
      request('127.0.0.1', '/api/v1/customers', { ...headers, 'x-forwarded-for': client });
    const { statuses } = await flood(floodSize, () => viaProxy('198.51.100.7', tenantOnly));
    expectBlockedAfterFailureBudget(statuses, 401);
    // Other clients of the same proxy are not blocked, and the tenant is served through it.
    expect((await viaProxy('198.51.100.8', tenantOnly)).statusCode).toBe(401);
    const user = await viaProxy('198.51.100.8', userHeaders);
    userRequests++;
    expect(user.statusCode).toBe(200);
    await expectUserServed();
  });

  it('should count an IPv6 client by its /64', async () => {
    const tenantOnly = { 'x-tenant-id': tenantHeader(TENANT.acme) };
    let n = 0;
    const { statuses } = await flood(floodSize, () =>
      request(`2001:db8:1:2::${(++n).toString(16)}`, '/api/v1/customers', tenantOnly),
    );
    expectBlockedAfterFailureBudget(statuses, 401);
    expectRateLimited(await request('2001:db8:1:2:ffff::1', '/api/v1/customers', tenantOnly));
    expect((await request('2001:db8:1:3::1', '/api/v1/customers', tenantOnly)).statusCode).toBe(401);
  });

  it('should not limit the probes of a blocked address', async () => {
    expect((await request('10.1.2.3', '/healthz', {})).statusCode).toBe(200);
  });

  it('should still spend the tenant budget with authenticated requests (429 after RATE_LIMIT_POINTS)', async () => {
    const left = TENANT_POINTS - userRequests;
    expect(left).toBeGreaterThan(0);
    for (let i = 0; i < left; i++) {
      const res = await request(`10.3.0.${i}`, '/api/v1/auth/profile', userHeaders);
      expect(res.statusCode).toBe(200);
    }
    const limited = await request('10.3.1.1', '/api/v1/auth/profile', userHeaders);
    expect(limited.statusCode).toBe(429);
    expect(limited.json().error.code).toBe('RATE_LIMITED');
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    // Another tenant is not affected.
    const { token } = await signin(t.app, TENANT.globex, 'admin@globex.test');
    const globex = await request('10.3.1.1', '/api/v1/auth/profile', authHeaders(TENANT.globex, token));
    expect(globex.statusCode).toBe(200);
  });
});
