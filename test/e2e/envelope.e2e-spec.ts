import { envelopedRoutes } from '../../src/common/http/envelope.hook';
import { authHeaders, signin, TENANT } from '../support/auth';
import { startTestApp, TestApp } from '../support/test-app';

/**
 * The success envelope (D16) is a Fastify preSerialization hook over the controller routes that
 * are not @RawResponse(); probes, metrics, Swagger and error bodies pass through as they are.
 */
describe('Response envelope (D16)', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({ label: 'envelope' });
  });

  afterAll(async () => {
    await t?.close();
  });

  it('should cover the controller routes and leave out the raw ones', () => {
    const routes = envelopedRoutes(t.app);
    for (const r of [
      'GET /api/v1/:entity_code',
      'DELETE /api/v1/:entity_code/:id',
      'POST /api/v1/auth/signin',
    ])
      expect(routes).toContain(r);
    for (const r of ['GET /healthz', 'GET /readyz', 'GET /livez', 'GET /metrics'])
      expect(routes).not.toContain(r);
  });

  it('should wrap a result as {success, data, meta} with the request id, and spread Enveloped extras', async () => {
    const headers = authHeaders(TENANT.acme, (await signin(t.app, TENANT.acme, 'admin@acme.test')).token);
    const res = await t.app.inject({
      method: 'GET',
      url: '/api/v1/customers?limit=1',
      headers: { ...headers, 'x-request-id': 'envelope-test-1' },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      success: true,
      data: expect.objectContaining({ records: expect.any(Array) }),
      meta: { timestamp: expect.any(String), requestId: 'envelope-test-1' },
    });
    const created = await t.app.inject({
      method: 'POST',
      url: '/api/v1/customers',
      headers,
      payload: { name: 'Envelope', email: 'envelope@acme.example' },
    });
    const del = await t.app.inject({
      method: 'DELETE',
      url: `/api/v1/customers/${String(created.json().data.id)}`,
      headers,
    });
    const body = del.json();
    expect(body).toMatchObject({ success: true, data: { success: true }, deletedAt: body.data.deletedAt });
  });

  it('should not wrap probes, metrics, the OpenAPI document or error bodies', async () => {
    expect((await t.app.inject({ method: 'GET', url: '/readyz' })).json()).toMatchObject({ status: 'ok' });
    expect((await t.app.inject({ method: 'GET', url: '/metrics' })).body).toMatch(/^# HELP /m);
    const openapi = (await t.app.inject({ method: 'GET', url: '/api-docs/json' })).json();
    expect(openapi.openapi).toMatch(/^3\./);
    expect(openapi.success).toBeUndefined();
    const missing = await t.app.inject({ method: 'GET', url: '/api/v1/nothing-here' });
    expect(missing.statusCode).toBeGreaterThanOrEqual(400);
    const error = missing.json();
    expect(error.success).toBe(false);
    expect(error.data).toBeUndefined();
    expect(error.error.code).toEqual(expect.any(String));
  });
});
