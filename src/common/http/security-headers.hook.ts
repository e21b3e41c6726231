import type { FastifyInstance } from 'fastify';
import helmet, { strictTransportSecurity, type HelmetOptions } from 'helmet';
import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * Security headers (issue 21 #6), computed by helmet once at start-up, and `Cache-Control: no-store`.
 *
 * Every answer carries helmet's set: `X-Content-Type-Options: nosniff`, `X-Frame-Options: DENY`,
 * `Referrer-Policy: no-referrer`, `Cross-Origin-Opener-Policy` and `-Resource-Policy: same-origin`,
 * `Origin-Agent-Cluster`, `X-DNS-Prefetch-Control: off`, `X-Download-Options: noopen`,
 * `X-Permitted-Cross-Domain-Policies: none`, `X-XSS-Protection: 0`, and a Content-Security-Policy:
 *  - API answers (JSON, downloads, errors): nothing may load or frame them, `default-src 'none';
 *    frame-ancestors 'none'` (what OWASP recommends for an API);
 *  - the HTML pages — Swagger UI under /api-docs, the reference page at / and /ui/ outside
 *    production — a page policy: scripts, styles, images, fonts and fetches from the service's own
 *    origin only; inline styles (Swagger UI's page has `<style>` blocks), `data:` images (Swagger
 *    UI's icons, the tenant's logo); no inline script, no plugin, no framing.
 * No `upgrade-insecure-requests`: a service reached over plain HTTP inside a network would have
 * every request of its pages rewritten to HTTPS.
 *
 * HSTS only on a request that came over TLS as Fastify sees it (`request.protocol`: the socket,
 * or `X-Forwarded-Proto` from a proxy TRUST_PROXY trusts — a client's own header is ignored), and
 * only with HSTS_MAX_AGE_S > 0: over plain HTTP browsers ignore it, and behind a TLS-terminating
 * proxy the service learns of TLS only from that proxy.
 *
 * `Cache-Control: no-store` on every answer unless its route sets its own (configuration delivery's
 * `private, no-cache` for ETag revalidation, D50; downloads' `private, no-store`; static assets):
 * answers carry tenant data, tokens or errors about them, none of which a shared or browser cache
 * should keep.
 *
 * Why helmet itself rather than @fastify/helmet: the plugin builds helmet's middleware anew on
 * every request, in two hooks (one async), and sets the headers on the raw response. Measured on a
 * bare Fastify route (CPU per request, interleaved rounds): +29 µs with @fastify/helmet against
 * +4 µs for the same headers computed once by helmet and set with `reply.headers` — on a /healthz
 * that costs ~36 µs in all. The headers and their values are helmet's either way.
 */
export interface SecurityHeadersConfig {
  /** Strict-Transport-Security max-age for requests over TLS; 0 = never sent. */
  hstsMaxAgeS: number;
}

/** The policy of API answers: they are data, never documents that load or frame anything. */
const API_OPTIONS: HelmetOptions = {
  contentSecurityPolicy: {
    useDefaults: false,
    directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] },
  },
  frameguard: { action: 'deny' },
  // Added per request, over TLS only (below).
  strictTransportSecurity: false,
};

/** The policy of the service's HTML pages (Swagger UI, the reference page). */
const PAGE_OPTIONS: HelmetOptions = {
  ...API_OPTIONS,
  contentSecurityPolicy: {
    useDefaults: false,
    directives: {
      defaultSrc: ["'self'"],
      baseUri: ["'self'"],
      connectSrc: ["'self'"],
      fontSrc: ["'self'", 'data:'],
      formAction: ["'self'"],
      frameAncestors: ["'none'"],
      imgSrc: ["'self'", 'data:'],
      objectSrc: ["'none'"],
      scriptSrc: ["'self'"],
      scriptSrcAttr: ["'none'"],
      styleSrc: ["'self'", "'unsafe-inline'"],
    },
  },
};

type Middleware = (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void;

/** The headers a helmet middleware sets, recorded once (its options hold no per-request part). */
export function headersOf(middleware: Middleware): Record<string, string> {
  const headers: Record<string, string> = {};
  const recorder = {
    setHeader: (name: string, value: string | number) => {
      headers[name.toLowerCase()] = String(value);
    },
    removeHeader: () => undefined,
  } as unknown as ServerResponse;
  // helmet 8 throws a bad option when the middleware is built, never through `next`.
  middleware({} as IncomingMessage, recorder, () => undefined);
  return headers;
}

/** The header sets of API answers and of HTML pages. */
export const API_HEADERS = headersOf(helmet(API_OPTIONS));
export const PAGE_HEADERS = headersOf(helmet(PAGE_OPTIONS));

/** Route URLs (patterns) of HTML pages and their assets. */
export function isPageRoute(url: string | undefined): boolean {
  return (
    url !== undefined &&
    (url === '/' || url === '/api-docs' || url.startsWith('/api-docs/') || url.startsWith('/ui/'))
  );
}

/**
 * One `onRequest` hook (callback style, no promise): the header set of the route, Cache-Control,
 * HSTS over TLS. Installed right after CORS's hook, so every answer but a preflight's — the
 * readiness gate's and load shedding's 503s, 404s, errors of every route — carries them, and a
 * route's own Cache-Control (set later) wins. `exempt` routes (the probes: read by orchestrators,
 * never rendered by a browser, and the cheapest answers of the service, where the ~4 µs of the
 * headers would be a tenth of the cost) get none.
 */
export function installSecurityHeaders(
  fastify: FastifyInstance,
  config: SecurityHeadersConfig,
  exempt: (routeUrl: string | undefined) => boolean = () => false,
): void {
  const hsts =
    config.hstsMaxAgeS > 0
      ? headersOf(strictTransportSecurity({ maxAge: config.hstsMaxAgeS, includeSubDomains: true }))[
          'strict-transport-security'
        ]
      : undefined;
  fastify.addHook('onRequest', (request, reply, done) => {
    if (exempt(request.routeOptions.url)) {
      done();
      return;
    }
    void reply
      .headers(isPageRoute(request.routeOptions.url) ? PAGE_HEADERS : API_HEADERS)
      .header('cache-control', 'no-store');
    if (hsts !== undefined && request.protocol === 'https')
      void reply.header('strict-transport-security', hsts);
    done();
  });
}
