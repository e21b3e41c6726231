import type { IncomingMessage, ServerResponse } from 'node:http';
import type { LoggerService } from '@nestjs/common';
import type { Params } from 'nestjs-pino';
import type { AppConfig } from '../config/config.schema';

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

/** Request-scoped fields that guards put on the raw request for the access log. */
export interface LogContext {
  tenantId?: string;
  userId?: string | number;
}

export function setLogContext(raw: IncomingMessage, ctx: LogContext): void {
  Object.assign(raw as IncomingMessage & { logContext?: LogContext }, {
    logContext: { ...(raw as IncomingMessage & { logContext?: LogContext }).logContext, ...ctx },
  });
}

/** Middleware mounts may rewrite req.url; originalUrl is the path the client asked for. */
function pathOf(req: IncomingMessage & { originalUrl?: string }): string {
  return (req.originalUrl ?? req.url ?? '').split('?', 1)[0];
}

/** Level, redaction and format shared by the service's and the proxy's loggers. */
export function pinoBaseOptions(config: AppConfig) {
  return {
    level: config.log.level,
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    transport: config.log.pretty
      ? {
          target: 'pino-pretty',
          options: { singleLine: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' },
        }
      : undefined,
  };
}

export function pinoParams(config: AppConfig): Params {
  return {
    pinoHttp: {
      ...pinoBaseOptions(config),
      // Fastify's genReqId stores the id on the raw request; pino-http reuses req.id.
      autoLogging: { ignore: (req: IncomingMessage) => QUIET_PATHS.has(pathOf(req)) },
      customProps: (req: IncomingMessage, _res: ServerResponse) => {
        const ctx = (req as IncomingMessage & { logContext?: LogContext }).logContext ?? {};
        return {
          requestId: (req as IncomingMessage & { id?: string }).id,
          tenantId: ctx.tenantId,
          userId: ctx.userId,
        };
      },
      serializers: {
        req: (req: { id?: string; method?: string; url?: string }) => ({
          id: req.id,
          method: req.method,
          url: req.url,
        }),
        res: (res: { statusCode?: number }) => ({ statusCode: res.statusCode }),
      },
      customSuccessMessage: (req, res, responseTime) =>
        `${req.method} ${req.url} ${res.statusCode} ${responseTime}ms`,
      customErrorMessage: (req, res) => `${req.method} ${req.url} ${res.statusCode}`,
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
