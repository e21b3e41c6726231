import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../errors/app-error';
import { codeForStatus, ErrorCode } from '../errors/error-codes';
import { errorBody } from './envelope';

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
};

/** Maps anything thrown to the error envelope of D17 with a code of D18. */
export function translateError(err: unknown): Translated {
  if (err instanceof AppError) {
    return {
      status: err.status,
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
export class AllExceptionsFilter implements ExceptionFilter {
  private readonly logger = new Logger('Errors');

  catch(exception: unknown, host: ArgumentsHost): void {
    const ctx = host.switchToHttp();
    const request = ctx.getRequest<FastifyRequest>();
    const reply = ctx.getResponse<FastifyReply>();
    sendError(reply, request, exception, this.logger);
  }
}

/** Shared by the Nest filter and Fastify's own error handler (errors before routing). */
export function sendError(
  reply: FastifyReply,
  request: FastifyRequest,
  exception: unknown,
  logger: Logger,
): void {
  const t = translateError(exception);
  if (t.unexpected) {
    logger.error({ err: exception, requestId: request.id, url: request.url }, 'Unhandled error');
  }
  if (reply.sent) return;
  for (const [k, v] of Object.entries(t.headers ?? {})) void reply.header(k, v);
  void reply
    .status(t.status)
    .header('content-type', 'application/json; charset=utf-8')
    .send(errorBody(t.code, t.message, t.details, request.id, t.extras));
}
