import type { ErrorCode } from '../errors/error-codes';

/**
 * What the HTTP pipeline notes on a request for its access line (D18): the code of the error
 * envelope it was answered with, set by the exception filter and the hooks that answer errors
 * themselves, read by the access-log hook. HTTP layer only: the envelope builders (used by jobs
 * and workers too) know nothing of the request.
 */
declare module 'fastify' {
  interface FastifyRequest {
    errorCode?: ErrorCode;
  }
}

export {};
