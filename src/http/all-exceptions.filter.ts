import {
  ArgumentsHost,
  Catch,
  ExceptionFilter,
  HttpException,
  Logger,
  OnModuleDestroy,
  Optional,
} from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppConfig } from '../config/config.schema';
import { InjectConfig } from '../config/inject-config.decorator';
import { DatabaseService } from '../database/database.service';
import { describeDatabaseError, isDatabaseUnavailableError } from '../database/dialect/driver-errors';
import { Dialect, dialectOf } from '../database/dialect';
import { AppError } from '../common/errors/app-error';
import { codeForStatus, ErrorCode, httpStatusOf } from '../common/errors/error-codes';
import {
  DATABASE_RETRY_AFTER_S,
  DATABASE_UNAVAILABLE_EVENT,
  DatabaseOutage,
  reachabilityProbe,
} from './database-outage.hook';
import { errorBody } from '../common/http/envelope';
import type {} from '../common/decorators/context.decorators';

interface Translated {
  status: number;
  code: ErrorCode;
  message: string;
  details: unknown;
  extras?: Record<string, unknown>;
  headers?: Record<string, string>;
  /** Unknown errors are logged in full; known ones are the client's fault and are not. */
  unexpected?: boolean;
}

const FASTIFY_MESSAGES: Record<string, string> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'Request body is too large',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'Unsupported content type',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'Body must not be empty when content-type is application/json',
  FST_ERR_CTP_INVALID_JSON_BODY: 'Malformed JSON body',
  // The router's: never echo the path (the default messages quote it).
  FST_ERR_BAD_URL: 'Malformed URL',
  FST_ERR_MAX_PARAM_LENGTH: 'URI too long',
};

/** Options of the logging of unexpected errors. */
export interface ErrorLogOptions {
  /** The configured database's dialect, for database errors whose driver cannot be told. */
  dialect?: Dialect;
  /** Keeps an outage to one error line (without it every connection failure is logged). */
  outage?: DatabaseOutage;
}

/** Maps anything thrown to the error envelope of D17 with a code of D18. */
export function translateError(err: unknown): Translated {
  if (err instanceof AppError) {
    return {
      status: httpStatusOf(err.code),
      code: err.code,
      message: err.message,
      details: err.details,
      extras: err.extras,
      headers: err.headers,
    };
  }
  if (err instanceof HttpException) {
    const status = err.getStatus();
    const response = err.getResponse();
    const details =
      typeof response === 'object' && response !== null && 'details' in response ? response.details : null;
    const message = status === 404 && /^Cannot /.test(err.message) ? 'Route not found' : err.message;
    return { status, code: codeForStatus(status), message, details, unexpected: status >= 500 };
  }
  // The database cannot be reached (pool cannot connect, connection lost): the client may retry.
  if (isDatabaseUnavailableError(err)) {
    return {
      status: 503,
      code: 'DATABASE_UNAVAILABLE',
      message: 'The database is unavailable; try again later',
      details: null,
      headers: { 'Retry-After': String(DATABASE_RETRY_AFTER_S) },
      unexpected: true,
    };
  }
  // Errors raised by Fastify before the route handler (body parsing, limits) carry a statusCode.
  if (isFastifyError(err)) {
    const status = err.statusCode;
    if (status >= 400 && status < 500) {
      const isJsonSyntax = err instanceof SyntaxError || /JSON/.test(err.message);
      const message =
        FASTIFY_MESSAGES[err.code ?? ''] ?? (isJsonSyntax ? 'Malformed JSON body' : 'Bad request');
      return { status, code: codeForStatus(status), message, details: null };
    }
  }
  // Database errors (TypeORM QueryFailedError and driver errors) and everything else: never raw.
  return { status: 500, code: 'SERVICE_ERROR', message: 'Internal error', details: null, unexpected: true };
}

function isFastifyError(err: unknown): err is Error & { statusCode: number; code?: string } {
  return err instanceof Error && typeof (err as { statusCode?: unknown }).statusCode === 'number';
}

@Catch()
export class AllExceptionsFilter implements ExceptionFilter, OnModuleDestroy {
  private readonly logger = new Logger('Errors');
  /** The configured database's dialect, for database errors whose driver cannot be told. */
  private readonly dialect: Dialect | undefined;
  /** One error line per database outage, one info line when it ends (probing the configuration database). */
  readonly outage: DatabaseOutage;

  constructor(@Optional() @InjectConfig() config?: AppConfig, @Optional() database?: DatabaseService) {
    this.dialect = config ? dialectOf(config.db.type) : undefined;
    this.outage = new DatabaseOutage(
      this.logger,
      database ? reachabilityProbe(database.dataSource) : undefined,
    );
  }

  catch(exception: unknown, host: ArgumentsHost): void {
    const ctx = host.switchToHttp();
    const request = ctx.getRequest<FastifyRequest>();
    const reply = ctx.getResponse<FastifyReply>();
    sendError(reply, request, exception, this.logger, { dialect: this.dialect, outage: this.outage });
  }

  onModuleDestroy(): void {
    this.outage.stop();
  }
}

/** The structured log event of a failed database statement (spec §6.3), whatever the dialect. */
export const DB_QUERY_FAILED_EVENT = 'ms-sql.query.failed';

/**
 * Logs an unexpected error once, at error level, with the request's tenant and user (spec §6.3).
 * A database error becomes the `ms-sql.query.failed` event: dialect, driver code and a message
 * with the values masked, never the statement's parameters (the error object is not logged).
 * A connection-level failure (the database is unavailable) is logged once per outage as the event
 * `database.unavailable`, with its cause; the outage counts the others silently.
 */
export function logUnexpectedError(
  logger: Logger,
  request: FastifyRequest,
  exception: unknown,
  options: ErrorLogOptions = {},
): void {
  const context = {
    tenantId: request.tenant?.id,
    userId: request.user?.userId,
    requestId: request.id,
  };
  const db = describeDatabaseError(exception);
  if (db && isDatabaseUnavailableError(exception)) {
    if (options.outage && !options.outage.failed()) return;
    logger.error(
      {
        event: DATABASE_UNAVAILABLE_EVENT,
        category: 'database',
        dialect: db.dialect ?? options.dialect,
        ...context,
        code: db.code,
        message: db.message,
      },
      'Database unavailable: answering 503 DATABASE_UNAVAILABLE until it is reachable again',
    );
    return;
  }
  if (db) {
    logger.error(
      {
        event: DB_QUERY_FAILED_EVENT,
        category: 'database',
        dialect: db.dialect ?? options.dialect,
        ...context,
        code: db.code,
        message: db.message,
      },
      DB_QUERY_FAILED_EVENT,
    );
    return;
  }
  logger.error({ err: exception, ...context, url: request.url }, 'Unhandled error');
}

/** Shared by the Nest filter and Fastify's own error handler (errors before routing). */
export function sendError(
  reply: FastifyReply,
  request: FastifyRequest,
  exception: unknown,
  logger: Logger,
  options: ErrorLogOptions = {},
): void {
  const t = translateError(exception);
  if (t.unexpected) logUnexpectedError(logger, request, exception, options);
  if (reply.sent) return;
  request.errorCode = t.code;
  for (const [k, v] of Object.entries(t.headers ?? {})) void reply.header(k, v);
  void reply
    .status(t.status)
    .header('content-type', 'application/json; charset=utf-8')
    .send(errorBody(t.code, t.message, t.details, request.id, t.extras));
}
