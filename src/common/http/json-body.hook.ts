import type { Readable } from 'node:stream';
import { errorCodes, type FastifyInstance, type FastifyRequest } from 'fastify';
import { parse as secureJsonParse } from 'secure-json-parse';
import { AppError, ValidationError } from '../errors/app-error';
import { DEFAULT_JSON_MAX_DEPTH, jsonDepthExceeds, bodyTooDeep } from './json-depth';

type ParseOptions = NonNullable<Parameters<typeof secureJsonParse>[2]>;
type Done = (err: Error | null, body?: unknown) => void;

const JSON_TYPE = 'application/json';
/** The parsers Fastify and Nest register besides JSON: every route of the service takes JSON only. */
const OTHER_TYPES = ['application/x-www-form-urlencoded', 'text/plain'];
/** The charset labels of UTF-8 a JSON body may name (WHATWG Encoding); none at all means UTF-8 too. */
const UTF8_LABELS = new Set(['utf-8', 'utf8']);

/** 415 for a body of any type but `application/json` in UTF-8 (issue 9 #7). */
export function unsupportedMediaType(): AppError {
  return new AppError(
    'UNSUPPORTED_MEDIA_TYPE',
    'Unsupported content type: send the body as application/json (UTF-8)',
    [{ field: 'content-type', error: 'must be application/json (charset utf-8 or none)' }],
  );
}

/** 400 for a JSON body whose bytes are not UTF-8 (never stored with U+FFFD in their place). */
export function invalidUtf8(): ValidationError {
  return new ValidationError('Body is not valid UTF-8', [{ field: 'body', error: 'is not valid UTF-8' }]);
}

/**
 * True when the `charset` parameters of a Content-Type header, if any, all name UTF-8 (any case,
 * quoted or not). `application/json` is UTF-8 by definition (RFC 8259); `charset=utf-16` is not
 * decoded, it is refused.
 */
export function charsetIsUtf8(contentType: string | undefined): boolean {
  if (contentType === undefined) return true;
  for (const parameter of contentType.split(';').slice(1)) {
    const eq = parameter.indexOf('=');
    if (eq < 0 || parameter.slice(0, eq).trim().toLowerCase() !== 'charset') continue;
    const value = parameter
      .slice(eq + 1)
      .trim()
      .replace(/^"(.*)"$/, '$1')
      .toLowerCase();
    if (!UTF8_LABELS.has(value)) return false;
  }
  return true;
}

/** True when a body holds nothing but JSON whitespace (space, tab, CR, LF): no body at all. */
export function isBlankBody(body: Buffer): boolean {
  for (let i = 0; i < body.length; i++) {
    const b = body[i];
    if (b !== 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d) return false;
  }
  return true;
}

/**
 * The `application/json` body parser: Fastify's own (secure-json-parse with the instance's
 * proto/constructor poisoning actions, `FST_ERR_CTP_INVALID_JSON_BODY` on malformed JSON, the
 * body limit enforced by Fastify while reading) except that
 * - an empty or whitespace-only body is no body (`undefined`) instead of
 *   `FST_ERR_CTP_EMPTY_JSON_BODY`: clients send `Content-Type: application/json` on a DELETE or a
 *   logout without a body all the time;
 * - a body with a charset other than UTF-8 is refused (415 UNSUPPORTED_MEDIA_TYPE), and one whose
 *   bytes are not UTF-8 is refused (400 VALIDATION_ERROR) instead of being read with U+FFFD;
 * - a body nested more than `maxDepth` deep (BODY_MAX_DEPTH) is refused (400 VALIDATION_ERROR
 *   naming `body`) before it is parsed: the recursive code after the parser (JSON.stringify,
 *   deep comparisons) would throw RangeError on it (issue 21 #5).
 */
export function jsonBodyParser(
  options: ParseOptions,
  rawBody = false,
  maxDepth = DEFAULT_JSON_MAX_DEPTH,
): (request: FastifyRequest, body: Buffer, done: Done) => void {
  const parseOptions: ParseOptions = {
    protoAction: options.protoAction ?? 'error',
    constructorAction: options.constructorAction ?? 'error',
  };
  return (request, body, done) => {
    // As Nest's parser does with the `rawBody` application option.
    if (rawBody) (request as FastifyRequest & { rawBody?: Buffer }).rawBody = body;
    if (body.length === 0) {
      done(null, undefined);
      return;
    }
    if (!charsetIsUtf8(request.headers['content-type'])) {
      done(unsupportedMediaType(), undefined);
      return;
    }
    if (isBlankBody(body)) {
      done(null, undefined);
      return;
    }
    let text: string;
    try {
      // ignoreBOM: a leading BOM stays in the text, and secure-json-parse skips it as before.
      text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(body);
    } catch {
      done(invalidUtf8(), undefined);
      return;
    }
    if (jsonDepthExceeds(text, maxDepth)) {
      done(bodyTooDeep(maxDepth), undefined);
      return;
    }
    let parsed: unknown;
    try {
      parsed = secureJsonParse(text, undefined, parseOptions);
    } catch {
      done(new errorCodes.FST_ERR_CTP_INVALID_JSON_BODY(), undefined);
      return;
    }
    done(null, parsed);
  };
}

/** True when the request announces a body: a non-zero Content-Length, or Transfer-Encoding. */
function announcesBody(request: FastifyRequest): 'yes' | 'no' | 'chunked' {
  const length = request.headers['content-length'];
  if (length !== undefined) return Number(length) === 0 ? 'no' : 'yes';
  return request.headers['transfer-encoding'] === undefined ? 'no' : 'chunked';
}

/**
 * The parser of every other content type (and of a body without one): a request without a body
 * passes (a DELETE sent with `Content-Type: text/plain` and nothing after it), any body is
 * refused with 415 UNSUPPORTED_MEDIA_TYPE before it is read. A chunked body is read up to its
 * first byte, or to its end when it turns out empty.
 */
export function nonJsonBodyParser(request: FastifyRequest, payload: Readable, done: Done): void {
  const announced = announcesBody(request);
  if (announced === 'no') {
    done(null, undefined);
    return;
  }
  if (announced === 'yes') {
    done(unsupportedMediaType(), undefined);
    return;
  }
  const finish = (err: Error | null): void => {
    payload.removeListener('data', onData);
    payload.removeListener('end', onEnd);
    payload.removeListener('error', onError);
    done(err, undefined);
  };
  const onData = (chunk: Buffer | string): void => {
    if (chunk.length > 0) finish(unsupportedMediaType());
  };
  const onEnd = (): void => finish(null);
  const onError = (err: Error): void => finish(err);
  payload.on('data', onData);
  payload.on('end', onEnd);
  payload.on('error', onError);
}

/**
 * The body parsers of the instance: only `application/json` (UTF-8) is read. Replaces the
 * `application/json` parser (Nest's, registered at init, which wraps Fastify's default) by
 * {@link jsonBodyParser} — same body limit, same poisoning actions —, removes Nest's
 * `application/x-www-form-urlencoded` and Fastify's `text/plain` parsers, refuses JSON nested more
 * than `maxDepth` deep, and answers every other
 * type carrying a body with 415 ({@link nonJsonBodyParser}).
 */
export function installBodyParsers(
  fastify: FastifyInstance,
  rawBody = false,
  maxDepth = DEFAULT_JSON_MAX_DEPTH,
  fileLimit?: number,
): void {
  const { bodyLimit, onProtoPoisoning, onConstructorPoisoning } = fastify.initialConfig;
  for (const type of [JSON_TYPE, ...OTHER_TYPES]) {
    if (fastify.hasContentTypeParser(type)) fastify.removeContentTypeParser(type);
  }
  fastify.addContentTypeParser(
    JSON_TYPE,
    { parseAs: 'buffer', bodyLimit },
    jsonBodyParser(
      { protoAction: onProtoPoisoning, constructorAction: onConstructorPoisoning },
      rawBody,
      maxDepth,
    ),
  );
  // Import files (D53): a CSV or XLSX body is read as bytes, up to IMPORT_MAX_BYTES (else 413);
  // only the import route takes it, every other route refuses a body it does not expect.
  if (fileLimit !== undefined)
    fastify.addContentTypeParser(
      IMPORT_FILE_TYPES,
      { parseAs: 'buffer', bodyLimit: fileLimit },
      (_request: FastifyRequest, body: Buffer, done: Done) => done(null, body),
    );
  fastify.addContentTypeParser('*', nonJsonBodyParser);
}

/** The content types of an import file's body. */
export const IMPORT_FILE_TYPES = [
  'text/csv',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
];
