import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AppConfig } from '../../config/config.schema';

/** D44: the request headers a browser may send cross-origin. */
export const CORS_ALLOWED_HEADERS = [
  'x-tenant-id',
  'authorization',
  'content-type',
  'if-match',
  'if-none-match',
  'x-request-id',
  // A live stream's resume point (D55): an SPA's fetch-based stream sends it on reconnect.
  'last-event-id',
] as const;

/** D44: the answer headers a cross-origin script may read (besides the CORS-safelisted ones). */
export const CORS_EXPOSED_HEADERS = [
  'x-request-id',
  'etag',
  'retry-after',
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
  // A download's file name (an export's attachment).
  'content-disposition',
] as const;

/** Every method a route of the API answers (PATCH: a dataview row's inline edit). */
export const CORS_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

/** How long a browser may cache a preflight answer, in seconds. */
export const CORS_MAX_AGE_S = 600;

/** The development default: http(s)://localhost or any *.localhost, on any port. */
const DEV_LOCALHOST = /^https?:\/\/(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)*localhost(?::\d{1,5})?$/i;

/** Whether a request's `Origin` may read the answers under the configured CORS mode. */
export function isOriginAllowed(cors: AppConfig['cors'], origin: string | undefined): boolean {
  if (origin === undefined || origin === '') return false;
  switch (cors.mode) {
    case 'none':
      return false;
    case 'any':
      return true;
    case 'dev-localhost':
      return DEV_LOCALHOST.test(origin);
    case 'list': {
      // Scheme and host of an origin are case-insensitive; browsers send them in lower case.
      const o = origin.toLowerCase();
      return cors.origins.some((allowed) => allowed.toLowerCase() === o);
    }
  }
}

/** A CORS preflight: OPTIONS with `Origin` and `Access-Control-Request-Method`. */
export function isPreflight(request: Pick<FastifyRequest, 'method' | 'headers'>): boolean {
  return (
    request.method === 'OPTIONS' &&
    request.headers.origin !== undefined &&
    request.headers['access-control-request-method'] !== undefined
  );
}

/**
 * D44's CORS as one Fastify `onRequest` hook, registered before every other hook (so a preflight is
 * answered while the readiness gate holds, and every answer — error envelopes included — carries
 * the headers of an allowed origin):
 * - every answer gets `Vary: Origin` (what an answer carries depends on the Origin);
 * - an origin that is not allowed (or no `Origin` at all) gets no CORS header; the request itself
 *   is served as usual, browsers enforce the refusal;
 * - `any` answers `Access-Control-Allow-Origin: *` without credentials; `list` and `dev-localhost`
 *   echo the allowed origin with `Access-Control-Allow-Credentials: true`; both expose
 *   CORS_EXPOSED_HEADERS;
 * - a real preflight (isPreflight) of an allowed origin is answered here: 204, the methods, the
 *   request headers and max-age; any other OPTIONS request goes on (to the 404 envelope).
 *
 * These are the answers @fastify/cors gave with a per-request delegate; written out, they cost a
 * header lookup for the common request without Origin instead of the plugin's two option merges
 * per request (about a twentieth of `/healthz`). Does nothing when CORS is off (`none`).
 */
export function installCors(fastify: FastifyInstance, cors: AppConfig['cors']): void {
  if (cors.mode === 'none') return;
  const credentials = cors.mode !== 'any';
  const exposed = CORS_EXPOSED_HEADERS.join(', ');
  const methods = CORS_METHODS.join(', ');
  const allowed = CORS_ALLOWED_HEADERS.join(', ');
  const maxAge = String(CORS_MAX_AGE_S);
  fastify.addHook('onRequest', (request, reply, done) => {
    void reply.header('vary', 'Origin');
    const origin = request.headers.origin;
    if (origin === undefined || !isOriginAllowed(cors, origin)) return done();
    void reply.header('access-control-allow-origin', credentials ? origin : '*');
    if (credentials) void reply.header('access-control-allow-credentials', 'true');
    void reply.header('access-control-expose-headers', exposed);
    if (!isPreflight(request)) return done();
    void reply
      .code(204)
      .header('access-control-allow-methods', methods)
      .header('access-control-allow-headers', allowed)
      .header('access-control-max-age', maxAge)
      .header('content-length', '0')
      .send();
  });
}
