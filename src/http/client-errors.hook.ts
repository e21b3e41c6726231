import { Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { codeForStatus } from '../common/errors/error-codes';
import { sendError } from './all-exceptions.filter';
import { errorBody } from '../common/http/envelope';

/**
 * Answers in the error envelope (D17) where Fastify would answer with a body of its own before any
 * route, hook or Nest filter runs (issue 9 #9):
 *
 * - `frameworkErrors`: the router's errors — a path parameter that cannot be URL-decoded
 *   (`FST_ERR_BAD_URL`, 400 VALIDATION_ERROR) or is longer than `maxParamLength`
 *   (`FST_ERR_MAX_PARAM_LENGTH`, 414 URI_TOO_LONG); the path is not echoed.
 * - `clientErrorHandler`: what Node's HTTP parser refuses before there is a request — a head over
 *   `maxHeaderSize` (431 HEADERS_TOO_LARGE, or 414 URI_TOO_LONG when the request line alone is
 *   too long), a request timeout (408 REQUEST_TIMEOUT), anything malformed (400 VALIDATION_ERROR).
 */

const logger = new Logger('Errors');

/** Fastify's `frameworkErrors` option: the router's errors in the envelope, with x-request-id (D19). */
export function frameworkErrorHandler(
  error: FastifyError,
  request: FastifyRequest,
  reply: FastifyReply,
): void {
  // The onRequest hooks (which set x-request-id) do not run for these.
  void reply.header('x-request-id', request.id);
  sendError(reply, request, error, logger);
}

/** The parts of Node's clientError that are used (Fastify's ConnectionError type). */
interface ClientError extends Error {
  code?: string;
  bytesParsed?: number;
  rawPacket?: unknown;
}

const MESSAGES: Record<number, string> = {
  400: 'Malformed HTTP request',
  408: 'Request timeout',
  414: 'URI too long',
  431: 'Request headers too large',
};

/**
 * The status for a parser error. HPE_HEADER_OVERFLOW covers the whole head, request line
 * included: when the bytes parsed before the overflow start a request line and hold no line end,
 * the URL is what is too long (414); otherwise the headers (431).
 */
export function clientErrorStatus(err: ClientError): number {
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') return 408;
  if (err.code !== 'HPE_HEADER_OVERFLOW') return 400;
  const raw = Buffer.isBuffer(err.rawPacket) ? err.rawPacket : undefined;
  if (!raw) return 431;
  const parsed = raw.subarray(0, Math.min(raw.length, err.bytesParsed ?? raw.length));
  const startsRequestLine = /^[A-Z]+ \S/.test(parsed.subarray(0, 32).toString('latin1'));
  return startsRequestLine && !parsed.includes(0x0a) ? 414 : 431;
}

/** The raw HTTP answer for a client error: the error envelope, closing the connection. */
export function clientErrorResponse(status: number, requestId: string = randomUUID()): string {
  const code = codeForStatus(status);
  const body = JSON.stringify(errorBody(code, MESSAGES[status] ?? 'Bad request', null, requestId));
  return (
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\n` +
    'Content-Type: application/json; charset=utf-8\r\n' +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    `x-request-id: ${requestId}\r\n` +
    'Connection: close\r\n\r\n' +
    body
  );
}

/**
 * Fastify's `clientErrorHandler` option: as Fastify's default (and Node's), except that the body is
 * the error envelope. Nothing is written on a reset or destroyed socket, nor when a response on the
 * connection has already started (it would corrupt it).
 */
export function clientErrorHandler(err: ClientError, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (socket.writable && !inFlight?.headersSent) socket.write(clientErrorResponse(clientErrorStatus(err)));
  socket.destroy(err);
}
