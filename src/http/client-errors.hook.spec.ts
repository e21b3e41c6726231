import type { Socket } from 'node:net';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import {
  clientErrorHandler,
  clientErrorResponse,
  clientErrorStatus,
  frameworkErrorHandler,
} from './client-errors.hook';

const overflow = (packet: string, bytesParsed = packet.length) =>
  Object.assign(new Error('Parse Error: Header overflow'), {
    code: 'HPE_HEADER_OVERFLOW',
    bytesParsed,
    rawPacket: Buffer.from(packet, 'latin1'),
  });

describe('clientErrorStatus', () => {
  it('should tell a request line that alone overflows the head (414) from too many headers (431)', () => {
    expect(clientErrorStatus(overflow(`GET /${'a'.repeat(20_000)}`))).toBe(414);
    expect(clientErrorStatus(overflow(`GET /x HTTP/1.1\r\nHost: x\r\nX-Big: ${'v'.repeat(20_000)}`))).toBe(
      431,
    );
    // A later packet of a long line: no telling whose line it is, so the head as a whole.
    expect(clientErrorStatus(overflow('b'.repeat(1_000)))).toBe(431);
    expect(clientErrorStatus(Object.assign(new Error('x'), { code: 'HPE_HEADER_OVERFLOW' }))).toBe(431);
  });

  it('should answer a timeout with 408 and anything else malformed with 400', () => {
    expect(clientErrorStatus(Object.assign(new Error('t'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' }))).toBe(408);
    expect(clientErrorStatus(Object.assign(new Error('m'), { code: 'HPE_INVALID_METHOD' }))).toBe(400);
    expect(clientErrorStatus(new Error('no code'))).toBe(400);
  });
});

describe('clientErrorResponse', () => {
  it.each([
    [400, 'VALIDATION_ERROR'],
    [408, 'REQUEST_TIMEOUT'],
    [414, 'URI_TOO_LONG'],
    [431, 'HEADERS_TOO_LARGE'],
  ])('should write %i as the error envelope with code %s', (status, code) => {
    const raw = clientErrorResponse(status, 'rid-1');
    const [head, body] = raw.split('\r\n\r\n');
    expect(head.split('\r\n')[0]).toMatch(new RegExp(`^HTTP/1\\.1 ${status} \\S`));
    expect(head).toContain('Content-Type: application/json; charset=utf-8');
    expect(head).toContain(`Content-Length: ${Buffer.byteLength(body)}`);
    expect(head).toContain('x-request-id: rid-1');
    expect(head).toContain('Connection: close');
    expect(JSON.parse(body)).toEqual({
      success: false,
      message: expect.any(String),
      error: { code, message: expect.any(String), details: null },
      meta: { timestamp: expect.any(String), requestId: 'rid-1' },
    });
  });
});

describe('clientErrorHandler', () => {
  function socket(over: Partial<Record<string, unknown>> = {}) {
    return { destroyed: false, writable: true, write: jest.fn(), destroy: jest.fn(), ...over };
  }

  it('should write the envelope and close the connection', () => {
    const s = socket();
    const err = Object.assign(new Error('bad'), { code: 'HPE_INVALID_METHOD' });
    clientErrorHandler(err, s as unknown as Socket);
    expect(s.write).toHaveBeenCalledWith(
      expect.stringMatching(/^HTTP\/1\.1 400 Bad Request\r\n[\s\S]*"VALIDATION_ERROR"/),
    );
    expect(s.destroy).toHaveBeenCalledWith(err);
  });

  it('should write nothing on a reset or destroyed socket, or into a response already started', () => {
    const reset = socket();
    clientErrorHandler(Object.assign(new Error('r'), { code: 'ECONNRESET' }), reset as unknown as Socket);
    expect(reset.write).not.toHaveBeenCalled();
    const destroyed = socket({ destroyed: true });
    clientErrorHandler(new Error('d'), destroyed as unknown as Socket);
    expect(destroyed.write).not.toHaveBeenCalled();
    const busy = socket({ _httpMessage: { headersSent: true } });
    clientErrorHandler(new Error('b'), busy as unknown as Socket);
    expect(busy.write).not.toHaveBeenCalled();
    expect(busy.destroy).toHaveBeenCalled();
  });
});

describe('frameworkErrorHandler', () => {
  it('should answer a router error in the envelope with x-request-id, without the path', () => {
    const headers: Record<string, string> = {};
    const sent: unknown[] = [];
    const reply: { sent: boolean; header: jest.Mock; status: jest.Mock; send: jest.Mock } = {
      sent: false,
      header: jest.fn((k: string, v: string) => {
        headers[k] = v;
        return reply;
      }),
      status: jest.fn().mockReturnThis(),
      send: jest.fn((body: unknown) => sent.push(body)),
    };
    const err = Object.assign(new URIError("'/api/v1/x/aaaa' is exceeding the max param length"), {
      statusCode: 414,
      code: 'FST_ERR_MAX_PARAM_LENGTH',
    }) as unknown as FastifyError;
    frameworkErrorHandler(err, { id: 'rid-2' } as FastifyRequest, reply as unknown as FastifyReply);
    expect(reply.status).toHaveBeenCalledWith(414);
    expect(headers['x-request-id']).toBe('rid-2');
    expect(sent).toEqual([
      expect.objectContaining({
        success: false,
        error: { code: 'URI_TOO_LONG', message: 'URI too long', details: null },
        meta: { timestamp: expect.any(String), requestId: 'rid-2' },
      }),
    ]);
    expect(JSON.stringify(sent)).not.toContain('aaaa');
  });
});
