import type { IncomingMessage } from 'node:http';
import type { LoggerService } from '@nestjs/common';
import type { Params } from 'nestjs-pino';
import type { AppConfig } from '../config/config.schema';
import { requestScope } from './request-scope';

/** Paths whose requests are not logged: probes and metrics scrapes (STYLE). */
const QUIET_PATHS = new Set(['/healthz', '/readyz', '/livez', '/metrics']);

/**
 * Secrets are redacted at the top level of a log line and one level down (STYLE, D13). Request
 * headers are not logged at all (see the req serializer). Deeper wildcards made pino-http's
 * per-request child logger the most expensive part of a request, so they are not used.
 */
const SECRET_KEYS = [
  'password',
  'password_hash',
  'usr_password_hash',
  'token',
  'otp',
  'session',
  'secret',
  'jwtSecret',
  'authorization',
  'x-tenant-id',
  'cookie',
];
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers["x-tenant-id"]',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  ...SECRET_KEYS.flatMap((k) => [`["${k}"]`, `*["${k}"]`]),
];

/**
 * Query parameters whose values are secrets (a token, password, key or OTP put into a URL): their
 * values are replaced by `[redacted]` wherever a URL is logged. Names are compared in lower case;
 * a name containing one of SECRET_QUERY_PARTS counts too (`reset_token`, `newPassword`).
 */
const SECRET_QUERY_NAMES = new Set([
  'jwt',
  'otp',
  'session',
  'sessionid',
  'session_id',
  'sid',
  'pwd',
  'pass',
  'auth',
  'authorization',
  'apikey',
  'api_key',
  'key',
  'signature',
  'sig',
  'x-tenant-id',
]);
const SECRET_QUERY_PARTS = ['token', 'password', 'passwd', 'secret', 'credential'];
export const REDACTED = '[redacted]';

function isSecretQueryName(raw: string): boolean {
  let name = raw;
  if (name.includes('%') || name.includes('+')) {
    try {
      name = decodeURIComponent(name.replace(/\+/g, ' '));
    } catch {
      return true; // undecodable: do not guess, hide it
    }
  }
  name = name.trim().toLowerCase();
  if (name.endsWith('[]')) name = name.slice(0, -2);
  return SECRET_QUERY_NAMES.has(name) || SECRET_QUERY_PARTS.some((part) => name.includes(part));
}

/**
 * The URL with the values of secret query parameters (SECRET_QUERY_NAMES) replaced by
 * `[redacted]`; everything else, the parameters' order and names included, as it was. A URL
 * without a query string is returned as is (the common case costs one indexOf).
 */
export function redactUrl(url: string): string;
export function redactUrl(url: string | undefined): string | undefined;
export function redactUrl(url: string | undefined): string | undefined {
  if (url === undefined) return url;
  const q = url.indexOf('?');
  if (q === -1) return url;
  let changed = false;
  const params = url
    .slice(q + 1)
    .split('&')
    .map((param) => {
      const eq = param.indexOf('=');
      const name = eq === -1 ? param : param.slice(0, eq);
      if (eq === -1 || eq === param.length - 1 || !isSecretQueryName(name)) return param;
      changed = true;
      return `${name}=${REDACTED}`;
    });
  return changed ? `${url.slice(0, q)}?${params.join('&')}` : url;
}

/**
 * Secret query values in any URL a log line carries outside the access log: a top-level `url` field
 * (the exception filter's "Unhandled error") and a message string (the tenant proxy's access line,
 * `METHOD /path?query STATUS`). A pino `logMethod` hook: one typeof check per argument when there
 * is nothing to do.
 */
function redactLoggedUrls(this: unknown, args: unknown[], method: (...a: unknown[]) => void): void {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (typeof arg === 'string') {
      if (arg.includes('?')) args[i] = arg.replace(/\S*\?\S*/g, (word) => redactUrl(word));
    } else if (i === 0 && arg !== null && typeof arg === 'object') {
      const url = (arg as { url?: unknown }).url;
      if (typeof url === 'string' && url.includes('?')) {
        const redacted = redactUrl(url);
        if (redacted !== url) args[i] = { ...arg, url: redacted };
      }
    }
  }
  method.apply(this, args);
}

/** Request-scoped fields that guards put on the raw request for the access log. */
export interface LogContext {
  tenantId?: string;
  userId?: string | number;
}

type RawRequest = IncomingMessage & { id?: string; logContext?: LogContext };

export function setLogContext(raw: IncomingMessage, ctx: LogContext): void {
  Object.assign(raw as RawRequest, {
    logContext: { ...(raw as RawRequest).logContext, ...ctx },
  });
  requestScope.set(ctx);
}

/** The log fields of the async-local scope (a request, or a worker's job). */
function scopeLogFields(): { requestId?: string; tenantId?: string; userId?: string | number } {
  const scope = requestScope.current();
  if (!scope) return {};
  const fields: { requestId?: string; tenantId?: string; userId?: string | number } = {
    requestId: scope.requestId,
  };
  if (scope.tenantId !== undefined) fields.tenantId = scope.tenantId;
  if (scope.userId !== undefined) fields.userId = scope.userId;
  return fields;
}

/** The request-scoped keys of a log line, as they stand now (the guards add tenant and user late). */
export function requestLogFields(raw: IncomingMessage): {
  requestId?: string;
  tenantId?: string;
  userId?: string | number;
} {
  const { id, logContext } = raw as RawRequest;
  const fields: { requestId?: string; tenantId?: string; userId?: string | number } = {};
  if (id !== undefined) fields.requestId = id;
  if (logContext?.tenantId !== undefined) fields.tenantId = logContext.tenantId;
  if (logContext?.userId !== undefined) fields.userId = logContext.userId;
  return fields;
}

/** Middleware mounts may rewrite req.url; originalUrl is the path the client asked for. */
function pathOf(req: IncomingMessage & { originalUrl?: string }): string {
  return (req.originalUrl ?? req.url ?? '').split('?', 1)[0];
}

/** Level, redaction and format shared by the service's and the proxy's loggers. */
export function pinoBaseOptions(config: AppConfig) {
  return {
    level: config.log.level,
    redact: { paths: REDACT_PATHS, censor: REDACTED },
    hooks: { logMethod: redactLoggedUrls },
    transport: config.log.pretty
      ? {
          target: 'pino-pretty',
          options: { singleLine: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' },
        }
      : undefined,
  };
}

/** The raw request a per-request logger (and, by prototype, each of its children) belongs to. */
const REQUEST = Symbol('mtb.log.request');
type RequestLogger = { [REQUEST]?: IncomingMessage };

/**
 * requestId, tenantId and userId are written per line (pino `mixin`), never bound into a logger.
 * Binding them is what doubled keys: pino-http 11 calls customProps at the start of a request and
 * binds the result into the request's child logger; when the response is logged it calls
 * customProps again and, if the text differs (the guards have set tenantId and userId meanwhile),
 * binds the whole result again into a further child — `requestId` twice on every tenant-scoped
 * access line. And nestjs-pino 4 hands that same child logger to every `Logger` call during the
 * request, so a service naming `requestId` itself (the audit events) doubled it too. A pino
 * line is the call's object followed by the bound text, and nothing dedupes across the two; the
 * mixin's keys instead are merged into the call's object, so each key is written once.
 *
 * customProps only marks the request: pino-http creates the request's child logger right after
 * calling it, and `onChild` tags that child with the request, which the mixin reads at log time.
 */
export function pinoParams(config: AppConfig): Params {
  const marked = new WeakSet<IncomingMessage>();
  let pending: IncomingMessage | undefined;
  return {
    pinoHttp: {
      ...pinoBaseOptions(config),
      // Fastify's genReqId stores the id on the raw request; pino-http reuses req.id.
      autoLogging: { ignore: (req: IncomingMessage) => QUIET_PATHS.has(pathOf(req)) },
      customProps: (req: IncomingMessage) => {
        // Called again when the response is logged: nothing new then, so no further child.
        if (!marked.has(req)) {
          marked.add(req);
          pending = req;
        }
        return {};
      },
      onChild: (child) => {
        if (pending === undefined) return;
        (child as RequestLogger)[REQUEST] = pending;
        pending = undefined;
      },
      // The request's fields (a line of its own logger, e.g. the access line written when the
      // answer has gone), else those of the async-local scope (any code running for a request or a
      // worker's job).
      mixin: (_object, _level, logger) => {
        const req = (logger as RequestLogger)[REQUEST];
        return req === undefined ? scopeLogFields() : requestLogFields(req);
      },
      serializers: {
        req: (req: { id?: string; method?: string; url?: string }) => ({
          id: req.id,
          method: req.method,
          url: redactUrl(req.url),
        }),
        res: (res: { statusCode?: number }) => ({ statusCode: res.statusCode }),
      },
      customSuccessMessage: (req, res, responseTime) =>
        `${req.method} ${redactUrl(req.url)} ${res.statusCode} ${responseTime}ms`,
      customErrorMessage: (req, res) => `${req.method} ${redactUrl(req.url)} ${res.statusCode}`,
    },
  };
}

/** Nest's start-up chatter: a line per module and per route, useful when debugging only. */
const FRAMEWORK_CONTEXTS = new Set([
  'NestFactory',
  'InstanceLoader',
  'RoutesResolver',
  'RouterExplorer',
  'NestApplication',
]);

/**
 * The application logger with Nest's own start-up lines (module and route listings) demoted from
 * info to debug, so that at the default level start-up shows the banner and the service's own
 * progress (migrations, seed, connections, ready) rather than ~40 lines of framework listing.
 */
export class QuietFrameworkLogger implements LoggerService {
  constructor(private readonly inner: LoggerService) {}

  log(message: unknown, ...rest: unknown[]): void {
    const context = rest[rest.length - 1];
    if (typeof context === 'string' && FRAMEWORK_CONTEXTS.has(context)) {
      this.inner.debug?.(message, ...rest);
      return;
    }
    this.inner.log(message, ...rest);
  }

  error(message: unknown, ...rest: unknown[]): void {
    this.inner.error(message, ...rest);
  }

  warn(message: unknown, ...rest: unknown[]): void {
    this.inner.warn(message, ...rest);
  }

  debug(message: unknown, ...rest: unknown[]): void {
    this.inner.debug?.(message, ...rest);
  }

  verbose(message: unknown, ...rest: unknown[]): void {
    this.inner.verbose?.(message, ...rest);
  }

  fatal(message: unknown, ...rest: unknown[]): void {
    (this.inner.fatal ?? this.inner.error).call(this.inner, message, ...rest);
  }
}
