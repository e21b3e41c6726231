import { authHeaders, signin, TENANT } from '../support/auth';
import { startTestApp, TestApp } from '../support/test-app';

const JSON_TYPE = { 'content-type': 'application/json' };

/**
 * `Content-Type: application/json` with an empty (or whitespace-only) body is no body, on every
 * route; any other JSON is parsed exactly as strictly as Fastify does.
 */
describe('Empty JSON bodies', () => {
  let t: TestApp;
  let adminToken: string;
  let serial = 0;

  beforeAll(async () => {
    t = await startTestApp({ label: 'empty-body', env: { BODY_LIMIT_BYTES: '2048' } });
    adminToken = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
  });

  afterAll(async () => {
    await t?.close();
  });

  const admin = () => authHeaders(TENANT.acme, adminToken);

  function expectError(res: { statusCode: number; json: () => any }, status: number, code: string): void {
    expect(res.statusCode).toBe(status);
    const body = res.json();
    expect(body.success).toBe(false);
    expect(body.error.code).toBe(code);
  }

  /** A customer without orders (every demo customer has some), so a plain delete succeeds. */
  async function newCustomerId(): Promise<number> {
    serial++;
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/customers',
      headers: admin(),
      payload: { name: `Empty Body ${serial}`, email: `empty-body-${serial}@acme.example`, tier: 'silver' },
    });
    expect(res.statusCode).toBe(201);
    return res.json().data.id as number;
  }

  it.each([
    ['no body', ''],
    ['a whitespace-only body', ' \r\n\t '],
  ])('should delete with content-type application/json and %s', async (_label, payload) => {
    const id = await newCustomerId();
    const res = await t.app.inject({
      method: 'DELETE',
      url: `/api/v1/customers/${id}`,
      headers: { ...admin(), ...JSON_TYPE },
      payload,
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().success).toBe(true);
    expect(res.json().deletedAt).toEqual(expect.any(String));
  });

  it.each([
    ['an empty body', ''],
    ['a whitespace-only body', '\n'],
  ])('should log out with content-type application/json and %s', async (_label, payload) => {
    const token = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/logout',
      headers: { ...authHeaders(TENANT.acme, token), 'content-type': 'application/json; charset=utf-8' },
      payload,
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().data.message).toEqual(expect.any(String));
  });

  it('should answer a route that needs a body, sent an empty one, with 400 VALIDATION_ERROR', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/customers',
      headers: { ...admin(), ...JSON_TYPE },
      payload: '',
    });
    expectError(res, 400, 'VALIDATION_ERROR');
  });

  it('should still answer a malformed body with 400 VALIDATION_ERROR', async () => {
    const token = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/logout',
      headers: { ...authHeaders(TENANT.acme, token), ...JSON_TYPE },
      payload: '{',
    });
    expectError(res, 400, 'VALIDATION_ERROR');
    expect(res.json().error.message).toMatch(/JSON/);
  });

  it.each([
    ['__proto__', '{"name": "Poisoned", "__proto__": {"isAdmin": true}}'],
    ['\\u005f_proto__', '{"name": "Poisoned", "\\u005f_proto__": {"isAdmin": true}}'],
    ['constructor.prototype', '{"name": "Poisoned", "constructor": {"prototype": {"isAdmin": true}}}'],
  ])('should still refuse a body with %s with 400 VALIDATION_ERROR', async (_label, payload) => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/customers',
      headers: { ...admin(), ...JSON_TYPE },
      payload,
    });
    expectError(res, 400, 'VALIDATION_ERROR');
    expect(res.json().error.message).toMatch(/JSON/);
  });

  it('should still answer a body over BODY_LIMIT_BYTES with 413 PAYLOAD_TOO_LARGE', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/customers',
      headers: { ...admin(), ...JSON_TYPE },
      payload: JSON.stringify({ name: 'x'.repeat(4096) }),
    });
    expectError(res, 413, 'PAYLOAD_TOO_LARGE');
  });

  it('should still answer a whitespace-only body over BODY_LIMIT_BYTES with 413', async () => {
    const res = await t.app.inject({
      method: 'DELETE',
      url: '/api/v1/customers/1',
      headers: { ...admin(), ...JSON_TYPE },
      payload: ' '.repeat(4096),
    });
    expectError(res, 413, 'PAYLOAD_TOO_LARGE');
  });
});
