import { BadRequestException, Logger, NotFoundException, PayloadTooLargeException } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { QueryFailedError } from 'typeorm';
import type { AppConfig } from '../config/config.schema';
import { APP_CONFIG } from '../config/config.module';
import { ConflictError, NotFoundError, ValidationError } from '../common/errors/app-error';
import { AllExceptionsFilter, logUnexpectedError, sendError, translateError } from './all-exceptions.filter';
import { DatabaseOutage } from './database-outage.hook';
import { errorBody, successBody } from '../common/http/envelope';

/** What pg raises when its connection is cut under a query, as TypeORM hands it on. */
const connectionLost = () =>
  new QueryFailedError(
    'SELECT * FROM t WHERE x = $1',
    ['secret-param'],
    new Error('Connection terminated unexpectedly'),
  );
const refused = () =>
  Object.assign(new Error('connect ECONNREFUSED 10.0.0.5:5432'), {
    code: 'ECONNREFUSED',
    syscall: 'connect',
  });

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

  it('should answer a connection-level database failure with 503 DATABASE_UNAVAILABLE and Retry-After', () => {
    for (const err of [connectionLost(), refused()]) {
      const t = translateError(err);
      expect(t).toEqual({
        status: 503,
        code: 'DATABASE_UNAVAILABLE',
        message: 'The database is unavailable; try again later',
        details: null,
        headers: { 'Retry-After': '5' },
        unexpected: true,
      });
      expect(JSON.stringify(t)).not.toMatch(/secret|ECONN|terminated|10\.0\.0\.5/);
    }
  });

  it('should map the router errors to 400 and 414 without echoing the path', () => {
    const badUrl = Object.assign(new URIError("'/x/%zz' is not a valid url component"), {
      statusCode: 400,
      code: 'FST_ERR_BAD_URL',
    });
    expect(translateError(badUrl)).toMatchObject({
      status: 400,
      code: 'VALIDATION_ERROR',
      message: 'Malformed URL',
    });
    const long = Object.assign(new URIError("'/x/aaaa' is exceeding the max param length"), {
      statusCode: 414,
      code: 'FST_ERR_MAX_PARAM_LENGTH',
    });
    expect(translateError(long)).toMatchObject({
      status: 414,
      code: 'URI_TOO_LONG',
      message: 'URI too long',
    });
  });

  it('should map a 415 of Fastify to UNSUPPORTED_MEDIA_TYPE', () => {
    const err = Object.assign(new Error('Unsupported Media Type'), {
      statusCode: 415,
      code: 'FST_ERR_CTP_INVALID_MEDIA_TYPE',
    });
    expect(translateError(err)).toMatchObject({ status: 415, code: 'UNSUPPORTED_MEDIA_TYPE' });
  });

  it('should answer anything unknown with 500 SERVICE_ERROR', () => {
    expect(translateError('a string')).toMatchObject({ status: 500, code: 'SERVICE_ERROR' });
  });
});

describe('logging of unexpected errors (spec §6.3)', () => {
  function recorder() {
    const error = jest.fn();
    return { error, logger: { error } as unknown as Logger };
  }
  const request = (over: Partial<FastifyRequest> = {}) =>
    ({
      id: 'req-1',
      url: '/api/v1/x',
      tenant: { id: '7', code: 'acme', name: 'Acme', features: {} },
      user: { userId: 42 },
      ...over,
    }) as unknown as FastifyRequest;
  const sqliteError = () =>
    new QueryFailedError(
      'INSERT INTO t (email) VALUES (?)',
      ['alice@example.com'],
      Object.assign(new Error('UNIQUE constraint failed: t.email'), { code: 'SQLITE_CONSTRAINT_UNIQUE' }),
    );

  it('should log a database error once as ms-sql.query.failed with tenant, user, dialect and code', () => {
    const { error, logger } = recorder();
    logUnexpectedError(logger, request(), sqliteError(), { dialect: 'postgres' });
    expect(error).toHaveBeenCalledTimes(1);
    expect(error).toHaveBeenCalledWith(
      {
        event: 'ms-sql.query.failed',
        category: 'database',
        dialect: 'sqlite', // the driver's, before the configured one
        tenantId: '7',
        userId: 42,
        requestId: 'req-1',
        code: 'SQLITE_CONSTRAINT_UNIQUE',
        message: 'UNIQUE constraint failed: t.email',
      },
      'ms-sql.query.failed',
    );
    expect(JSON.stringify(error.mock.calls)).not.toMatch(/alice@example\.com|INSERT/);
  });

  it('should fall back to the configured dialect when the driver cannot be told', () => {
    const { error, logger } = recorder();
    logUnexpectedError(logger, request(), new QueryFailedError('SELECT 1', [], new Error('x')), {
      dialect: 'mssql',
    });
    expect(error.mock.calls[0][0]).toMatchObject({ event: 'ms-sql.query.failed', dialect: 'mssql' });
  });

  it('should log other errors as "Unhandled error" with tenant and user', () => {
    const { error, logger } = recorder();
    const boom = new Error('boom');
    logUnexpectedError(logger, request(), boom);
    expect(error).toHaveBeenCalledWith(
      { err: boom, tenantId: '7', userId: 42, requestId: 'req-1', url: '/api/v1/x' },
      'Unhandled error',
    );
  });

  it('should log without tenant and user before the guards have run (Fastify error handler path)', () => {
    const { error, logger } = recorder();
    logUnexpectedError(logger, request({ tenant: undefined, user: undefined }), sqliteError());
    expect(error.mock.calls[0][0]).toMatchObject({
      tenantId: undefined,
      userId: undefined,
      requestId: 'req-1',
    });
  });

  it('should answer a database error with the generic 500 SERVICE_ERROR envelope and log it once', () => {
    const { error, logger } = recorder();
    const sent: unknown[] = [];
    const reply = {
      sent: false,
      header: jest.fn().mockReturnThis(),
      status: jest.fn().mockReturnThis(),
      send: jest.fn((body: unknown) => sent.push(body)),
    };
    sendError(reply as unknown as FastifyReply, request(), sqliteError(), logger);
    expect(reply.status).toHaveBeenCalledWith(500);
    expect(sent).toEqual([
      expect.objectContaining({ error: { code: 'SERVICE_ERROR', message: 'Internal error', details: null } }),
    ]);
    expect(JSON.stringify(sent)).not.toMatch(/UNIQUE|email/);
    expect(error).toHaveBeenCalledTimes(1);
  });

  it('should log a database outage once, as database.unavailable with its cause, and count the rest', () => {
    const { error, logger } = recorder();
    const outage = new DatabaseOutage({ log: jest.fn() }, undefined, 60_000);
    try {
      logUnexpectedError(logger, request(), connectionLost(), { dialect: 'postgres', outage });
      for (let i = 0; i < 50; i++)
        logUnexpectedError(logger, request(), refused(), { dialect: 'postgres', outage });
      expect(error).toHaveBeenCalledTimes(1);
      expect(error).toHaveBeenCalledWith(
        {
          event: 'database.unavailable',
          category: 'database',
          dialect: 'postgres',
          tenantId: '7',
          userId: 42,
          requestId: 'req-1',
          code: undefined,
          message: 'Connection terminated unexpectedly',
        },
        'Database unavailable: answering 503 DATABASE_UNAVAILABLE until it is reachable again',
      );
      expect(outage.failedRequests).toBe(51);
      expect(JSON.stringify(error.mock.calls)).not.toContain('secret-param');
    } finally {
      outage.stop();
    }
  });

  it('should answer an outage with the 503 envelope and Retry-After through sendError', () => {
    const { error, logger } = recorder();
    const headers: Record<string, string> = {};
    const sent: unknown[] = [];
    const reply: { sent: boolean; header: jest.Mock; status: jest.Mock; send: jest.Mock } = {
      sent: false,
      header: jest.fn((k: string, v: string) => {
        headers[k.toLowerCase()] = v;
        return reply;
      }),
      status: jest.fn().mockReturnThis(),
      send: jest.fn((body: unknown) => sent.push(body)),
    };
    const outage = new DatabaseOutage({ log: jest.fn() }, undefined, 60_000);
    try {
      sendError(reply as unknown as FastifyReply, request(), refused(), logger, { outage });
      sendError(reply as unknown as FastifyReply, request(), refused(), logger, { outage });
    } finally {
      outage.stop();
    }
    expect(reply.status).toHaveBeenCalledWith(503);
    expect(headers['retry-after']).toBe('5');
    expect(sent[0]).toMatchObject({
      success: false,
      error: { code: 'DATABASE_UNAVAILABLE', details: null },
      meta: { requestId: 'req-1' },
    });
    expect(JSON.stringify(sent)).not.toMatch(/ECONN|10\.0\.0\.5/);
    expect(error).toHaveBeenCalledTimes(1);
  });

  it('should stop the outage checks when the module is destroyed', () => {
    const filter = new AllExceptionsFilter();
    const stop = jest.spyOn(filter.outage, 'stop');
    filter.onModuleDestroy();
    expect(stop).toHaveBeenCalled();
  });

  it('should take the configured dialect by constructor injection (APP_FILTER useClass)', async () => {
    const moduleRef = await Test.createTestingModule({
      providers: [
        AllExceptionsFilter,
        { provide: APP_CONFIG, useValue: { db: { type: 'mariadb' } } as AppConfig },
      ],
    }).compile();
    expect(moduleRef.get<AllExceptionsFilter, { dialect: string }>(AllExceptionsFilter).dialect).toBe(
      'mysql',
    );
    expect((new AllExceptionsFilter() as unknown as { dialect?: string }).dialect).toBeUndefined();
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
