import fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import type { AppConfig } from '../../config/config.schema';
import { installCors, isOriginAllowed, isPreflight } from './cors.hook';

type Cors = AppConfig['cors'];
const dev: Cors = { mode: 'dev-localhost', origins: [] };
const any: Cors = { mode: 'any', origins: [] };
const none: Cors = { mode: 'none', origins: [] };
const listed: Cors = { mode: 'list', origins: ['https://app.example.com', 'http://localhost:4200'] };

function request(method: string, headers: Record<string, string>): FastifyRequest {
  return { method, headers } as unknown as FastifyRequest;
}

describe('isOriginAllowed (D44)', () => {
  it.each([
    'http://localhost',
    'https://localhost:5173',
    'http://app.localhost:8080',
    'http://a.b-c.localhost',
    'HTTP://LOCALHOST:3000',
  ])('should allow %s in development', (origin) => {
    expect(isOriginAllowed(dev, origin)).toBe(true);
  });

  it.each([
    'http://localhost.evil.example',
    'http://evillocalhost',
    'http://127.0.0.1:3000',
    'ftp://localhost',
    'http://localhost:3000/path',
    'null',
    '',
  ])('should refuse %p in development', (origin) => {
    expect(isOriginAllowed(dev, origin)).toBe(false);
  });

  it('should allow exactly the listed origins', () => {
    expect(isOriginAllowed(listed, 'https://app.example.com')).toBe(true);
    expect(isOriginAllowed(listed, 'https://APP.example.com')).toBe(true);
    expect(isOriginAllowed(listed, 'http://localhost:4200')).toBe(true);
    expect(isOriginAllowed(listed, 'http://app.example.com')).toBe(false);
    expect(isOriginAllowed(listed, 'https://app.example.com:444')).toBe(false);
    expect(isOriginAllowed(listed, 'http://localhost:4201')).toBe(false);
  });

  it('should allow any origin with *, and none with none', () => {
    expect(isOriginAllowed(any, 'https://x.example')).toBe(true);
    expect(isOriginAllowed(none, 'http://localhost:3000')).toBe(false);
    expect(isOriginAllowed(any, undefined)).toBe(false);
  });
});

describe('isPreflight', () => {
  it('should need OPTIONS, Origin and Access-Control-Request-Method', () => {
    const h = { origin: 'http://localhost', 'access-control-request-method': 'PUT' };
    expect(isPreflight(request('OPTIONS', h))).toBe(true);
    expect(isPreflight(request('GET', h))).toBe(false);
    expect(isPreflight(request('OPTIONS', { origin: 'http://localhost' }))).toBe(false);
    expect(isPreflight(request('OPTIONS', { 'access-control-request-method': 'PUT' }))).toBe(false);
  });
});

describe(installCors.name, () => {
  const preflightHeaders = { origin: 'http://localhost:3000', 'access-control-request-method': 'PUT' };

  async function server(cors: Cors): Promise<FastifyInstance> {
    const app = fastify();
    installCors(app, cors);
    app.get('/x', async () => ({ ok: true }));
    await app.ready();
    return app;
  }

  it('should add nothing at all when CORS is off', async () => {
    const app = await server(none);
    const res = await app.inject({ url: '/x', headers: { origin: 'http://localhost:3000' } });
    expect(res.headers.vary).toBeUndefined();
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
    await app.close();
  });

  it('should echo an allowed origin with credentials and answer its preflight', async () => {
    const app = await server(dev);
    const res = await app.inject({ method: 'OPTIONS', url: '/x', headers: preflightHeaders });
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
    expect(res.headers).toMatchObject({
      vary: 'Origin',
      'access-control-allow-origin': 'http://localhost:3000',
      'access-control-allow-credentials': 'true',
      'access-control-allow-methods': 'GET, POST, PUT, PATCH, DELETE, OPTIONS',
      'access-control-max-age': '600',
      'content-length': '0',
    });
    expect(String(res.headers['access-control-allow-headers']).split(', ')).toEqual(
      expect.arrayContaining([
        'x-tenant-id',
        'authorization',
        'content-type',
        'if-match',
        'if-none-match',
        'x-request-id',
      ]),
    );
    const simple = await app.inject({ url: '/x', headers: { origin: 'http://localhost:3000' } });
    expect(simple.statusCode).toBe(200);
    expect(simple.headers['access-control-allow-origin']).toBe('http://localhost:3000');
    expect(String(simple.headers['access-control-expose-headers']).split(', ')).toEqual(
      expect.arrayContaining(['x-request-id', 'etag', 'retry-after', 'x-ratelimit-remaining']),
    );
    expect(simple.headers['access-control-allow-methods']).toBeUndefined();
    await app.close();
  });

  it('should answer * without credentials in any mode', async () => {
    const app = await server(any);
    const res = await app.inject({ method: 'OPTIONS', url: '/x', headers: preflightHeaders });
    expect(res.statusCode).toBe(204);
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(res.headers['access-control-allow-credentials']).toBeUndefined();
    await app.close();
  });

  it('should not treat an OPTIONS request without Access-Control-Request-Method as a preflight', async () => {
    const app = await server(dev);
    const res = await app.inject({
      method: 'OPTIONS',
      url: '/x',
      headers: { origin: 'http://localhost:3000' },
    });
    expect(res.statusCode).toBe(404);
    expect(res.headers['access-control-allow-origin']).toBe('http://localhost:3000');
    await app.close();
  });

  it('should give a refused origin, or no origin, no CORS header but Vary: Origin', async () => {
    const app = await server(listed);
    for (const headers of [{ ...preflightHeaders, origin: 'http://evil.example' }, {}]) {
      const res = await app.inject({ method: 'GET', url: '/x', headers });
      expect(res.statusCode).toBe(200);
      expect(res.headers.vary).toBe('Origin');
      expect(Object.keys(res.headers).filter((h) => h.startsWith('access-control-'))).toEqual([]);
    }
    await app.close();
  });
});
