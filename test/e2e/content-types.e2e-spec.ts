import type { AddressInfo } from 'node:net';
import { request as httpRequest } from 'node:http';
import type { DataSource } from 'typeorm';
import { DatabaseService } from '../../src/database/database.service';
import { authHeaders, DEMO_PASSWORD, signin, TENANT, tenantHeader } from '../support/auth';
import { startTestApp, TestApp } from '../support/test-app';

type Answer = { statusCode: number; headers: Record<string, unknown>; body: string };

/** A JSON text in UTF-16LE, as a client sends it with `charset=utf-16`. */
const utf16 = (text: string): Buffer =>
  Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]);

/**
 * Issue 9 #7: JSON routes read `application/json` in UTF-8 only. Every other body (a form, text,
 * multipart, another charset, no content type at all) is answered 415 UNSUPPORTED_MEDIA_TYPE and
 * stores nothing; bytes that are not UTF-8 answer 400, never stored with U+FFFD in their place.
 */
describe('Content types of request bodies', () => {
  let t: TestApp;
  let ds: DataSource;
  let admin: Record<string, string>;
  let serial = 0;

  beforeAll(async () => {
    t = await startTestApp({ label: 'content_types' });
    ds = t.app.get(DatabaseService).dataSource;
    admin = authHeaders(TENANT.acme, (await signin(t.app, TENANT.acme, 'admin@acme.test')).token);
  });

  afterAll(async () => {
    await t?.close();
  });

  const customers = async (): Promise<number> =>
    Number((await ds.query<Array<{ n: unknown }>>('SELECT COUNT(*) AS n FROM demo_customers'))[0].n);

  const customer = () => {
    serial++;
    return { name: `Content Type ${serial}`, email: `content-type-${serial}@acme.example`, tier: 'silver' };
  };
  const signinBody = { email_id: 'admin@acme.test', password: DEMO_PASSWORD };

  function expectEnvelope(res: { statusCode: number; body: string }, status: number, code: string): void {
    expect({ status: res.statusCode, body: res.body.slice(0, 300) }).toEqual({
      status,
      body: expect.any(String),
    });
    const body = JSON.parse(res.body) as Record<string, any>;
    expect(body).toMatchObject({
      success: false,
      message: expect.any(String),
      error: { code, message: body.message },
      meta: { timestamp: expect.any(String), requestId: expect.any(String) },
    });
    expect(Object.keys(body.error).sort()).toEqual(['code', 'details', 'message']);
  }

  /** Each refused body, as a function of the JSON it would carry. */
  const REFUSED: Array<[string, string | undefined, (json: Record<string, unknown>) => string | Buffer]> = [
    [
      'a urlencoded form',
      'application/x-www-form-urlencoded',
      (json) => new URLSearchParams(json as Record<string, string>).toString(),
    ],
    ['text/plain with JSON in it', 'text/plain', (json) => JSON.stringify(json)],
    [
      'text/plain; charset=utf-8 with JSON in it',
      'text/plain; charset=utf-8',
      (json) => JSON.stringify(json),
    ],
    [
      'multipart/form-data',
      'multipart/form-data; boundary=XyZ',
      (json) =>
        Object.entries(json)
          .map(([k, v]) => `--XyZ\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${String(v)}\r\n`)
          .join('') + '--XyZ--\r\n',
    ],
    [
      'application/json; charset=utf-16',
      'application/json; charset=utf-16',
      (json) => utf16(JSON.stringify(json)),
    ],
    [
      'application/json; charset=UTF-16LE',
      'application/json; charset=UTF-16LE',
      (json) => utf16(JSON.stringify(json)),
    ],
    [
      'application/json; charset=iso-8859-1',
      'application/json; charset=iso-8859-1',
      (json) => JSON.stringify(json),
    ],
    ['application/xml', 'application/xml', () => '<customer><name>x</name></customer>'],
    ['application/merge-patch+json', 'application/merge-patch+json', (json) => JSON.stringify(json)],
    ['no content type at all', undefined, (json) => JSON.stringify(json)],
  ];

  describe.each(REFUSED)('a body sent as %s', (_label, contentType, encode) => {
    const typeHeader = (): Record<string, string> => (contentType ? { 'content-type': contentType } : {});

    it('should answer POST /api/v1/customers with 415 UNSUPPORTED_MEDIA_TYPE and store nothing', async () => {
      const before = await customers();
      const res = await t.app.inject({
        method: 'POST',
        url: '/api/v1/customers',
        headers: { ...admin, ...typeHeader() },
        payload: encode(customer()),
      });
      expectEnvelope(res, 415, 'UNSUPPORTED_MEDIA_TYPE');
      expect(await customers()).toBe(before);
    });

    it('should answer POST /api/v1/auth/signin with 415 UNSUPPORTED_MEDIA_TYPE', async () => {
      const res = await t.app.inject({
        method: 'POST',
        url: '/api/v1/auth/signin',
        headers: { 'x-tenant-id': tenantHeader(TENANT.acme), ...typeHeader() },
        payload: encode(signinBody),
      });
      expectEnvelope(res, 415, 'UNSUPPORTED_MEDIA_TYPE');
      expect(res.body).not.toContain('token');
    });
  });

  it('should answer a JSON body that is not valid UTF-8 with 400 VALIDATION_ERROR and store nothing', async () => {
    const before = await customers();
    // {"name":"\xff","email":"…","tier":"silver"}: 0xff is never part of UTF-8.
    const body = Buffer.concat([
      Buffer.from('{"name":"'),
      Buffer.from([0xff]),
      Buffer.from(`","email":"bad-utf8-${Date.now()}@acme.example","tier":"silver"}`),
    ]);
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/customers',
      headers: { ...admin, 'content-type': 'application/json' },
      payload: body,
    });
    expectEnvelope(res, 400, 'VALIDATION_ERROR');
    expect(JSON.parse(res.body).error.message).toMatch(/not valid UTF-8/);
    expect(await customers()).toBe(before);
  });

  it.each([
    ['a lone 0xff', [0x7b, 0x22, 0x6e, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]],
    ['a truncated sequence', [0x7b, 0x22, 0x6e, 0x22, 0x3a, 0x22, 0xe2, 0x82, 0x22, 0x7d]],
    ['an overlong encoding of "/"', [0x7b, 0x22, 0x6e, 0x22, 0x3a, 0x22, 0xc0, 0xaf, 0x22, 0x7d]],
    ['a UTF-16 surrogate in UTF-8', [0x7b, 0x22, 0x6e, 0x22, 0x3a, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x7d]],
  ])('should answer sign-in with %s in the body with 400 VALIDATION_ERROR', async (_label, bytes) => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/signin',
      headers: { 'x-tenant-id': tenantHeader(TENANT.acme), 'content-type': 'application/json' },
      payload: Buffer.from(bytes),
    });
    expectEnvelope(res, 400, 'VALIDATION_ERROR');
    expect(JSON.parse(res.body).error.message).toMatch(/not valid UTF-8/);
  });

  it.each([
    'application/json',
    'application/json; charset=UTF-8',
    'application/json;charset="utf-8"',
    'Application/JSON; Charset=utf8',
  ])('should accept %s and store the text as sent', async (contentType) => {
    const before = await customers();
    const body = { ...customer(), name: `Grüße ${serial} 😀` };
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/customers',
      headers: { ...admin, 'content-type': contentType },
      payload: Buffer.from(JSON.stringify(body), 'utf8'),
    });
    expect(res.statusCode).toBe(201);
    expect(res.json().data.name).toBe(body.name);
    expect(await customers()).toBe(before + 1);
  });

  it('should accept sign-in with application/json; charset=UTF-8', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/signin',
      headers: {
        'x-tenant-id': tenantHeader(TENANT.acme),
        'content-type': 'application/json; charset=UTF-8',
      },
      payload: JSON.stringify(signinBody),
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().data.token).toEqual(expect.any(String));
  });

  describe('requests without a body', () => {
    it.each(['text/plain', 'application/x-www-form-urlencoded', 'application/json; charset=utf-16'])(
      'should not answer 415 to a GET or a DELETE sent with content-type %s and no body',
      async (contentType) => {
        const list = await t.app.inject({
          method: 'GET',
          url: '/api/v1/customers?limit=1',
          headers: { ...admin, 'content-type': contentType },
        });
        expect(list.statusCode).toBe(200);
        const created = await t.app.inject({
          method: 'POST',
          url: '/api/v1/customers',
          headers: admin,
          payload: customer(),
        });
        expect(created.statusCode).toBe(201);
        const res = await t.app.inject({
          method: 'DELETE',
          url: `/api/v1/customers/${created.json().data.id}`,
          headers: { ...admin, 'content-type': contentType },
        });
        expect(res.statusCode).toBe(200);
        expect(res.json().deletedAt).toEqual(expect.any(String));
      },
    );

    it('should answer a POST without a body with the route validation (400), not 415', async () => {
      const res = await t.app.inject({
        method: 'POST',
        url: '/api/v1/customers',
        headers: { ...admin, 'content-type': 'text/plain' },
      });
      expectEnvelope(res, 400, 'VALIDATION_ERROR');
    });
  });

  describe('over a socket (chunked bodies, which inject does not send)', () => {
    let port: number;

    beforeAll(async () => {
      await t.app.listen({ port: 0, host: '127.0.0.1' });
      port = (t.app.getHttpServer().address() as AddressInfo).port;
    });

    /** A request with `Transfer-Encoding: chunked` and the given chunks. */
    function chunked(
      method: string,
      path: string,
      headers: Record<string, string>,
      chunks: string[],
    ): Promise<Answer> {
      return new Promise((resolve, reject) => {
        const req = httpRequest(
          { host: '127.0.0.1', port, method, path, headers: { ...headers, 'transfer-encoding': 'chunked' } },
          (res) => {
            let body = '';
            res.setEncoding('utf8');
            res.on('data', (c: string) => (body += c));
            res.on('end', () => resolve({ statusCode: res.statusCode ?? 0, headers: res.headers, body }));
          },
        );
        req.on('error', reject);
        for (const c of chunks) req.write(c);
        req.end();
      });
    }

    it('should answer a chunked text/plain body with 415 and store nothing', async () => {
      const before = await customers();
      const res = await chunked('POST', '/api/v1/customers', { ...admin, 'content-type': 'text/plain' }, [
        JSON.stringify(customer()),
      ]);
      expectEnvelope(res, 415, 'UNSUPPORTED_MEDIA_TYPE');
      expect(await customers()).toBe(before);
    });

    it('should read a chunked text/plain request without content as no body', async () => {
      const res = await chunked('POST', '/api/v1/customers', { ...admin, 'content-type': 'text/plain' }, []);
      expectEnvelope(res, 400, 'VALIDATION_ERROR');
    });

    it('should accept a chunked JSON body', async () => {
      const json = JSON.stringify(customer());
      const res = await chunked(
        'POST',
        '/api/v1/customers',
        { ...admin, 'content-type': 'application/json' },
        [json.slice(0, 10), json.slice(10)],
      );
      expect(res.statusCode).toBe(201);
    });
  });
});
