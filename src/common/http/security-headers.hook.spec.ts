import Fastify from 'fastify';
import { API_HEADERS, installSecurityHeaders, isPageRoute, PAGE_HEADERS } from './security-headers.hook';

describe('security headers (issue 21 #6)', () => {
  it("should compute helmet's headers once, with a strict policy for API answers", () => {
    expect(API_HEADERS).toMatchObject({
      'content-security-policy': "default-src 'none';frame-ancestors 'none'",
      'x-content-type-options': 'nosniff',
      'x-frame-options': 'DENY',
      'referrer-policy': 'no-referrer',
      'cross-origin-opener-policy': 'same-origin',
      'cross-origin-resource-policy': 'same-origin',
    });
    expect(API_HEADERS['strict-transport-security']).toBeUndefined();
  });

  it('should let pages load their own scripts, styles, images and fetches, and nothing else', () => {
    const csp = PAGE_HEADERS['content-security-policy'];
    expect(csp.split(';')).toEqual(
      expect.arrayContaining([
        "default-src 'self'",
        "script-src 'self'",
        "connect-src 'self'",
        "img-src 'self' data:",
        "style-src 'self' 'unsafe-inline'",
        "frame-ancestors 'none'",
        "object-src 'none'",
      ]),
    );
    expect(csp).not.toMatch(/unsafe-eval|script-src[^;]*unsafe-inline|upgrade-insecure-requests/);
  });

  it.each([
    ['/', true],
    ['/api-docs', true],
    ['/api-docs/*', true],
    ['/ui/app.js', true],
    ['/api/v1/:entity_code', false],
    ['/api-docsx', false],
    ['/healthz', false],
    [undefined, false],
  ])('should treat route %p as a page: %p', (url, page) => {
    expect(isPageRoute(url)).toBe(page);
  });

  describe('installSecurityHeaders', () => {
    async function answer(hstsMaxAgeS: number, headers: Record<string, string> = {}, trustProxy = false) {
      const fastify = Fastify({ trustProxy });
      installSecurityHeaders(fastify, { hstsMaxAgeS });
      fastify.get('/data', async () => ({ ok: true }));
      fastify.get('/own', async (_request, reply) =>
        reply.header('cache-control', 'private, no-cache').send('x'),
      );
      fastify.get('/api-docs', async (_request, reply) => reply.type('text/html').send('<p>'));
      const get = (url: string) => fastify.inject({ method: 'GET', url, headers });
      const out = {
        data: await get('/data'),
        own: await get('/own'),
        page: await get('/api-docs'),
        missing: await get('/nope'),
      };
      await fastify.close();
      return out;
    }

    it('should set no-store unless the route sets its own Cache-Control, and the set on 404s too', async () => {
      const { data, own, page, missing } = await answer(0);
      expect(data.headers['cache-control']).toBe('no-store');
      expect(own.headers['cache-control']).toBe('private, no-cache');
      expect(page.headers['content-security-policy']).toBe(PAGE_HEADERS['content-security-policy']);
      expect(missing.statusCode).toBe(404);
      expect(missing.headers).toMatchObject({
        'cache-control': 'no-store',
        'x-content-type-options': 'nosniff',
      });
      expect(missing.headers['content-security-policy']).toBe(API_HEADERS['content-security-policy']);
    });

    it('should leave exempt routes (the probes) alone', async () => {
      const fastify = Fastify();
      installSecurityHeaders(fastify, { hstsMaxAgeS: 0 }, (url) => url === '/healthz');
      fastify.get('/healthz', async () => ({ status: 'ok' }));
      const res = await fastify.inject({ method: 'GET', url: '/healthz?x=1' });
      expect(res.headers['cache-control']).toBeUndefined();
      expect(res.headers['content-security-policy']).toBeUndefined();
      await fastify.close();
    });

    it('should send HSTS only over TLS as told by a trusted proxy, and never with a max-age of 0', async () => {
      const plain = await answer(31536000);
      expect(plain.data.headers['strict-transport-security']).toBeUndefined();
      const untrusted = await answer(31536000, { 'x-forwarded-proto': 'https' }, false);
      expect(untrusted.data.headers['strict-transport-security']).toBeUndefined();
      const proxied = await answer(31536000, { 'x-forwarded-proto': 'https' }, true);
      expect(proxied.data.headers['strict-transport-security']).toBe('max-age=31536000; includeSubDomains');
      const off = await answer(0, { 'x-forwarded-proto': 'https' }, true);
      expect(off.data.headers['strict-transport-security']).toBeUndefined();
    });
  });
});
