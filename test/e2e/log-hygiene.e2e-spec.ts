import { Controller, Get, Module } from '@nestjs/common';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer, Socket } from 'node:net';
import { createApp } from '../../src/bootstrap';
import { loadConfig } from '../../src/config/config.schema';
import { StartupService } from '../../src/health/startup.service';
import { authHeaders, signin, TENANT, tenantHeader } from '../support/auth';
import { NO_LOAD_SHEDDING, waitFor } from '../support/test-app';
import { createTestDatabase, TEST_SECRETS, TestDatabase } from '../support/test-database';
import { capturedLogLines } from '../support/log-capture';

jest.mock('../../src/common/logging', () =>
  jest.requireActual<typeof import('../support/log-capture')>('../support/log-capture').loggingWithCapture(),
);
const mockLogLines = capturedLogLines;

/** A tenant-scoped, authenticated route that fails unexpectedly: the filter's "Unhandled error" line. */
@Controller('test/log-hygiene')
class FailingController {
  @Get('boom')
  boom(): never {
    throw new Error('probe failure');
  }
}

@Module({ controllers: [FailingController] })
class FailingModule {}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

function startRedis(port: number): ChildProcess {
  return spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.connect(port, '127.0.0.1');
  });
}

async function stopRedis(redis: ChildProcess | undefined): Promise<void> {
  if (!redis || redis.exitCode !== null || redis.signalCode !== null) return;
  const exited = new Promise((r) => redis.once('exit', r));
  redis.kill('SIGKILL');
  await exited;
}

/**
 * Issue 9, finding 9 (parts): secrets in query strings never reach the access log, and a cache
 * outage under load is logged once, not per call. On a Redis of its own, which the test stops and
 * starts again (whatever TEST_CACHE says).
 */
describe('Log hygiene (issue 9 #9)', () => {
  let app: NestFastifyApplication;
  let db: TestDatabase;
  let port: number;
  let redis: ChildProcess | undefined;
  let headers: Record<string, string>;

  beforeAll(async () => {
    port = await freePort();
    redis = startRedis(port);
    await waitFor(() => accepts(port), 10000, 50);
    db = await createTestDatabase('log_hygiene');
    const config = loadConfig({
      ...TEST_SECRETS,
      NODE_ENV: 'test',
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'json',
      SEED_DEMO: 'true',
      CACHE_KEY_PREFIX: `test-${randomBytes(4).toString('hex')}`,
      CACHE_STARTUP_RETRY_MS: '100',
      ...NO_LOAD_SHEDDING,
      CACHE_URL: `redis://127.0.0.1:${port}`,
      ...db.env,
    });
    app = await createApp(config, { extraModules: [FailingModule] });
    await app.init();
    app.flushLogs();
    await app.getHttpAdapter().getInstance().ready();
    await app.get(StartupService).settled();
    const { token } = await signin(app, TENANT.acme, 'admin@acme.test');
    headers = authHeaders(TENANT.acme, token);
  });

  afterAll(async () => {
    app?.get(StartupService).stop();
    await app?.close();
    await db?.drop();
    await stopRedis(redis);
  });

  const parsed = (from: number): any[] => mockLogLines.slice(from).map((l) => JSON.parse(l) as unknown);

  describe('secret query parameters', () => {
    const SECRETS = ['tk-51c9a', 'at-51c9b', 'jw-51c9c', 'pw-51c9d', 'se-51c9e', 'otp-51c9f'];
    const query =
      `access_token=${SECRETS[1]}&token=${SECRETS[0]}&jwt=${SECRETS[2]}` +
      `&password=${SECRETS[3]}&session=${SECRETS[4]}&otp=${SECRETS[5]}&limit=5`;
    const logged =
      'access_token=[redacted]&token=[redacted]&jwt=[redacted]&password=[redacted]' +
      '&session=[redacted]&otp=[redacted]&limit=5';

    it.each([
      ['a signed-in request', '/api/v1/auth/profile', true, 200],
      ['a refused list', '/api/v1/customers', true, 400],
      ['an anonymous request', '/api/v1/customers', false, 401],
    ])(
      'should be redacted in the access line of %s, the rest of the URL kept',
      async (_, path, signedIn, status) => {
        const from = mockLogLines.length;
        const res = await app.inject({
          method: 'GET',
          url: `${path}?${query}`,
          headers: signedIn ? headers : { 'x-tenant-id': tenantHeader(TENANT.acme) },
          remoteAddress: '10.7.0.1',
        });
        expect(res.statusCode).toBe(status);
        await new Promise((r) => setImmediate(r));
        const raw = mockLogLines.slice(from).join('\n');
        for (const secret of SECRETS) expect(raw).not.toContain(secret);
        const access = parsed(from).find((l) => l.res?.statusCode === status);
        expect(access.req.url).toBe(`${path}?${logged}`);
        expect(access.msg).toContain(`GET ${path}?${logged} ${status}`);
      },
    );

    it('should be redacted in the url of the "Unhandled error" line', async () => {
      const from = mockLogLines.length;
      const res = await app.inject({ method: 'GET', url: `/test/log-hygiene/boom?${query}`, headers });
      expect(res.statusCode).toBe(500);
      await new Promise((r) => setImmediate(r));
      const raw = mockLogLines.slice(from).join('\n');
      for (const secret of SECRETS) expect(raw).not.toContain(secret);
      const unhandled = parsed(from).find((l) => l.msg === 'Unhandled error');
      expect(unhandled.url).toBe(`/test/log-hygiene/boom?${logged}`);
      const access = parsed(from).find((l) => l.res?.statusCode === 500);
      expect(access.req.url).toBe(`/test/log-hygiene/boom?${logged}`);
    });
  });

  describe('a cache outage under load', () => {
    const cacheLines = (lines: any[]): any[] => lines.filter((l) => l.context === 'CacheService');
    const flood = (n: number) =>
      Promise.all(
        Array.from({ length: n }, (_, i) =>
          app.inject({
            method: 'GET',
            url: `/api/v1/customers?limit=${(i % 20) + 1}`,
            headers,
            remoteAddress: `10.8.0.${i % 200}`,
          }),
        ),
      );

    it('should log one warning with the error while Redis is down, and one info line with the count when it is back', async () => {
      await flood(5); // warm, healthy: nothing logged by the cache
      const from = mockLogLines.length;
      await stopRedis(redis);
      const down = await flood(200);
      // Cache failures never fail a request.
      expect(down.map((r) => r.statusCode).filter((s) => s !== 200)).toEqual([]);

      const warnings = cacheLines(parsed(from)).filter((l) => l.level === 40);
      expect(warnings).toHaveLength(1);
      expect(warnings[0].msg).toMatch(/^Cache (read|write) failed/);
      expect(typeof warnings[0].err).toBe('string');
      expect(warnings[0].err.length).toBeGreaterThan(0);
      expect(cacheLines(parsed(from)).filter((l) => l.level === 30)).toEqual([]);

      redis = startRedis(port);
      await waitFor(() => accepts(port), 10000, 50);
      // ioredis reconnects with its backoff (at most 5 s); requests go on meanwhile.
      await waitFor(
        async () => {
          await flood(5);
          return cacheLines(parsed(from)).some((l) => l.level === 30);
        },
        20000,
        200,
      );
      await flood(20);
      const lines = cacheLines(parsed(from));
      expect(lines.filter((l) => l.level === 40)).toHaveLength(1);
      const recovered = lines.filter((l) => l.level === 30);
      expect(recovered).toHaveLength(1);
      expect(recovered[0].msg).toMatch(/^Cache works again; \d+ further failures? not logged/);
      // Each of the 200 requests read the cache at least once: all but the first failure counted.
      expect(recovered[0].suppressed).toBeGreaterThanOrEqual(199);
    });
  });
});
