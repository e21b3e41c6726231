import type { LoggerService } from '@nestjs/common';
import { createServer, IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { Options, pinoHttp } from 'pino-http';
import type { AppConfig } from '../config/config.schema';
import { pinoBaseOptions, pinoParams, QuietFrameworkLogger, redactUrl, setLogContext } from './logging';

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
  /** pino-http as the app configures it, on a real HTTP server, writing into `lines`. */
  async function serve(
    handler: (req: IncomingMessage, res: ServerResponse) => void,
  ): Promise<{ lines: string[]; get: (path: string) => Promise<void>; close: () => Promise<void> }> {
    const lines: string[] = [];
    const stream = { write: (s: string) => void lines.push(...s.split('\n').filter(Boolean)) };
    const config = { log: { level: 'info', pretty: false } } as AppConfig;
    const middleware = pinoHttp({ ...(pinoParams(config).pinoHttp as Options), stream });
    let n = 0;
    const server = createServer((req, res) => {
      (req as IncomingMessage & { id?: string }).id = `req-${++n}`; // as the app's genReqId does
      middleware(req, res, () => handler(req, res));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as AddressInfo;
    return {
      lines,
      get: async (path) => {
        await fetch(`http://127.0.0.1:${port}${path}`).then((r) => r.text());
        await new Promise((r) => setImmediate(r));
      },
      close: () => new Promise<void>((r) => server.close(() => r())),
    };
  }

  const count = (line: string, key: string) => line.split(`"${key}":`).length - 1;

  it('should write requestId, tenantId and userId once on every line of a tenant-scoped request', async () => {
    const app = await serve((req, res) => {
      // As the guards do, after the access logger has been set up.
      setLogContext(req, { tenantId: '3' });
      setLogContext(req, { userId: 9 });
      // As entity-audit does: a service naming the request's keys itself.
      req.log.info(
        { event: 'entity.created', requestId: req.id, tenantId: '3', userId: 9 },
        'entity.created',
      );
      req.log.info('plain');
      res.end('ok');
    });
    try {
      await app.get('/api/v1/things');
      expect(app.lines).toHaveLength(3);
      for (const line of app.lines) {
        for (const key of ['requestId', 'tenantId', 'userId', 'req', 'msg'])
          expect([key, count(line, key)]).toEqual([key, 1]);
        expect(JSON.parse(line)).toMatchObject({ requestId: 'req-1', tenantId: '3', userId: 9 });
      }
    } finally {
      await app.close();
    }
  });

  it('should keep each request to its own fields when requests overlap', async () => {
    const waiting: Array<() => void> = [];
    const app = await serve((req, res) => {
      setLogContext(req, { tenantId: req.url === '/a' ? 'A' : 'B' });
      waiting.push(() => {
        req.log.info('late');
        res.end();
      });
      if (waiting.length === 2) for (const done of waiting.splice(0).reverse()) done();
    });
    try {
      await Promise.all([app.get('/a'), app.get('/b')]);
      const parsed: any[] = app.lines.map((l) => JSON.parse(l) as unknown);
      expect(parsed).toHaveLength(4);
      for (const line of parsed) expect(line.tenantId).toBe(line.req.url === '/a' ? 'A' : 'B');
      for (const line of parsed) expect(line.requestId).toBe(line.req.id);
    } finally {
      await app.close();
    }
  });

  it('should write no request fields on lines outside a request', () => {
    const lines: string[] = [];
    const config = { log: { level: 'info', pretty: false } } as AppConfig;
    const logger = pino(pinoParams(config).pinoHttp as Options, { write: (s: string) => void lines.push(s) });
    logger.info({ requestId: 'mine' }, 'start-up');
    logger.child({ component: 'x' }).info('child');
    expect(count(lines[0], 'requestId')).toBe(1);
    expect(JSON.parse(lines[1])).not.toHaveProperty('requestId');
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
    const config = { log: { level: 'info', pretty: false } } as AppConfig;
    const middleware = pinoHttp({ ...(pinoParams(config).pinoHttp as Options), stream });
    const server = createServer((req, res) => {
      (req as IncomingMessage & { id?: string }).id = 'req-1';
      middleware(req, res, () => {
        res.statusCode = status;
        res.end('ok');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const { port } = server.address() as AddressInfo;
      await fetch(`http://127.0.0.1:${port}/api/v1/things?${QUERY}`).then((r) => r.text());
      await new Promise((r) => setImmediate(r));
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
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
