import { ProbeModule } from '../support/probe.module';
import { startTestApp, TestApp } from '../support/test-app';

/** Bad input always gets the envelope and a code of D18, never a stack trace or a raw database error. */
describe('Error envelope (D16-D18)', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({
      label: 'errors',
      extraModules: [ProbeModule],
      env: { BODY_LIMIT_BYTES: '2048' },
    });
  });

  afterAll(async () => {
    await t?.close();
  });

  function expectEnvelope(body: Record<string, any>, code: string): void {
    expect(body.success).toBe(false);
    expect(body.error.code).toBe(code);
    expect(typeof body.error.message).toBe('string');
    expect(body.message).toBe(body.error.message);
    expect(body.meta.requestId).toEqual(expect.any(String));
    expect(new Date(body.meta.timestamp).toString()).not.toBe('Invalid Date');
    expect(JSON.stringify(body)).not.toMatch(/at .*\.(ts|js):\d+|node_modules/);
  }

  it('should answer an unknown route with 404 NOT_FOUND', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/nothing/here/at/all' });
    expect(res.statusCode).toBe(404);
    expectEnvelope(res.json(), 'NOT_FOUND');
  });

  it('should answer malformed JSON with 400 VALIDATION_ERROR', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/test/echo',
      headers: { 'content-type': 'application/json' },
      payload: '{"name": "x",',
    });
    expect(res.statusCode).toBe(400);
    expectEnvelope(res.json(), 'VALIDATION_ERROR');
  });

  it('should answer a body over BODY_LIMIT_BYTES with 413 PAYLOAD_TOO_LARGE', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/test/echo',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ name: 'x'.repeat(4096), count: 1 }),
    });
    expect(res.statusCode).toBe(413);
    expectEnvelope(res.json(), 'PAYLOAD_TOO_LARGE');
  });

  it('should list each invalid field as {field, error}', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/test/echo',
      payload: { name: 'far too long a name', count: -1, extra: 1 },
    });
    expect(res.statusCode).toBe(400);
    const body = res.json();
    expectEnvelope(body, 'VALIDATION_ERROR');
    const fields = body.error.details.map((d: { field: string }) => d.field).sort();
    expect(fields).toEqual(['count', 'extra', 'name']);
    for (const d of body.error.details) expect(d.error).toEqual(expect.any(String));
  });

  it('should wrap a valid request in the success envelope', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/test/echo', payload: { name: 'ok', count: 2 } });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toEqual({
      success: true,
      data: { name: 'ok', count: 2 },
      meta: { timestamp: expect.any(String), requestId: res.headers['x-request-id'] },
    });
  });

  it('should translate a database error into 500 SERVICE_ERROR without the raw message', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/test/db-error' });
    expect(res.statusCode).toBe(500);
    expectEnvelope(res.json(), 'SERVICE_ERROR');
    expect(res.body).not.toMatch(/no_such|secret_name|SQL|sqlite|relation|Table/i);
  });

  it('should answer an unexpected error with 500 SERVICE_ERROR and no internal detail', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/test/boom' });
    expect(res.statusCode).toBe(500);
    expectEnvelope(res.json(), 'SERVICE_ERROR');
    expect(res.body).not.toContain('internal detail');
  });

  it('should answer a wrong method on a known path with an envelope, not a stack', async () => {
    const res = await t.app.inject({ method: 'DELETE', url: '/healthz' });
    expect([404, 405]).toContain(res.statusCode);
    expect(res.json().success).toBe(false);
  });
});
