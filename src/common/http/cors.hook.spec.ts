import type { FastifyCorsOptions, FastifyCorsOptionsDelegateCallback } from '@fastify/cors';
import type { FastifyRequest } from 'fastify';
import type { AppConfig } from '../../config/config.schema';
import { corsOptions, isOriginAllowed, isPreflight } from './cors.hook';

type Cors = AppConfig['cors'];
const dev: Cors = { mode: 'dev-localhost', origins: [] };
const any: Cors = { mode: 'any', origins: [] };
const none: Cors = { mode: 'none', origins: [] };
const listed: Cors = { mode: 'list', origins: ['https://app.example.com', 'http://localhost:4200'] };

function request(method: string, headers: Record<string, string>): FastifyRequest {
  return { method, headers } as unknown as FastifyRequest;
}

function resolve(cors: Cors, req: FastifyRequest): FastifyCorsOptions | undefined {
  const delegator = corsOptions(cors)?.delegator as FastifyCorsOptionsDelegateCallback;
  let out: FastifyCorsOptions | undefined;
  delegator(req, (err, options) => {
    if (err) throw err;
    out = options;
  });
  return out;
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

describe('corsOptions', () => {
  const preflightHeaders = { origin: 'http://localhost:3000', 'access-control-request-method': 'PUT' };

  it('should register nothing when CORS is off', () => {
    expect(corsOptions(none)).toBeUndefined();
  });

  it('should run in the onRequest hook', () => {
    expect(corsOptions(dev)?.hook).toBe('onRequest');
  });

  it('should echo an allowed origin with credentials and answer its preflight', () => {
    const o = resolve(dev, request('OPTIONS', preflightHeaders));
    expect(o).toMatchObject({ origin: true, credentials: true, preflight: true, maxAge: 600 });
    expect(o?.allowedHeaders).toEqual(
      expect.arrayContaining([
        'x-tenant-id',
        'authorization',
        'content-type',
        'if-match',
        'if-none-match',
        'x-request-id',
      ]),
    );
    expect(o?.exposedHeaders).toEqual(
      expect.arrayContaining(['x-request-id', 'etag', 'retry-after', 'x-ratelimit-remaining']),
    );
    expect(o?.methods).toEqual(['GET', 'POST', 'PUT', 'DELETE', 'OPTIONS']);
  });

  it('should answer * without credentials in any mode', () => {
    expect(resolve(any, request('OPTIONS', preflightHeaders))).toMatchObject({
      origin: '*',
      credentials: false,
      preflight: true,
    });
  });

  it('should not treat an OPTIONS request without Access-Control-Request-Method as a preflight', () => {
    expect(resolve(dev, request('OPTIONS', { origin: 'http://localhost:3000' }))).toMatchObject({
      origin: true,
      preflight: false,
    });
  });

  it('should turn CORS off for a refused origin or no origin', () => {
    expect(resolve(dev, request('OPTIONS', { ...preflightHeaders, origin: 'http://evil.example' }))).toEqual({
      origin: false,
    });
    expect(resolve(listed, request('GET', {}))).toEqual({ origin: false });
  });
});
