import { BadRequestException, NotFoundException, PayloadTooLargeException } from '@nestjs/common';
import { QueryFailedError } from 'typeorm';
import { ConflictError, NotFoundError, ValidationError } from '../errors/app-error';
import { translateError } from './all-exceptions.filter';
import { errorBody, successBody } from './envelope';

describe('translateError', () => {
  it('should keep the code, status and details of a domain error', () => {
    expect(translateError(new ValidationError('bad', [{ field: 'x', error: 'required' }]))).toMatchObject({
      status: 400,
      code: 'VALIDATION_ERROR',
      details: [{ field: 'x', error: 'required' }],
    });
    expect(translateError(new ConflictError('stale'))).toMatchObject({ status: 409, code: 'CONFLICT' });
  });

  it('should carry extra top-level keys such as entityCode (D17)', () => {
    expect(translateError(new NotFoundError('no profile', null, { entityCode: 'x' })).extras).toEqual({
      entityCode: 'x',
    });
  });

  it('should map Nest HTTP exceptions by status', () => {
    expect(translateError(new NotFoundException('Cannot GET /x'))).toMatchObject({
      status: 404,
      code: 'NOT_FOUND',
      message: 'Route not found',
    });
    expect(translateError(new PayloadTooLargeException())).toMatchObject({
      status: 413,
      code: 'PAYLOAD_TOO_LARGE',
    });
    expect(translateError(new BadRequestException())).toMatchObject({
      status: 400,
      code: 'VALIDATION_ERROR',
    });
  });

  it('should map Fastify body errors to 400 and 413', () => {
    const tooLarge = Object.assign(new Error('Request body is too large'), {
      statusCode: 413,
      code: 'FST_ERR_CTP_BODY_TOO_LARGE',
    });
    expect(translateError(tooLarge)).toMatchObject({ status: 413, code: 'PAYLOAD_TOO_LARGE' });
    const badJson = Object.assign(new SyntaxError('Unexpected end of JSON input'), { statusCode: 400 });
    expect(translateError(badJson)).toMatchObject({
      status: 400,
      code: 'VALIDATION_ERROR',
      message: 'Malformed JSON body',
    });
  });

  it('should never pass a database error through raw', () => {
    const err = new QueryFailedError('SELECT secret FROM t', [], new Error('relation "t" does not exist'));
    const t = translateError(err);
    expect(t).toMatchObject({
      status: 500,
      code: 'SERVICE_ERROR',
      message: 'Internal error',
      unexpected: true,
    });
    expect(JSON.stringify(t)).not.toContain('secret');
  });

  it('should answer anything unknown with 500 SERVICE_ERROR', () => {
    expect(translateError('a string')).toMatchObject({ status: 500, code: 'SERVICE_ERROR' });
  });
});

describe('envelopes', () => {
  it('should build the success envelope of D16 with extras beside data', () => {
    expect(successBody([1], 'r1', { pagination: { page: 0 } })).toEqual({
      success: true,
      data: [1],
      pagination: { page: 0 },
      meta: { timestamp: expect.any(String), requestId: 'r1' },
    });
  });

  it('should build the error envelope of D17 with a top-level message', () => {
    expect(errorBody('NOT_FOUND', 'gone', null, 'r2', { entityCode: 'x' })).toEqual({
      success: false,
      message: 'gone',
      entityCode: 'x',
      error: { code: 'NOT_FOUND', message: 'gone', details: null },
      meta: { timestamp: expect.any(String), requestId: 'r2' },
    });
  });
});
