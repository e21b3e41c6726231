import { hostname } from 'node:os';
import type { LoggerService } from '@nestjs/common';
import type { Params } from 'nestjs-pino';
import { pino, type DestinationStream, type TransportSingleOptions } from 'pino';
import type { AppConfig } from '../config/config.schema';
import { requestScope, type RequestScope } from './request-scope';

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
  // A change-stream ticket (D55) is a credential for its 60 seconds.
  'ticket',
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

/** Request-scoped fields that guards add once they know them. */
export interface LogContext {
  tenantId?: string;
  userId?: string | number;
}

/**
 * Adds the tenant (TenantGuard) or the user (JwtAuthGuard) to the async-local scope, so that every
 * later line of the request carries them. The access line reads them from the request itself.
 */
export function setLogContext(request: { logScope?: RequestScope }, ctx: LogContext): void {
  if (request.logScope) Object.assign(request.logScope, ctx);
  else requestScope.set(ctx);
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

/**
 * nestjs-pino's parameters: the application logger (every `Logger` of the service) is pino with
 * the base options, and requestId, tenantId and userId come from the async-local scope per line
 * (pino `mixin`: merged into the call's object, so a key the caller names itself is written once).
 *
 * `forRoutes: []` mounts no HTTP middleware: pino-http run as Nest middleware through
 * @fastify/middie cost about a tenth of a cached read (a child logger and a redaction pass per
 * request). The access line is written by a Fastify hook instead (http/access-log.hook.ts).
 * `pinoHttp.stream`, when set (the tests' capture), is where both loggers write.
 */
export function pinoParams(config: AppConfig): Params {
  return {
    pinoHttp: { ...pinoBaseOptions(config), mixin: scopeLogFields },
    forRoutes: [],
  };
}

/** What the access line is written from: a Fastify request and its reply, once answered. */
export interface AccessLogEntry {
  id: string;
  method: string;
  url: string;
  statusCode: number;
  elapsedMs: number;
  tenantId?: string;
  userId?: string | number;
  /** The code of an error answer (D18), e.g. VALIDATION_ERROR; absent on a success. */
  errorCode?: string;
}

/**
 * The access-line writer: one info line per answered request (quiet paths excepted) with
 * `requestId`, `tenantId`, `userId`, `req: {id, method, url}`, `res: {statusCode}`, `errorCode`
 * (error answers only), `responseTime` (ms) and `METHOD url STATUS Nms`, the URL's secret query
 * values redacted.
 *
 * The line is pino's format (level, time, pid, hostname, the fields, msg), written here as text:
 * its shape is fixed and holds no header, body or secret, so pino's generic serializer and the
 * application logger's redaction pass would only cost time (issue 14: ~7% of a request). Strings
 * go through JSON.stringify, so a hostile URL or request id cannot break the line. With a
 * transport (LOG_PRETTY) the line goes through pino as before.
 */
export function createAccessLog(params: Params): (entry: AccessLogEntry) => void {
  const options = (params.pinoHttp ?? {}) as {
    level?: string;
    transport?: unknown;
    stream?: DestinationStream;
  };
  const level = options.level ?? 'info';
  if (!isInfoEnabled(level)) return () => undefined;
  if (options.transport) {
    const logger = pino({ level, transport: options.transport as TransportSingleOptions });
    return (entry) => {
      const line = accessFields(entry);
      if (line) logger.info(line.fields, line.msg);
    };
  }
  const stream = options.stream ?? bufferedStdout();
  // pino's base fields, as its default `base` writes them.
  const head = `{"level":30,"time":`;
  const base = `,"pid":${process.pid},"hostname":${JSON.stringify(hostname())}`;
  return (entry) => {
    const line = accessFields(entry);
    if (!line) return;
    const f = line.fields;
    let text = `${head}${Date.now()}${base},"requestId":${JSON.stringify(f.requestId)}`;
    if (f.tenantId !== undefined) text += `,"tenantId":${JSON.stringify(f.tenantId)}`;
    if (f.userId !== undefined) text += `,"userId":${JSON.stringify(f.userId)}`;
    text +=
      `,"req":{"id":${JSON.stringify(f.req.id)},"method":${JSON.stringify(f.req.method)},"url":${JSON.stringify(f.req.url)}}` +
      `,"res":{"statusCode":${f.res.statusCode}}`;
    if (f.errorCode !== undefined) text += `,"errorCode":${JSON.stringify(f.errorCode)}`;
    text += `,"responseTime":${f.responseTime},"msg":${JSON.stringify(line.msg)}}\n`;
    stream.write(text);
  };
}

/** Whether `level` lets info lines through (pino's level names and numbers). */
function isInfoEnabled(level: string): boolean {
  const value = pino.levels.values[level] ?? Number(level);
  return Number.isFinite(value) ? value <= pino.levels.values.info : level !== 'silent';
}

interface AccessFields {
  requestId: string;
  tenantId?: string;
  userId?: string | number;
  req: { id: string; method: string; url: string };
  res: { statusCode: number };
  errorCode?: string;
  responseTime: number;
}

/** The access line's fields and message, or undefined for a quiet path. */
function accessFields(entry: AccessLogEntry): { fields: AccessFields; msg: string } | undefined {
  const q = entry.url.indexOf('?');
  if (QUIET_PATHS.has(q === -1 ? entry.url : entry.url.slice(0, q))) return undefined;
  const url = redactUrl(entry.url);
  const responseTime = Math.round(entry.elapsedMs);
  const fields: AccessFields = { requestId: entry.id } as AccessFields;
  if (entry.tenantId !== undefined) fields.tenantId = entry.tenantId;
  if (entry.userId !== undefined) fields.userId = entry.userId;
  fields.req = { id: entry.id, method: entry.method, url };
  fields.res = { statusCode: entry.statusCode };
  if (entry.errorCode !== undefined) fields.errorCode = entry.errorCode;
  fields.responseTime = responseTime;
  return { fields, msg: `${entry.method} ${url} ${entry.statusCode} ${responseTime}ms` };
}

/**
 * Standard output for the access lines, written in batches: a synchronous write per request (pino's
 * default) was a system call per request, about a twentieth of a cached read. Lines are flushed
 * once 4 KB are pending, at the latest every ACCESS_LOG_FLUSH_MS, and at exit.
 */
export const ACCESS_LOG_FLUSH_MS = 200;

let stdoutBuffer: DestinationStream | undefined;

/** One per process, however many apps it builds (the tests build many). */
function bufferedStdout(): DestinationStream {
  if (stdoutBuffer) return stdoutBuffer;
  const destination = pino.destination({ dest: 1, minLength: 4096, sync: false });
  const timer = setInterval(() => {
    try {
      destination.flush();
    } catch {
      // not ready yet (opening) or closed: the next tick or the exit flush writes it
    }
  }, ACCESS_LOG_FLUSH_MS);
  timer.unref();
  process.once('exit', () => {
    clearInterval(timer);
    try {
      destination.flushSync();
    } catch {
      // nothing pending, or stdout closed
    }
  });
  stdoutBuffer = destination;
  return destination;
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
