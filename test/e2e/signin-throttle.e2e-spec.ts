import {
  SIGNIN_ACCOUNT_MAX_FAILURES,
  SIGNIN_ACCOUNT_WINDOW_S,
  SIGNIN_MAX_FAILURES,
  SIGNIN_WINDOW_S,
} from '../../src/auth/signin-throttle';
import { DEMO_PASSWORD, TENANT, tenantHeader } from '../support/auth';
import { startTestApp, TestApp } from '../support/test-app';

/**
 * D46: failed sign-ins are throttled per tenant + e-mail + client address (5 / 15 min) and per
 * tenant + e-mail (50 / hour), so one attacker cannot lock a real user out from everywhere.
 */
describe('Sign-in throttling (D12, D46)', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({ label: 'signin_throttle' });
  });

  afterAll(async () => {
    await t?.close();
  });

  /** A sign-in from `address` (request.ip; TRUST_PROXY=loopback believes no header from it). */
  async function signinFrom(address: string, tenantId: string, email: string, password: string) {
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/signin',
      headers: { 'x-tenant-id': tenantHeader(tenantId) },
      payload: { email_id: email, password },
      remoteAddress: address,
    });
    return {
      status: res.statusCode,
      code: res.statusCode === 200 ? undefined : (res.json().error?.code as string),
      retryAfter: Number(res.headers['retry-after']),
    };
  }

  it('should block the address after five failures while the real user still signs in from another', async () => {
    const email = 'viewer@acme.test';
    for (let i = 0; i < SIGNIN_MAX_FAILURES; i++) {
      expect((await signinFrom('10.0.0.1', TENANT.acme, email, 'wrong')).code).toBe('INVALID_CREDENTIALS');
    }
    const blocked = await signinFrom('10.0.0.1', TENANT.acme, email, DEMO_PASSWORD);
    expect(blocked).toMatchObject({ status: 429, code: 'RATE_LIMITED' });
    expect(blocked.retryAfter).toBeGreaterThan(0);
    expect(blocked.retryAfter).toBeLessThanOrEqual(SIGNIN_WINDOW_S);

    expect(await signinFrom('10.0.0.2', TENANT.acme, email, DEMO_PASSWORD)).toMatchObject({ status: 200 });
    // The blocked address is blocked for this account only.
    expect(await signinFrom('10.0.0.1', TENANT.acme, 'admin@acme.test', DEMO_PASSWORD)).toMatchObject({
      status: 200,
    });
    expect((await signinFrom('10.0.0.1', TENANT.acme, email, DEMO_PASSWORD)).status).toBe(429);
  });

  it('should clear the address counter on a successful sign-in', async () => {
    const email = 'root@acme.test';
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < SIGNIN_MAX_FAILURES - 1; i++) {
        expect((await signinFrom('10.0.1.1', TENANT.acme, email, 'wrong')).status).toBe(401);
      }
      expect((await signinFrom('10.0.1.1', TENANT.acme, email, DEMO_PASSWORD)).status).toBe(200);
    }
  });

  it('should refuse the account from every address after fifty failures across addresses, successes or not', async () => {
    const email = 'admin@globex.test';
    const addresses = Array.from(
      { length: Math.ceil(SIGNIN_ACCOUNT_MAX_FAILURES / SIGNIN_MAX_FAILURES) },
      (_, k) => `10.0.2.${k + 1}`,
    );
    let failures = 0;
    for (const address of addresses) {
      for (let i = 0; i < SIGNIN_MAX_FAILURES && failures < SIGNIN_ACCOUNT_MAX_FAILURES; i++, failures++) {
        expect((await signinFrom(address, TENANT.globex, email, 'wrong')).code).toBe('INVALID_CREDENTIALS');
      }
      // Half-way the real user signs in: that does not give the guessers a fresh allowance.
      if (failures === SIGNIN_ACCOUNT_MAX_FAILURES / 2) {
        expect((await signinFrom('10.0.3.9', TENANT.globex, email, DEMO_PASSWORD)).status).toBe(200);
      }
    }
    const everywhere = await signinFrom('10.0.3.1', TENANT.globex, email, DEMO_PASSWORD);
    expect(everywhere).toMatchObject({ status: 429, code: 'RATE_LIMITED' });
    expect(everywhere.retryAfter).toBeGreaterThan(SIGNIN_WINDOW_S);
    expect(everywhere.retryAfter).toBeLessThanOrEqual(SIGNIN_ACCOUNT_WINDOW_S);
    expect((await signinFrom('10.0.3.9', TENANT.globex, email, DEMO_PASSWORD)).status).toBe(429);
    expect((await signinFrom('127.0.0.1', TENANT.globex, email, DEMO_PASSWORD)).status).toBe(429);
    // Only that account: another user of the tenant, and the same e-mail in another tenant, go on.
    expect((await signinFrom('10.0.3.1', TENANT.acme, 'admin@acme.test', DEMO_PASSWORD)).status).toBe(200);
    expect((await signinFrom('10.0.3.1', TENANT.acme, email, 'x')).code).toBe('INVALID_CREDENTIALS');
  });
});
