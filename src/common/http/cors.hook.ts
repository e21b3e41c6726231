import type { FastifyCorsOptions, FastifyCorsOptionsDelegateCallback } from '@fastify/cors';
import type { FastifyRequest } from 'fastify';
import type { AppConfig } from '../../config/config.schema';

/** D44: the request headers a browser may send cross-origin. */
export const CORS_ALLOWED_HEADERS = [
  'x-tenant-id',
  'authorization',
  'content-type',
  'if-match',
  'if-none-match',
  'x-request-id',
] as const;

/** D44: the answer headers a cross-origin script may read (besides the CORS-safelisted ones). */
export const CORS_EXPOSED_HEADERS = [
  'x-request-id',
  'etag',
  'retry-after',
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
] as const;

export const CORS_METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'OPTIONS'] as const;

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
 * The `@fastify/cors` options (D44), decided per request by a delegate:
 * - an origin that is not allowed (or no `Origin` at all) gets no CORS header (`origin: false`);
 *   the request itself is served as usual, browsers enforce the refusal;
 * - `any` answers `Access-Control-Allow-Origin: *` without credentials; `list` and
 *   `dev-localhost` echo the allowed origin with credentials (and `Vary: Origin`);
 * - only a real preflight is answered (204) in the hook; any other OPTIONS request goes on as
 *   before (the plugin's OPTIONS route hands it to the not-found handler), rather than getting
 *   the plugin's plain-text 400 "Invalid Preflight Request".
 *
 * Returns undefined when CORS is off (`none`): then the plugin is not registered at all.
 */
export function corsOptions(cors: AppConfig['cors']): FastifyCorsOptions | undefined {
  if (cors.mode === 'none') return undefined;
  const common: FastifyCorsOptions = {
    methods: [...CORS_METHODS],
    allowedHeaders: [...CORS_ALLOWED_HEADERS],
    exposedHeaders: [...CORS_EXPOSED_HEADERS],
    maxAge: CORS_MAX_AGE_S,
    optionsSuccessStatus: 204,
    strictPreflight: true,
  };
  const allowed: FastifyCorsOptions =
    cors.mode === 'any'
      ? { ...common, origin: '*', credentials: false }
      : { ...common, origin: true, credentials: true };
  const preflight: FastifyCorsOptions = { ...allowed, preflight: true };
  const simple: FastifyCorsOptions = { ...allowed, preflight: false };
  const refused: FastifyCorsOptions = { origin: false };

  const delegator: FastifyCorsOptionsDelegateCallback = (request, callback) => {
    if (!isOriginAllowed(cors, request.headers.origin)) return callback(null, refused);
    callback(null, isPreflight(request) ? preflight : simple);
  };
  return { hook: 'onRequest', delegator };
}
