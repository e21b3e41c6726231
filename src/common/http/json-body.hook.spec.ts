import { PassThrough } from 'node:stream';
import type { FastifyRequest } from 'fastify';
import { AppError } from '../errors/app-error';
import { charsetIsUtf8, isBlankBody, jsonBodyParser, nonJsonBodyParser } from './json-body.hook';

type ParseError = (Error & { code?: string; statusCode?: number }) | null;

function parse(
  text: string | Buffer,
  rawBody = false,
  contentType = 'application/json',
): { err: ParseError; body: unknown; request: FastifyRequest } {
  const request = { headers: { 'content-type': contentType } } as unknown as FastifyRequest;
  let out: { err: Error | null; body: unknown } = { err: null, body: 'not called' };
  jsonBodyParser({ protoAction: 'error', constructorAction: 'error' }, rawBody)(
    request,
    Buffer.isBuffer(text) ? text : Buffer.from(text),
    (err, body) => {
      out = { err, body };
    },
  );
  return { ...out, request };
}

const codeOf = (err: Error | null): string | undefined => (err instanceof AppError ? err.code : undefined);

describe('jsonBodyParser', () => {
  it.each(['', ' ', '\r\n\t  \n'])('should read the blank body %p as no body', (text) => {
    const { err, body } = parse(text);
    expect(err).toBeNull();
    expect(body).toBeUndefined();
  });

  it('should parse JSON as Fastify does', () => {
    expect(parse('{"a": [1, "x", null]}').body).toEqual({ a: [1, 'x', null] });
    expect(parse(' "text" ').body).toBe('text');
    expect(parse('\uFEFF{"a":1}').body).toEqual({ a: 1 });
  });

  it.each(['{', '{"a":1', 'nope', '\u00a0', '\uFEFF'])(
    'should refuse malformed JSON %p with FST_ERR_CTP_INVALID_JSON_BODY',
    (text) => {
      const { err, body } = parse(text);
      expect(err?.code).toBe('FST_ERR_CTP_INVALID_JSON_BODY');
      expect(err?.statusCode).toBe(400);
      expect(body).toBeUndefined();
    },
  );

  it.each([
    '{"__proto__": {"admin": true}}',
    '{"a": {"\\u005f_proto__": {"admin": true}}}',
    '{"constructor": {"prototype": {"admin": true}}}',
  ])('should refuse prototype poisoning %s', (text) => {
    expect(parse(text).err?.code).toBe('FST_ERR_CTP_INVALID_JSON_BODY');
  });

  it('should keep the raw body when asked to', () => {
    const { request } = parse('{"a":1}', true);
    expect((request as FastifyRequest & { rawBody?: Buffer }).rawBody?.toString()).toBe('{"a":1}');
    expect((parse('{"a":1}').request as FastifyRequest & { rawBody?: Buffer }).rawBody).toBeUndefined();
  });
});

describe('isBlankBody', () => {
  it('should count only JSON whitespace as blank', () => {
    expect(isBlankBody(Buffer.alloc(0))).toBe(true);
    expect(isBlankBody(Buffer.from(' \t\r\n'))).toBe(true);
    expect(isBlankBody(Buffer.from(' x '))).toBe(false);
    expect(isBlankBody(Buffer.from('\u00a0'))).toBe(false);
  });
});

describe('charsetIsUtf8', () => {
  it.each([
    undefined,
    'application/json',
    'application/json; charset=utf-8',
    'application/json; charset=UTF-8',
    'application/json;charset="utf-8"',
    'application/json; Charset=Utf8',
    'application/json; foo=bar; charset=utf-8',
  ])('should take %p as UTF-8', (header) => {
    expect(charsetIsUtf8(header)).toBe(true);
  });

  it.each([
    'application/json; charset=utf-16',
    'application/json; charset=UTF-16LE',
    'application/json; charset=iso-8859-1',
    'application/json; charset=',
    'application/json; charset=utf-8; charset=utf-16',
  ])('should refuse %p', (header) => {
    expect(charsetIsUtf8(header)).toBe(false);
  });
});

describe('jsonBodyParser: encodings (issue 9 #7)', () => {
  it.each([
    ['a lone 0xff', [0x7b, 0x22, 0x6e, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]],
    ['a truncated sequence', [0x22, 0xe2, 0x82, 0x22]],
    ['an overlong "/"', [0x22, 0xc0, 0xaf, 0x22]],
    ['an encoded surrogate', [0x22, 0xed, 0xa0, 0x80, 0x22]],
  ])('should refuse %s with 400 VALIDATION_ERROR, never U+FFFD', (_label, bytes) => {
    const { err, body } = parse(Buffer.from(bytes));
    expect(codeOf(err)).toBe('VALIDATION_ERROR');
    expect(err?.message).toMatch(/not valid UTF-8/);
    expect(body).toBeUndefined();
  });

  it('should read multi-byte UTF-8 as sent', () => {
    expect(parse(Buffer.from('{"n":"Grüße 😀"}', 'utf8')).body).toEqual({ n: 'Grüße 😀' });
  });

  it('should refuse a charset other than UTF-8 with 415 UNSUPPORTED_MEDIA_TYPE', () => {
    const text = Buffer.from('{"n":"x"}', 'utf16le');
    const { err, body } = parse(text, false, 'application/json; charset=utf-16');
    expect(codeOf(err)).toBe('UNSUPPORTED_MEDIA_TYPE');
    expect(body).toBeUndefined();
    expect(parse('{"n":"x"}', false, 'application/json; charset=iso-8859-1').err).toBeInstanceOf(AppError);
  });

  it('should read an empty body as no body whatever its charset', () => {
    expect(parse('', false, 'application/json; charset=utf-16')).toMatchObject({
      err: null,
      body: undefined,
    });
  });
});

describe('jsonBodyParser: depth (issue 21 #5)', () => {
  const deep = (depth: number): string => `${'['.repeat(depth)}${']'.repeat(depth)}`;

  it('should refuse a body nested deeper than the limit before parsing it', () => {
    for (const text of [deep(65), `{"a":${deep(100_000)}}`]) {
      const { err, body } = parse(text);
      expect(codeOf(err)).toBe('VALIDATION_ERROR');
      expect((err as AppError).details).toEqual([
        { field: 'body', error: 'is nested more than 64 levels deep' },
      ]);
      expect(body).toBeUndefined();
    }
  });

  it('should read a body at the limit, and take another limit', () => {
    expect(parse(deep(64)).err).toBeNull();
    const request = { headers: { 'content-type': 'application/json' } } as unknown as FastifyRequest;
    let error: Error | null = null;
    jsonBodyParser({}, false, 3)(request, Buffer.from(deep(4)), (err) => {
      error = err;
    });
    expect(codeOf(error)).toBe('VALIDATION_ERROR');
  });
});

describe('nonJsonBodyParser', () => {
  function run(
    headers: Record<string, string>,
    feed?: (stream: PassThrough) => void,
  ): Promise<{ err: Error | null; body: unknown }> {
    const payload = new PassThrough();
    return new Promise((resolve) => {
      nonJsonBodyParser({ headers } as unknown as FastifyRequest, payload, (err, body) =>
        resolve({ err, body }),
      );
      feed?.(payload);
    });
  }

  it('should pass a request without a body', async () => {
    await expect(run({})).resolves.toEqual({ err: null, body: undefined });
    await expect(run({ 'content-length': '0' })).resolves.toEqual({ err: null, body: undefined });
  });

  it('should refuse a body with 415 before reading it', async () => {
    const { err } = await run({ 'content-length': '12' });
    expect(codeOf(err)).toBe('UNSUPPORTED_MEDIA_TYPE');
  });

  it('should refuse a chunked body at its first byte and pass an empty one', async () => {
    const refused = await run({ 'transfer-encoding': 'chunked' }, (s) => s.write('a=1'));
    expect(codeOf(refused.err)).toBe('UNSUPPORTED_MEDIA_TYPE');
    const empty = await run({ 'transfer-encoding': 'chunked' }, (s) => s.end());
    expect(empty).toEqual({ err: null, body: undefined });
  });
});
