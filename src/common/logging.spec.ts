import type { LoggerService } from '@nestjs/common';
import fastify from 'fastify';
import { pino, type DestinationStream, type LoggerOptions } from 'pino';
import type { AppConfig } from '../config/config.schema';
import { codeForStatus } from './errors/error-codes';
import { installAccessLog } from '../http/access-log.hook';
import { pinoBaseOptions, pinoParams, QuietFrameworkLogger, redactUrl, setLogContext } from './logging';
import type { AuthUser } from './request-context';
import { requestScope, type RequestScope } from './request-scope';

describe(QuietFrameworkLogger.name, () => {
  function recorder() {
    const lines: Array<[string, unknown[]]> = [];
    const at =
      (level: string) =>
      (...args: unknown[]): void => {
        lines.push([level, args]);
      };
    const inner: LoggerService = {
      log: at('info'),
      error: at('error'),
      warn: at('warn'),
      debug: at('debug'),
      verbose: at('verbose'),
      fatal: at('fatal'),
    };
    return { lines, logger: new QuietFrameworkLogger(inner) };
  }

  it("should demote Nest's module and route listings from info to debug", () => {
    const { lines, logger } = recorder();
    logger.log('AppModule dependencies initialized', 'InstanceLoader');
    logger.log('Mapped {/api/v1/auth/signin, POST} route', 'RouterExplorer');
    logger.log('Nest application successfully started', 'NestApplication');
    expect(lines.map(([level]) => level)).toEqual(['debug', 'debug', 'debug']);
  });

  it("should pass the service's own lines and every warning or error through unchanged", () => {
    const { lines, logger } = recorder();
    logger.log('Ready in 1200 ms', 'Startup');
    logger.log({ event: 'entity.created' }, 'entity.created');
    logger.warn('slow', 'InstanceLoader');
    logger.error('boom', 'stack', 'RouterExplorer');
    expect(lines).toEqual([
      ['info', ['Ready in 1200 ms', 'Startup']],
      ['info', [{ event: 'entity.created' }, 'entity.created']],
      ['warn', ['slow', 'InstanceLoader']],
      ['error', ['boom', 'stack', 'RouterExplorer']],
    ]);
  });
});

describe(pinoParams.name, () => {
  const config = { log: { level: 'info', pretty: false } } as AppConfig;
  const count = (line: string, key: string) => line.split(`"${key}":`).length - 1;
  function capture() {
    const lines: string[] = [];
    const stream = { write: (s: string) => void lines.push(...s.split('\n').filter(Boolean)) };
    const params = pinoParams(config);
    return { lines, params: { ...params, pinoHttp: { ...(params.pinoHttp as object), stream } } };
  }

  it('should mount no HTTP middleware (the access line is a Fastify hook)', () => {
    expect(pinoParams(config).forRoutes).toEqual([]);
  });

  it("should give the application logger's lines the scope's ids, each key once", async () => {
    const { lines, params } = capture();
    const logger = pino(
      params.pinoHttp as LoggerOptions,
      (params.pinoHttp as { stream: DestinationStream }).stream,
    );
    // As the HTTP hook does: the scope object kept on the request, where the guards add to it.
    const scope: RequestScope = { requestId: 'req-1' };
    const request = { logScope: scope };
    await requestScope.enter(scope, async () => {
      setLogContext(request, { tenantId: '3' });
      await new Promise((r) => setImmediate(r));
      // A caller without the request's scope at hand: found through the async-local store.
      setLogContext({}, { userId: 9 });
      // As entity-audit does: a service naming the request's keys itself.
      logger.info(
        { event: 'entity.created', requestId: 'req-1', tenantId: '3', userId: 9 },
        'entity.created',
      );
      logger.info('plain');
    });
    logger.info('outside');
    expect(lines).toHaveLength(3);
    for (const line of lines.slice(0, 2)) {
      for (const key of ['requestId', 'tenantId', 'userId', 'msg'])
        expect([key, count(line, key)]).toEqual([key, 1]);
      expect(JSON.parse(line)).toMatchObject({ requestId: 'req-1', tenantId: '3', userId: 9 });
    }
    expect(JSON.parse(lines[2])).not.toHaveProperty('requestId');
  });

  it("should write no request fields on lines outside a request, and keep a caller's own", () => {
    const { lines, params } = capture();
    const logger = pino(
      params.pinoHttp as LoggerOptions,
      (params.pinoHttp as { stream: DestinationStream }).stream,
    );
    logger.info({ requestId: 'mine' }, 'start-up');
    logger.child({ component: 'x' }).info('child');
    expect(count(lines[0], 'requestId')).toBe(1);
    expect(JSON.parse(lines[1])).not.toHaveProperty('requestId');
  });
});

describe(installAccessLog.name, () => {
  const count = (line: string, key: string) => line.split(`"${key}":`).length - 1;

  /** Fastify with the access-log hook writing into `lines`; routes set the tenant and user as the guards do. */
  async function serve(level = 'info') {
    const lines: string[] = [];
    const stream = { write: (s: string) => void lines.push(...s.split('\n').filter(Boolean)) };
    const params = pinoParams({ log: { level, pretty: false } } as AppConfig);
    const app = fastify({ genReqId: () => `req-${lines.length + 1}` });
    installAccessLog(app, { ...params, pinoHttp: { ...(params.pinoHttp as object), stream } });
    app.get('/api/v1/things', async (request, reply) => {
      const status = Number((request.query as { status?: string }).status ?? 200);
      if (status !== 401) {
        request.tenant = { id: '3', code: 'acme', name: 'Acme', features: {} };
        request.user = { userId: 9 } as AuthUser;
      }
      // As every sender of the error envelope does (exception filter, readiness gate, overload).
      if (status >= 400) request.errorCode = codeForStatus(status);
      return reply.status(status).send({ ok: true });
    });
    app.get('/healthz', async () => ({ status: 'ok' }));
    await app.ready();
    return { lines, app };
  }

  it('should write one line per answer with requestId, tenantId, userId, req, res and responseTime, each once', async () => {
    const { lines, app } = await serve();
    await app.inject({ url: '/api/v1/things?page=2' });
    expect(lines).toHaveLength(1);
    for (const key of ['requestId', 'tenantId', 'userId', 'req', 'res', 'msg', 'responseTime'])
      expect([key, count(lines[0], key)]).toEqual([key, 1]);
    expect(JSON.parse(lines[0])).toMatchObject({
      level: 30,
      requestId: 'req-1',
      tenantId: '3',
      userId: 9,
      req: { id: 'req-1', method: 'GET', url: '/api/v1/things?page=2' },
      res: { statusCode: 200 },
      responseTime: expect.any(Number),
      msg: expect.stringMatching(/^GET \/api\/v1\/things\?page=2 200 \d+ms$/),
    });
    await app.close();
  });

  it('should write neither tenant nor user where the guards set none, and nothing for probes', async () => {
    const { lines, app } = await serve();
    await app.inject({ url: '/api/v1/things?status=401' });
    await app.inject({ url: '/healthz' });
    expect(lines).toHaveLength(1);
    const line = JSON.parse(lines[0]);
    expect(line).not.toHaveProperty('tenantId');
    expect(line).not.toHaveProperty('userId');
    expect(line.res.statusCode).toBe(401);
    expect(line.errorCode).toBe('UNAUTHORIZED');
    await app.close();
  });

  it('should name the error code of an error answer, and none on a success', async () => {
    const { lines, app } = await serve();
    await app.inject({ url: '/api/v1/things?status=400' });
    await app.inject({ url: '/api/v1/things?status=200' });
    expect(lines).toHaveLength(2);
    expect(JSON.parse(lines[0])).toMatchObject({ res: { statusCode: 400 }, errorCode: 'VALIDATION_ERROR' });
    expect(count(lines[0], 'errorCode')).toBe(1);
    expect(JSON.parse(lines[1])).not.toHaveProperty('errorCode');
  });

  it.each([200, 409])(
    'should write the line pino would write, field for field, whatever the URL and ids hold (%i)',
    async (status) => {
      const { lines, app } = await serve();
      const hostile = `/api/v1/things?q=%22%7D%0A"quote\\back\u2028x&status=${status}`;
      await app.inject({ url: hostile, headers: { 'x-request-id': 'ignored' } });
      expect(lines).toHaveLength(1);
      const line = JSON.parse(lines[0]);
      // What pino itself writes for the same fields, to the same stream format.
      const own: string[] = [];
      pino({ level: 'info' }, { write: (t: string) => void own.push(t) }).info(
        {
          requestId: line.requestId,
          tenantId: '3',
          userId: 9,
          req: { id: line.requestId, method: 'GET', url: line.req.url },
          res: { statusCode: status },
          ...(status >= 400 ? { errorCode: 'CONFLICT' } : {}),
          responseTime: line.responseTime,
        },
        line.msg,
      );
      const expected = JSON.parse(own[0]);
      expect({ ...line, time: 0 }).toEqual({ ...expected, time: 0 });
      expect(Object.keys(line)).toEqual(Object.keys(expected));
      expect(line.req.url).toContain('\\back'); // a backslash survives, escaped and read back
      expect(typeof line.time).toBe('number');
      await app.close();
    },
  );

  it('should write nothing below its level', async () => {
    const { lines, app } = await serve('warn');
    await app.inject({ url: '/api/v1/things?status=500' });
    expect(lines).toEqual([]);
    await app.close();
  });
});

describe(redactUrl.name, () => {
  it.each([
    ['/api/v1/auth/profile', '/api/v1/auth/profile'],
    ['/x?page=2&sortBy=name', '/x?page=2&sortBy=name'],
    ['/x?access_token=abc.def.ghi', '/x?access_token=[redacted]'],
    [
      '/x?token=t1&jwt=j1&password=p1&session=s1&otp=123456&page=2',
      '/x?token=[redacted]&jwt=[redacted]&password=[redacted]&session=[redacted]&otp=[redacted]&page=2',
    ],
    ['/x?ACCESS_TOKEN=a&Password=b', '/x?ACCESS_TOKEN=[redacted]&Password=[redacted]'],
    [
      '/x?reset_token=a&newPassword=b&client_secret=c&api_key=d',
      '/x?reset_token=[redacted]&newPassword=[redacted]&client_secret=[redacted]&api_key=[redacted]',
    ],
    ['/x?access%5Ftoken=a&to%6Ben=b', '/x?access%5Ftoken=[redacted]&to%6Ben=[redacted]'],
    ['/x?token[]=a&token[]=b', '/x?token[]=[redacted]&token[]=[redacted]'],
    ['/x?token=&token&q=1', '/x?token=&token&q=1'],
    ['/x?q=a%3Dtoken%3Db', '/x?q=a%3Dtoken%3Db'],
    ['/api/v1/customers/changes?ticket=hZ2u-x_9', '/api/v1/customers/changes?ticket=[redacted]'],
    ['/x?Ticket=a&tickets=2', '/x?Ticket=[redacted]&tickets=2'],
  ])('should log %s as %s', (url, logged) => {
    expect(redactUrl(url)).toBe(logged);
  });
});

describe('secret query parameters in log lines', () => {
  const SECRETS = ['tok-9f2c1', 'jwt-9f2c2', 'pw-9f2c3', 'sess-9f2c4', 'otp-9f2c5'];
  const QUERY = `access_token=${SECRETS[0]}&jwt=${SECRETS[1]}&password=${SECRETS[2]}&session=${SECRETS[3]}&otp=${SECRETS[4]}&page=2`;
  const REDACTED_QUERY =
    'access_token=[redacted]&jwt=[redacted]&password=[redacted]&session=[redacted]&otp=[redacted]&page=2';

  async function accessLines(status: number): Promise<string[]> {
    const lines: string[] = [];
    const stream = { write: (s: string) => void lines.push(...s.split('\n').filter(Boolean)) };
    const params = pinoParams({ log: { level: 'info', pretty: false } } as AppConfig);
    const app = fastify();
    installAccessLog(app, { ...params, pinoHttp: { ...(params.pinoHttp as object), stream } });
    app.get('/api/v1/things', async (_request, reply) => reply.status(status).send('ok'));
    await app.inject({ url: `/api/v1/things?${QUERY}` });
    await app.close();
    return lines;
  }

  it.each([200, 401, 500])(
    'should redact them in the access line of a %i answer, and keep the rest',
    async (status) => {
      const lines = await accessLines(status);
      expect(lines).toHaveLength(1);
      for (const secret of SECRETS) expect(lines[0]).not.toContain(secret);
      const line = JSON.parse(lines[0]);
      expect(line.req.url).toBe(`/api/v1/things?${REDACTED_QUERY}`);
      expect(line.msg).toMatch(
        new RegExp(`^GET /api/v1/things\\?${REDACTED_QUERY.replace(/[[\]?]/g, '\\$&')} ${status}`),
      );
    },
  );

  it('should redact them in a url field and in a message of any other line (exception filter, tenant proxy)', () => {
    const lines: string[] = [];
    const config = { log: { level: 'info', pretty: false } } as AppConfig;
    const logger = pino(pinoBaseOptions(config), { write: (s: string) => void lines.push(s) });
    logger.error({ url: `/api/v1/things?${QUERY}`, err: new Error('boom') }, 'Unhandled error');
    logger.info({ statusCode: 200 }, `GET /api/v1/things?${QUERY} 200`);
    logger.info('nothing to do? fine');
    for (const line of lines) for (const secret of SECRETS) expect(line).not.toContain(secret);
    expect(JSON.parse(lines[0]).url).toBe(`/api/v1/things?${REDACTED_QUERY}`);
    expect(JSON.parse(lines[1]).msg).toBe(`GET /api/v1/things?${REDACTED_QUERY} 200`);
    expect(JSON.parse(lines[2]).msg).toBe('nothing to do? fine');
  });
});
