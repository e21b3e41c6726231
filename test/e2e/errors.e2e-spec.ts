import { connect, type AddressInfo } from 'node:net';
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

  /** Issue 9 #9: what the router answers before any route or filter, in the envelope too. */
  describe('URLs the router refuses', () => {
    it('should answer a path parameter over maxParamLength with 414 URI_TOO_LONG, without echoing it', async () => {
      const long = 'x'.repeat(150);
      const res = await t.app.inject({
        method: 'GET',
        url: `/api/v1/customers/${long}`,
        headers: { 'x-request-id': 'uri-too-long-1' },
      });
      expect(res.statusCode).toBe(414);
      expectEnvelope(res.json(), 'URI_TOO_LONG');
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.headers['x-request-id']).toBe('uri-too-long-1');
      expect(res.json().meta.requestId).toBe('uri-too-long-1');
      expect(res.body).not.toContain(long);
      expect(res.body).not.toMatch(/FST_|statusCode/);
    });

    it.each(['/api/v1/customers/%E0%A4%A', '/api/v1/customers/%zz', '/api/v1/customers/%'])(
      'should answer the undecodable path %s with 400 VALIDATION_ERROR',
      async (url) => {
        const res = await t.app.inject({ method: 'GET', url });
        expect(res.statusCode).toBe(400);
        expectEnvelope(res.json(), 'VALIDATION_ERROR');
        expect(res.json().error.message).toBe('Malformed URL');
        expect(res.headers['x-request-id']).toEqual(expect.any(String));
        expect(res.body).not.toMatch(/FST_|%E0|%zz/);
      },
    );
  });

  /** What Node's HTTP parser refuses never reaches inject: these go over a socket. */
  describe("requests Node's HTTP parser refuses (over a socket)", () => {
    let port: number;

    beforeAll(async () => {
      await t.app.listen({ port: 0, host: '127.0.0.1' });
      port = (t.app.getHttpServer().address() as AddressInfo).port;
    });

    /** Writes `raw` at once and reads the answer until the server closes the connection. */
    function rawRequest(
      raw: string,
    ): Promise<{ status: number; headers: Record<string, string>; body: string }> {
      return new Promise((resolve, reject) => {
        const socket = connect(port, '127.0.0.1', () => socket.write(raw));
        const chunks: Buffer[] = [];
        socket.on('data', (c: Buffer) => chunks.push(c));
        socket.on('error', (err: NodeJS.ErrnoException) => {
          // The server destroys the socket after its answer; a reset after it is fine.
          if (err.code !== 'ECONNRESET' || chunks.length === 0) reject(err);
        });
        socket.on('close', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          const [head, ...rest] = text.split('\r\n\r\n');
          const [statusLine, ...lines] = head.split('\r\n');
          const headers: Record<string, string> = {};
          for (const line of lines) {
            const i = line.indexOf(':');
            headers[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim();
          }
          resolve({ status: Number(statusLine.split(' ')[1]), headers, body: rest.join('\r\n\r\n') });
        });
      });
    }

    function expectRawEnvelope(
      res: { status: number; headers: Record<string, string>; body: string },
      status: number,
      code: string,
    ): void {
      expect({ status: res.status, body: res.body.slice(0, 200) }).toEqual({
        status,
        body: expect.any(String),
      });
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      const body = JSON.parse(res.body) as Record<string, any>;
      expectEnvelope(body, code);
      expect(res.headers['x-request-id']).toBe(body.meta.requestId);
      expect(Number(res.headers['content-length'])).toBe(Buffer.byteLength(res.body));
    }

    it('should answer a request line over the header size limit with 414 URI_TOO_LONG', async () => {
      const res = await rawRequest(
        `GET /api/v1/customers?q=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`,
      );
      expectRawEnvelope(res, 414, 'URI_TOO_LONG');
    });

    it('should answer headers over the header size limit with 431 HEADERS_TOO_LARGE', async () => {
      const headers = Array.from({ length: 40 }, (_, i) => `x-filler-${i}: ${'v'.repeat(500)}\r\n`).join('');
      const res = await rawRequest(`GET /healthz HTTP/1.1\r\nHost: x\r\n${headers}\r\n`);
      expectRawEnvelope(res, 431, 'HEADERS_TOO_LARGE');
    });

    it('should answer a malformed request with 400 VALIDATION_ERROR', async () => {
      const res = await rawRequest('NOT A REQUEST\r\n\r\n');
      expectRawEnvelope(res, 400, 'VALIDATION_ERROR');
    });

    it('should answer a long path parameter over a socket with 414 too', async () => {
      const res = await rawRequest(
        `GET /api/v1/customers/${'9'.repeat(300)} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
      );
      expectRawEnvelope(res, 414, 'URI_TOO_LONG');
    });
  });
});
