import { createServer } from 'node:net';
import type { LightMyRequestResponse } from 'fastify';
import { authHeaders, DEMO_PASSWORD, signin, TENANT, tenantHeader } from '../support/auth';
import { ReadinessService } from '../../src/health/readiness.service';
import { listRoutes } from '../support/routes';
import { startTestApp, TestApp, waitFor } from '../support/test-app';

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

/** A comma-separated header as lower-case items ([] when absent). */
const list = (value: string | string[] | number | undefined): string[] =>
  ([] as (string | number)[])
    .concat(value ?? [])
    .join(',')
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);

function preflight(
  t: TestApp,
  url: string,
  origin: string,
  method = 'PUT',
  requestHeaders = 'x-tenant-id,authorization,content-type,if-match',
): Promise<LightMyRequestResponse> {
  return t.app.inject({
    method: 'OPTIONS',
    url,
    headers: {
      origin,
      'access-control-request-method': method,
      'access-control-request-headers': requestHeaders,
    },
  });
}

/** A preflight answered for an allowed origin under a credentialed mode (list, dev default). */
function expectCredentialedPreflight(res: LightMyRequestResponse, origin: string): void {
  expect(res.statusCode).toBe(204);
  expect(res.body).toBe('');
  expect(res.headers['access-control-allow-origin']).toBe(origin);
  expect(res.headers['access-control-allow-credentials']).toBe('true');
  expect(list(res.headers.vary)).toContain('origin');
  expect(list(res.headers['access-control-allow-methods'])).toEqual(
    expect.arrayContaining(['get', 'post', 'put', 'delete', 'options']),
  );
  expect(list(res.headers['access-control-allow-headers'])).toEqual(
    expect.arrayContaining([
      'x-tenant-id',
      'authorization',
      'content-type',
      'if-match',
      'if-none-match',
      'x-request-id',
    ]),
  );
  expect(res.headers['access-control-max-age']).toBe('600');
}

function expectNoCors(res: LightMyRequestResponse): void {
  expect(res.headers['access-control-allow-origin']).toBeUndefined();
  expect(res.headers['access-control-allow-credentials']).toBeUndefined();
  expect(res.headers['access-control-allow-methods']).toBeUndefined();
}

/** D44: CORS_ORIGINS; preflights answered before guards and the readiness gate; errors carry CORS. */
describe('CORS (D44)', () => {
  describe('development default (http(s)://localhost:* and *.localhost:*)', () => {
    const ORIGIN = 'http://localhost:5173';
    let t: TestApp;
    let token: string;

    beforeAll(async () => {
      t = await startTestApp({ label: 'cors-dev' });
      token = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
    });

    afterAll(async () => {
      await t?.close();
    });

    it.each(['/api/v1/customers', '/api/v1/customers/1', '/api/v1/auth/signin'])(
      'should answer a preflight to %s from an allowed origin with 204 before any guard',
      async (url) => {
        expectCredentialedPreflight(await preflight(t, url, ORIGIN), ORIGIN);
      },
    );

    it('should allow PATCH (a dataview row edit) and Last-Event-ID (a stream resume) in a preflight', async () => {
      const patch = await preflight(t, '/api/v1/dataviews/customers_grid/rows/1', ORIGIN, 'PATCH');
      expectCredentialedPreflight(patch, ORIGIN);
      expect(list(patch.headers['access-control-allow-methods'])).toContain('patch');
      const resume = await preflight(
        t,
        '/api/v1/customers/changes',
        ORIGIN,
        'GET',
        'x-tenant-id,authorization,last-event-id',
      );
      expectCredentialedPreflight(resume, ORIGIN);
      expect(list(resume.headers['access-control-allow-headers'])).toContain('last-event-id');
    });

    it('should allow in a preflight every method a route of the API answers', async () => {
      const methods = new Set(listRoutes(t.app).map((r) => r.method.toLowerCase()));
      expect(methods).toContain('patch');
      const res = await preflight(t, '/api/v1/customers', ORIGIN);
      expect(list(res.headers['access-control-allow-methods'])).toEqual(expect.arrayContaining([...methods]));
    });

    it.each(['https://localhost', 'http://app.localhost:8443', 'https://a.b.localhost:3000'])(
      'should allow %s by default in development',
      async (origin) => {
        expectCredentialedPreflight(await preflight(t, '/api/v1/customers', origin, 'DELETE'), origin);
      },
    );

    it.each([
      'http://evil.example',
      'http://localhost.evil.example',
      'http://evillocalhost:3000',
      'http://127.0.0.1:5173',
      'null',
    ])('should not allow a preflight from %s', async (origin) => {
      const res = await preflight(t, '/api/v1/customers', origin);
      expect(res.statusCode).not.toBe(204);
      expectNoCors(res);
    });

    it('should expose x-request-id and etag on a signed-in read from an allowed origin', async () => {
      const records = await t.app.inject({
        method: 'GET',
        url: '/api/v1/customers?limit=1',
        headers: authHeaders(TENANT.acme, token),
      });
      const id = records.json().data.records[0].id as number;
      const res = await t.app.inject({
        method: 'GET',
        url: `/api/v1/customers/${id}`,
        headers: { ...authHeaders(TENANT.acme, token), origin: ORIGIN },
      });
      expect(res.statusCode).toBe(200);
      expect(res.headers.etag).toEqual(expect.any(String));
      expect(res.headers['x-request-id']).toEqual(expect.any(String));
      expect(res.headers['access-control-allow-origin']).toBe(ORIGIN);
      expect(res.headers['access-control-allow-credentials']).toBe('true');
      expect(list(res.headers.vary)).toContain('origin');
      expect(list(res.headers['access-control-expose-headers'])).toEqual(
        expect.arrayContaining(['x-request-id', 'etag', 'retry-after', 'x-ratelimit-remaining']),
      );
    });

    it('should serve a simple request from a refused origin without CORS headers', async () => {
      const res = await t.app.inject({
        method: 'GET',
        url: '/api/v1/auth/profile',
        headers: { ...authHeaders(TENANT.acme, token), origin: 'http://evil.example' },
      });
      expect(res.statusCode).toBe(200);
      expectNoCors(res);
      expect(res.headers['access-control-expose-headers']).toBeUndefined();
    });

    it('should add no CORS headers to a request without Origin', async () => {
      const res = await t.app.inject({
        method: 'GET',
        url: '/api/v1/auth/profile',
        headers: authHeaders(TENANT.acme, token),
      });
      expect(res.statusCode).toBe(200);
      expectNoCors(res);
    });

    it('should carry allow-origin on a 401 without a token', async () => {
      const res = await t.app.inject({
        method: 'GET',
        url: '/api/v1/customers',
        headers: { 'x-tenant-id': tenantHeader(TENANT.acme), origin: ORIGIN },
      });
      expect(res.statusCode).toBe(401);
      expect(res.json().error.code).toBe('UNAUTHORIZED');
      expect(res.headers['access-control-allow-origin']).toBe(ORIGIN);
      expect(res.headers['access-control-allow-credentials']).toBe('true');
    });

    it('should carry allow-origin on a 400 without the tenant header', async () => {
      const res = await t.app.inject({
        method: 'POST',
        url: '/api/v1/auth/signin',
        headers: { origin: ORIGIN },
        payload: { email_id: 'admin@acme.test', password: DEMO_PASSWORD },
      });
      expect(res.statusCode).toBe(400);
      expect(res.json().error.code).toBe('VALIDATION_ERROR');
      expect(res.headers['access-control-allow-origin']).toBe(ORIGIN);
    });

    it('should carry allow-origin on the 404 of an unknown route', async () => {
      const res = await t.app.inject({ method: 'GET', url: '/no/such/route', headers: { origin: ORIGIN } });
      expect(res.statusCode).toBe(404);
      expect(res.json().error.code).toBe('NOT_FOUND');
      expect(res.headers['access-control-allow-origin']).toBe(ORIGIN);
    });

    it('should answer an OPTIONS request that is not a preflight as before (404 NOT_FOUND)', async () => {
      const res = await t.app.inject({
        method: 'OPTIONS',
        url: '/api/v1/customers',
        headers: { origin: ORIGIN },
      });
      expect(res.statusCode).toBe(404);
      expect(res.json().error.code).toBe('NOT_FOUND');
      expect(res.headers['access-control-allow-methods']).toBeUndefined();
    });
  });

  describe('CORS_ORIGINS=*', () => {
    let t: TestApp;

    beforeAll(async () => {
      t = await startTestApp({ label: 'cors-any', env: { CORS_ORIGINS: '*' } });
    });

    afterAll(async () => {
      await t?.close();
    });

    it('should answer a preflight from any origin with * and without credentials', async () => {
      const res = await preflight(t, '/api/v1/customers', 'https://anywhere.example');
      expect(res.statusCode).toBe(204);
      expect(res.headers['access-control-allow-origin']).toBe('*');
      expect(res.headers['access-control-allow-credentials']).toBeUndefined();
      expect(list(res.headers['access-control-allow-headers'])).toEqual(
        expect.arrayContaining(['x-tenant-id', 'authorization', 'if-match', 'if-none-match']),
      );
      expect(list(res.headers['access-control-allow-methods'])).toEqual(
        expect.arrayContaining(['put', 'delete']),
      );
    });

    it('should answer an actual request (here a 400) with * and without credentials', async () => {
      const res = await t.app.inject({
        method: 'GET',
        url: '/api/v1/customers',
        headers: { origin: 'https://anywhere.example' },
      });
      expect(res.statusCode).toBe(400);
      expect(res.headers['access-control-allow-origin']).toBe('*');
      expect(res.headers['access-control-allow-credentials']).toBeUndefined();
      expect(list(res.headers['access-control-expose-headers'])).toEqual(
        expect.arrayContaining(['x-request-id', 'etag']),
      );
    });
  });

  describe('CORS_ORIGINS as a list', () => {
    let t: TestApp;

    beforeAll(async () => {
      t = await startTestApp({
        label: 'cors-list',
        env: { CORS_ORIGINS: 'https://app.example.com, http://localhost:4200/' },
      });
    });

    afterAll(async () => {
      await t?.close();
    });

    it.each(['https://app.example.com', 'http://localhost:4200'])('should allow %s', async (origin) => {
      expectCredentialedPreflight(await preflight(t, '/api/v1/auth/signin', origin, 'POST'), origin);
    });

    it.each([
      'https://other.example.com',
      'http://app.example.com',
      'https://app.example.com.evil.example',
      'https://app.example.com:8443',
      'http://localhost:5173',
    ])('should refuse %s', async (origin) => {
      const res = await preflight(t, '/api/v1/auth/signin', origin, 'POST');
      expect(res.statusCode).not.toBe(204);
      expectNoCors(res);
    });
  });

  describe('production default (no CORS_ORIGINS)', () => {
    let t: TestApp;

    beforeAll(async () => {
      t = await startTestApp({
        label: 'cors-prod',
        env: { NODE_ENV: 'production', DEMO_PASSWORD: 'Cors-Test-Password-1' },
      });
    });

    afterAll(async () => {
      await t?.close();
    });

    it.each(['http://localhost:5173', 'https://app.example.com'])(
      'should allow no origin (%s)',
      async (origin) => {
        const pre = await preflight(t, '/api/v1/customers', origin);
        expect(pre.statusCode).not.toBe(204);
        expectNoCors(pre);
        const res = await t.app.inject({
          method: 'GET',
          url: '/api/v1/customers',
          headers: { 'x-tenant-id': tenantHeader(TENANT.acme), origin },
        });
        expect(res.statusCode).toBe(401);
        expectNoCors(res);
      },
    );
  });

  describe('during the readiness hold (spec §3.3)', () => {
    const ORIGIN = 'http://localhost:3000';
    let t: TestApp;

    beforeAll(async () => {
      const port = await freePort();
      t = await startTestApp({
        label: 'cors-gate',
        waitForStartup: false,
        env: {
          CACHE_URL: `redis://127.0.0.1:${port}`,
          CACHE_STARTUP_MAX_ATTEMPTS: '200',
          CACHE_STARTUP_RETRY_MS: '100',
        },
      });
      // Only the cache is missing: the database side of start-up is done, so closing the app at
      // the end does not race a database still being prepared.
      const readiness = t.app.get(ReadinessService);
      await waitFor(async () => readiness.snapshot().externalDbs);
      expect(readiness.ready).toBe(false);
    });

    afterAll(async () => {
      await t?.close();
    });

    it('should answer a preflight with 204 while other requests are held', async () => {
      expectCredentialedPreflight(await preflight(t, '/api/v1/customers', ORIGIN, 'GET'), ORIGIN);
    });

    it('should answer an actual request with 503 NOT_READY carrying allow-origin', async () => {
      const res = await t.app.inject({
        method: 'GET',
        url: '/api/v1/customers',
        headers: { 'x-tenant-id': tenantHeader(TENANT.acme), origin: ORIGIN },
      });
      expect(res.statusCode).toBe(503);
      expect(res.json().error.code).toBe('NOT_READY');
      expect(res.headers['retry-after']).toBe('5');
      expect(res.headers['access-control-allow-origin']).toBe(ORIGIN);
      expect(res.headers['access-control-allow-credentials']).toBe('true');
      expect(list(res.headers['access-control-expose-headers'])).toEqual(
        expect.arrayContaining(['retry-after', 'x-request-id']),
      );
    });

    it('should give a refused origin the 503 without CORS headers', async () => {
      const res = await preflight(t, '/api/v1/customers', 'http://evil.example');
      expect(res.statusCode).toBe(503);
      expectNoCors(res);
    });
  });
});
