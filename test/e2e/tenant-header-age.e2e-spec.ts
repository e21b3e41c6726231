import { TENANT_HEADER_MAX_FUTURE_SKEW_S } from '../../src/tenant/tenant-header.crypto';
import { tenantHeader, TENANT } from '../support/auth';
import { startTestApp, TestApp } from '../support/test-app';

const MAX_AGE_S = 300;

/** D6 with TENANT_HEADER_MAX_AGE_S set: too old and too far in the future are both refused. */
describe('x-tenant-id timestamp with TENANT_HEADER_MAX_AGE_S (D6)', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({ label: 'header_age', env: { TENANT_HEADER_MAX_AGE_S: String(MAX_AGE_S) } });
  });

  afterAll(async () => {
    await t?.close();
  });

  const tenantConfig = async (timestamp?: number) => {
    const res = await t.app.inject({
      method: 'GET',
      url: '/api/v1/auth/tenant-config',
      headers: { 'x-tenant-id': tenantHeader(TENANT.acme, timestamp) },
    });
    return {
      status: res.statusCode,
      details: res.statusCode === 200 ? undefined : res.json().error?.details,
    };
  };
  const nowS = () => Math.floor(Date.now() / 1000);
  const refused = { status: 400, details: { 'x-tenant-id': 'decryption_failed' } };

  it('should accept a header stamped now, or a little ahead within the clock skew', async () => {
    expect(await tenantConfig(nowS())).toEqual({ status: 200, details: undefined });
    expect(await tenantConfig(nowS() + TENANT_HEADER_MAX_FUTURE_SKEW_S - 5)).toEqual({
      status: 200,
      details: undefined,
    });
  });

  it('should refuse a header stamped in the future beyond the clock skew as decryption_failed', async () => {
    expect(await tenantConfig(nowS() + TENANT_HEADER_MAX_FUTURE_SKEW_S + 5)).toEqual(refused);
    expect(await tenantConfig(nowS() + 10 * 365 * 24 * 3600)).toEqual(refused);
  });

  it('should refuse a header older than the max age and accept one without a timestamp', async () => {
    expect(await tenantConfig(nowS() - MAX_AGE_S - 5)).toEqual(refused);
    expect(await tenantConfig()).toEqual({ status: 200, details: undefined });
  });
});
