import { Controller, Get, Logger, Module, Req } from '@nestjs/common';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyRequest } from 'fastify';
import { randomBytes } from 'node:crypto';
import { createApp } from '../../src/bootstrap';
import { requestScope } from '../../src/common/request-scope';
import { loadConfig } from '../../src/config/config.schema';
import { DatabaseService } from '../../src/database/database.service';
import { StartupService } from '../../src/health/startup.service';
import { authHeaders, signin, TENANT } from '../support/auth';
import { duplicateKeys } from '../support/json-keys';
import { createTestDatabase, TEST_SECRETS, testCacheUrl, TestDatabase } from '../support/test-database';
import { capturedLogLines } from '../support/log-capture';
import { NO_LOAD_SHEDDING } from '../support/test-app';

jest.mock('../../src/common/logging', () =>
  jest.requireActual<typeof import('../support/log-capture')>('../support/log-capture').loggingWithCapture(),
);
const mockLogLines = capturedLogLines;

/** A query parameter that must never reach a log line. */
const SECRET_PARAM = 'param-secret-9f2c';

/** Tenant-scoped, authenticated probe routes: a failing query and a service log line. */
@Controller('test/log-probe')
class LogProbeController {
  private readonly logger = new Logger('LogProbe');

  constructor(private readonly database: DatabaseService) {}

  @Get('db-error')
  async dbError(): Promise<unknown> {
    const ds = this.database.dataSource;
    // PostgreSQL puts the offending value into the message itself; the others fail on the table.
    if (ds.options.type === 'postgres') return ds.query('SELECT CAST($1 AS integer) AS n', [SECRET_PARAM]);
    return ds.query('SELECT no_such_column FROM no_such_table_log_probe WHERE x = ?', [SECRET_PARAM]);
  }

  @Get('boom')
  boom(): never {
    throw new Error('probe failure');
  }

  @Get('service-log')
  serviceLog(@Req() req: FastifyRequest): { ok: true } {
    // As entity-audit does: the service names requestId, tenantId and userId itself.
    this.logger.log(
      { event: 'probe.logged', requestId: req.id, tenantId: req.tenant?.id, userId: req.user?.userId },
      'probe.logged',
    );
    this.logger.log('plain message');
    return { ok: true };
  }

  @Get('later-log')
  async laterLog(): Promise<{ ok: true }> {
    // A line written after an await, by code that knows nothing of the request (a use case, say).
    await new Promise((resolve) => setTimeout(resolve, 5));
    new Logger('DeepService').log('deep line');
    return { ok: true };
  }
}

@Module({ controllers: [LogProbeController] })
class LogProbeModule {}

const expectedDialect = { sqlite: 'sqlite', postgres: 'postgres', mariadb: 'mysql' } as const;

describe('Request log lines (spec §6.3)', () => {
  let app: NestFastifyApplication;
  let db: TestDatabase;
  let headers: Record<string, string>;
  let userId: number;

  beforeAll(async () => {
    db = await createTestDatabase('request_logs');
    const cacheUrl = testCacheUrl();
    const config = loadConfig({
      ...TEST_SECRETS,
      NODE_ENV: 'test',
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'json',
      SEED_DEMO: 'true',
      CACHE_KEY_PREFIX: `test-${randomBytes(4).toString('hex')}`,
      CACHE_STARTUP_RETRY_MS: '100',
      ...NO_LOAD_SHEDDING,
      ...(cacheUrl ? { CACHE_URL: cacheUrl } : {}),
      ...db.env,
    });
    // With the logger on (startTestApp turns it off): the lines under test are the real ones.
    app = await createApp(config, { extraModules: [LogProbeModule] });
    await app.init();
    app.flushLogs(); // Nest buffers its log lines until listen(); the tests inject instead
    await app.getHttpAdapter().getInstance().ready();
    await app.get(StartupService).settled();
    const { token } = await signin(app, TENANT.acme, 'admin@acme.test');
    headers = authHeaders(TENANT.acme, token);
    userId = JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString()).user_id;
  });

  afterAll(async () => {
    app?.get(StartupService).stop();
    await app?.close();
    await db?.drop();
  });

  /** The lines written while `run` was under way, parsed, after checking each for duplicate keys. */
  async function linesOf(run: () => Promise<unknown>): Promise<{ raw: string[]; parsed: any[] }> {
    const from = mockLogLines.length;
    await run();
    await new Promise((r) => setImmediate(r)); // the access line is written on the response's 'finish'
    const raw = mockLogLines.slice(from);
    const withDuplicates = raw
      .map((line) => ({ line, duplicates: duplicateKeys(line) }))
      .filter((l) => l.duplicates.length > 0);
    expect(withDuplicates).toEqual([]);
    return { raw, parsed: raw.map((l) => JSON.parse(l) as unknown) };
  }

  const accessLine = (parsed: any[], url: string): unknown =>
    parsed.find((l) => l.req?.url === url && l.res?.statusCode !== undefined);

  it('should write the access line of a tenant-scoped request with each key once', async () => {
    let requestId = '';
    const { parsed } = await linesOf(async () => {
      const res = await app.inject({ method: 'GET', url: '/api/v1/auth/profile', headers });
      requestId = String(res.headers['x-request-id']);
    });
    expect(accessLine(parsed, '/api/v1/auth/profile')).toMatchObject({
      requestId,
      tenantId: TENANT.acme,
      userId,
    });
  });

  it('should name the error code in the access line of every error answer, and none on a success (issue 20 #8)', async () => {
    const cases = [
      { url: '/api/v1/customers?limit=abc', headers, status: 400, errorCode: 'VALIDATION_ERROR' },
      {
        url: '/api/v1/auth/profile',
        headers: { 'x-tenant-id': headers['x-tenant-id'] },
        status: 401,
        errorCode: 'UNAUTHORIZED',
      },
      { url: '/api/v1/customers/999999', headers, status: 404, errorCode: 'NOT_FOUND' },
      { url: '/no/such/route', headers: {}, status: 404, errorCode: 'NOT_FOUND' },
      { url: '/test/log-probe/boom', headers, status: 500, errorCode: 'SERVICE_ERROR' },
    ];
    const { parsed } = await linesOf(async () => {
      for (const c of cases) {
        const res = await app.inject({ method: 'GET', url: c.url, headers: c.headers });
        expect([c.url, res.statusCode, res.json().error?.code]).toEqual([c.url, c.status, c.errorCode]);
      }
      await app.inject({ method: 'GET', url: '/api/v1/customers?limit=1', headers });
    });
    for (const c of cases) {
      expect(accessLine(parsed, c.url)).toMatchObject({
        res: { statusCode: c.status },
        errorCode: c.errorCode,
      });
    }
    expect(accessLine(parsed, '/api/v1/customers?limit=1')).not.toHaveProperty('errorCode');
  });

  it('should write the lines of a service during a request with each key once', async () => {
    let requestId = '';
    const { parsed } = await linesOf(async () => {
      const res = await app.inject({ method: 'GET', url: '/test/log-probe/service-log', headers });
      expect(res.statusCode).toBe(200);
      requestId = String(res.headers['x-request-id']);
    });
    expect(parsed.find((l) => l.event === 'probe.logged')).toMatchObject({
      requestId,
      tenantId: TENANT.acme,
      userId,
      context: 'LogProbe',
    });
    expect(parsed.find((l) => l.msg === 'plain message')).toMatchObject({ requestId, context: 'LogProbe' });
    expect(accessLine(parsed, '/test/log-probe/service-log')).toMatchObject({
      requestId,
      tenantId: TENANT.acme,
      userId,
    });
  });

  it('should give lines written after an await by code that never saw the request its ids (async-local scope)', async () => {
    let requestId = '';
    const { parsed } = await linesOf(async () => {
      const res = await app.inject({ method: 'GET', url: '/test/log-probe/later-log', headers });
      expect(res.statusCode).toBe(200);
      requestId = String(res.headers['x-request-id']);
    });
    expect(parsed.find((l) => l.msg === 'deep line')).toMatchObject({
      requestId,
      tenantId: TENANT.acme,
      userId,
      context: 'DeepService',
    });
  });

  it("should give a worker's lines the ids of its job's scope, outside any request", async () => {
    const { parsed } = await linesOf(async () => {
      await requestScope.run({ requestId: 'job-42', tenantId: TENANT.globex, userId: 77 }, async () => {
        await new Promise((resolve) => setTimeout(resolve, 5));
        new Logger('Worker').log('worker line');
      });
      new Logger('Worker').log('after the job');
    });
    expect(parsed.find((l) => l.msg === 'worker line')).toMatchObject({
      requestId: 'job-42',
      tenantId: TENANT.globex,
      userId: 77,
    });
    expect(parsed.find((l) => l.msg === 'after the job')).not.toHaveProperty('requestId');
  });

  it('should log a database error once as ms-sql.query.failed with tenant, user and dialect, no parameters', async () => {
    let requestId = '';
    const { raw, parsed } = await linesOf(async () => {
      const res = await app.inject({ method: 'GET', url: '/test/log-probe/db-error', headers });
      expect(res.statusCode).toBe(500);
      expect(res.json().error.code).toBe('SERVICE_ERROR');
      expect(res.body).not.toMatch(/no_such|SQL|relation|syntax|integer|param-secret/i);
      requestId = String(res.headers['x-request-id']);
    });
    const events = parsed.filter((l) => l.event === 'ms-sql.query.failed');
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      level: 50,
      event: 'ms-sql.query.failed',
      category: 'database',
      dialect: expectedDialect[db.dialect],
      tenantId: TENANT.acme,
      userId,
      requestId,
      code: expect.any(String),
      message: expect.any(String),
    });
    expect(events[0].message.length).toBeGreaterThan(0);
    // Logged once: not a second time as an "Unhandled error", and never with the parameters.
    expect(parsed.filter((l) => l.level >= 50)).toHaveLength(1);
    expect(raw.join('\n')).not.toContain(SECRET_PARAM);
  });

  it('should log any other unexpected error as before, with tenant and user', async () => {
    let requestId = '';
    const { parsed } = await linesOf(async () => {
      const res = await app.inject({ method: 'GET', url: '/test/log-probe/boom', headers });
      expect(res.statusCode).toBe(500);
      requestId = String(res.headers['x-request-id']);
    });
    const errors = parsed.filter((l) => l.level >= 50);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({
      msg: 'Unhandled error',
      requestId,
      tenantId: TENANT.acme,
      userId,
      err: { message: 'probe failure' },
    });
    expect(errors[0].event).toBeUndefined();
  });
});
