import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomBytes } from 'node:crypto';
import type { DataSource, QueryRunner } from 'typeorm';
import { createApp } from '../../src/bootstrap';
import { loadConfig } from '../../src/config/config.schema';
import { createDataSource } from '../../src/database/data-source.factory';
import { DatabaseService } from '../../src/database/database.service';
import { StartupService } from '../../src/health/startup.service';
import { authHeaders, signin, TENANT } from '../support/auth';
import { startTcpProxy, TcpProxy } from '../support/tcp-proxy';
import { NO_LOAD_SHEDDING, waitFor } from '../support/test-app';
import { capturedLogLines } from '../support/log-capture';
import {
  createTestDatabase,
  TEST_SECRETS,
  testCacheUrl,
  testDialect,
  TestDatabase,
} from '../support/test-database';

jest.mock('../../src/common/logging', () =>
  jest.requireActual<typeof import('../support/log-capture')>('../support/log-capture').loggingWithCapture(),
);
const mockLogLines = capturedLogLines;

interface LogLine {
  level: number;
  msg?: string;
  event?: string;
  [key: string]: unknown;
}

const logLines = (from = 0): LogLine[] => mockLogLines.slice(from).map((l) => JSON.parse(l) as LogLine);
const errorLines = (from = 0): LogLine[] => logLines(from).filter((l) => l.level >= 50);
const recoveryLines = (from = 0): LogLine[] => logLines(from).filter((l) => l.event === 'database.recovered');

interface LoggedApp {
  app: NestFastifyApplication;
  db: TestDatabase;
  close(): Promise<void>;
}

/** The whole app as production builds it, with its logger on (startTestApp turns it off). */
async function startLoggedApp(label: string, env: Record<string, string> = {}): Promise<LoggedApp> {
  const db = await createTestDatabase(label);
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
    ...env,
  });
  const app = await createApp(config);
  await app.init();
  app.flushLogs();
  await app.getHttpAdapter().getInstance().ready();
  await app.get(StartupService).settled();
  return {
    app,
    db,
    close: async () => {
      app.get(StartupService).stop();
      await app.close();
      await db.drop();
    },
  };
}

interface Answer {
  statusCode: number;
  headers: Record<string, unknown>;
  body: string;
}

/** What an answer of the outage must be: 503 DATABASE_UNAVAILABLE in the envelope, with Retry-After. */
function unavailableProblem(res: Answer): string | undefined {
  if (res.statusCode !== 503) return `status ${res.statusCode}: ${res.body.slice(0, 160)}`;
  if (res.headers['retry-after'] !== '5') return `Retry-After ${String(res.headers['retry-after'])}`;
  const body = JSON.parse(res.body) as { success?: boolean; error?: { code?: string }; meta?: unknown };
  if (body.success !== false || body.error?.code !== 'DATABASE_UNAVAILABLE' || !body.meta) {
    return `body ${res.body.slice(0, 160)}`;
  }
  if (/ECONN|SQLITE|terminated|pool|connect /i.test(res.body)) return `raw cause in ${res.body}`;
  return undefined;
}

function expectOutageLine(line: LogLine | undefined, dialect: string): void {
  expect(line).toMatchObject({
    level: 50,
    event: 'database.unavailable',
    category: 'database',
    dialect,
    message: expect.any(String), // the driver's message (and its code, when it has one)
    requestId: expect.any(String),
  });
  expect(String(line?.message).length).toBeGreaterThan(0);
}

const customerBody = (email: string) => ({ name: `Outage ${email.slice(0, 20)}`, email, tier: 'silver' });

const dialect = testDialect();

/**
 * Issue 9 #6: a database that goes away answers 503 DATABASE_UNAVAILABLE with Retry-After (never
 * 500), is logged once per outage and once when it is back, and leaves nothing half-written. On
 * PostgreSQL and MariaDB the app reaches its server through a TCP proxy that the test cuts under
 * load; on SQLite (no server to take away) another connection holds the write lock beyond the
 * busy timeout, which is SQLite's outage (SQLITE_BUSY).
 */
describe(`Database outage (${dialect})`, () => {
  if (dialect === 'sqlite') sqliteOutage();
  else serverOutage(dialect);
});

function serverOutage(server: 'postgres' | 'mariadb'): void {
  const driverDialect = server === 'postgres' ? 'postgres' : 'mysql';
  let t: LoggedApp;
  let proxy: TcpProxy;
  let direct: DataSource;
  let headers: Record<string, string>;
  let customersBefore = 0;

  interface Shot extends Answer {
    method: 'GET' | 'POST';
    sentAt: number;
    email?: string;
  }
  const shots: Shot[] = [];
  let cutAt = 0;
  let restoredAt = 0;
  let logFrom = 0;

  const count = async (): Promise<number> =>
    Number((await direct.query<Array<{ n: unknown }>>('SELECT COUNT(*) AS n FROM demo_customers'))[0].n);

  beforeAll(async () => {
    proxy = await startTcpProxy(server === 'postgres' ? 5432 : 3306);
    t = await startLoggedApp(`outage_${server}`, {
      DB_HOST: '127.0.0.1',
      DB_PORT: String(proxy.port),
      SQL_CONNECTION_TIMEOUT: '2000',
      DB_POOL_ACQUIRE_TIMEOUT_MS: '2000',
      // The load is one tenant's: its rate limit (D39) must not answer before the database does.
      RATE_LIMIT_POINTS: '1000000',
    });
    direct = createDataSource(t.db.config); // straight to the server, past the proxy
    await direct.initialize();
    headers = authHeaders(TENANT.acme, (await signin(t.app, TENANT.acme, 'admin@acme.test')).token);
    customersBefore = await count();
  });

  afterAll(async () => {
    await proxy?.restore();
    if (direct?.isInitialized) await direct.destroy();
    await t?.close();
    await proxy?.close();
  });

  /** One request of the load: a list read (a page no other request asks for, so never cached) or a create. */
  async function shoot(n: number): Promise<void> {
    const sentAt = Date.now();
    if (n % 2 === 0) {
      const res = await t.app.inject({ method: 'GET', url: `/api/v1/customers?limit=1&skip=${n}`, headers });
      shots.push({ method: 'GET', sentAt, statusCode: res.statusCode, headers: res.headers, body: res.body });
      return;
    }
    const email = `outage-${n}@acme.example`;
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/customers',
      headers,
      payload: customerBody(email),
    });
    shots.push({
      method: 'POST',
      sentAt,
      email,
      statusCode: res.statusCode,
      headers: res.headers,
      body: res.body,
    });
  }

  it('should answer every request with 503 DATABASE_UNAVAILABLE and Retry-After while the database is away, never 500', async () => {
    logFrom = mockLogLines.length;
    let next = 0;
    let stop = false;
    const workers = Array.from({ length: 30 }, async () => {
      while (!stop) await shoot(next++);
    });
    // The database is up and the load running: some answers have succeeded, more are in flight.
    await waitFor(async () => shots.filter((s) => s.statusCode < 300).length >= 20, 20_000, 10);
    cutAt = Date.now();
    await proxy.cut(); // "stop the database" with requests in flight
    await new Promise((r) => setTimeout(r, 2000));
    const livez = await t.app.inject({ method: 'GET', url: '/livez' });
    stop = true;
    await Promise.all(workers);

    expect(livez.statusCode).toBe(503); // the probe still tells
    const before = shots.filter((s) => s.sentAt < cutAt);
    const during = shots.filter((s) => s.sentAt >= cutAt);
    expect(before.filter((s) => s.statusCode === 200 || s.statusCode === 201).length).toBeGreaterThan(0);
    expect(during.length).toBeGreaterThan(100);
    const problems = during.map((s) => unavailableProblem(s)).filter((p): p is string => p !== undefined);
    expect([...new Set(problems)]).toEqual([]);
    // Requests in flight at the cut either finished before it or failed the same way; none is a 500.
    // A 409 CONFLICT (busy: a lock wait ran out under 30 concurrent writers of one tenant, which the
    // outbox's per-tenant counter serialises) is a clean answer to retry, not an outage symptom.
    const inFlight = before.filter(
      (s) =>
        s.statusCode !== 200 &&
        s.statusCode !== 201 &&
        !(s.statusCode === 409 && /"code":"CONFLICT"/.test(String(s.body))),
    );
    expect([...new Set(inFlight.map((s) => unavailableProblem(s)).filter(Boolean))]).toEqual([]);
    expect(shots.filter((s) => s.statusCode === 500)).toEqual([]);
  });

  it('should log the outage once, at error level with its cause, not per request', () => {
    const errors = errorLines(logFrom);
    expect(errors).toHaveLength(1);
    expectOutageLine(errors[0], driverDialect);
    expect(recoveryLines(logFrom)).toEqual([]);
  });

  it('should serve again once the database is back and log the recovery once, with the failed requests', async () => {
    await proxy.restore();
    restoredAt = Date.now();
    await waitFor(async () => {
      const res = await t.app.inject({
        method: 'GET',
        url: `/api/v1/customers?limit=1&skip=${100_000 + shots.length}`,
        headers,
      });
      shots.push({
        method: 'GET',
        sentAt: Date.now(),
        statusCode: res.statusCode,
        headers: res.headers,
        body: res.body,
      });
      return res.statusCode === 200;
    }, 10_000);
    const email = `outage-after-${Date.now()}@acme.example`;
    const created = await t.app.inject({
      method: 'POST',
      url: '/api/v1/customers',
      headers,
      payload: customerBody(email),
    });
    shots.push({
      method: 'POST',
      sentAt: Date.now(),
      email,
      statusCode: created.statusCode,
      headers: created.headers,
      body: created.body,
    });
    expect(created.statusCode).toBe(201);
    // /livez may serve its last check result for a moment (probe results are cached briefly).
    await waitFor(
      async () => (await t.app.inject({ method: 'GET', url: '/livez' })).statusCode === 200,
      10_000,
    );

    await waitFor(async () => recoveryLines(logFrom).length > 0, 10_000);
    const failed = shots.filter((s) => s.statusCode === 503).length;
    const recovery = recoveryLines(logFrom);
    expect(recovery).toHaveLength(1);
    expect(recovery[0]).toMatchObject({
      level: 30,
      event: 'database.recovered',
      failedRequests: failed,
      msg: `database reachable again after ${failed} failed requests`,
    });
    expect(recovery[0].requestId).toBeUndefined(); // the recovery belongs to no request
    // Still one error line for the whole outage.
    expect(errorLines(logFrom)).toHaveLength(1);
  });

  it('should have written nothing half: every row of a 201 is there, no row of a request after the cut', async () => {
    const rows = await direct.query<Array<{ e: string }>>(
      "SELECT cus_email AS e FROM demo_customers WHERE cus_email LIKE 'outage-%'",
    );
    const stored = new Set(rows.map((r) => r.e));
    const posts = shots.filter((s) => s.method === 'POST');
    const created = posts.filter((s) => s.statusCode === 201).map((s) => s.email);
    const inFlight = posts.filter((s) => s.sentAt < cutAt && s.statusCode === 503).map((s) => s.email);
    const afterCut = posts.filter((s) => s.sentAt >= cutAt && s.sentAt < restoredAt).map((s) => s.email);
    expect(created.filter((e) => !stored.has(e!))).toEqual([]);
    expect(afterCut.filter((e) => stored.has(e!))).toEqual([]);
    // A create in flight at the cut may have committed before its answer was lost; nothing else.
    const allowed = new Set([...created, ...inFlight]);
    expect([...stored].filter((e) => !allowed.has(e))).toEqual([]);
    expect(await count()).toBe(customersBefore + stored.size);
  });
}

function sqliteOutage(): void {
  let t: LoggedApp;
  let headers: Record<string, string>;
  /** A connection of "another process" to the same file, holding the write lock. */
  let locker: DataSource | undefined;
  let lock: QueryRunner | undefined;
  let logFrom = 0;
  let serial = 0;

  const count = async (): Promise<number> =>
    Number(
      (
        await t.app
          .get(DatabaseService)
          .dataSource.query<Array<{ n: unknown }>>('SELECT COUNT(*) AS n FROM demo_customers')
      )[0].n,
    );

  beforeAll(async () => {
    t = await startLoggedApp('outage_sqlite');
    headers = authHeaders(TENANT.acme, (await signin(t.app, TENANT.acme, 'admin@acme.test')).token);
  });

  afterAll(async () => {
    if (lock && !lock.isReleased) {
      await lock.query('ROLLBACK').catch(() => undefined);
      await lock.release();
    }
    if (locker?.isInitialized) await locker.destroy();
    await t?.close();
  });

  const create = () =>
    t.app.inject({
      method: 'POST',
      url: '/api/v1/customers',
      headers,
      payload: customerBody(`outage-sqlite-${++serial}@acme.example`),
    });

  let before = 0;

  it('should answer writes with 503 DATABASE_UNAVAILABLE and Retry-After while another process holds the write lock, and still read', async () => {
    before = await count();
    logFrom = mockLogLines.length;
    locker = createDataSource(t.db.config);
    await locker.initialize();
    lock = locker.createQueryRunner();
    await lock.query('BEGIN IMMEDIATE'); // the write lock, held beyond the busy timeout (5 s)
    const first = await create();
    expect(unavailableProblem(first)).toBeUndefined();
    const read = await t.app.inject({ method: 'GET', url: '/api/v1/customers?limit=1&skip=3', headers });
    expect(read.statusCode).toBe(200); // WAL: readers do not wait for the writer
    const second = await create();
    expect(unavailableProblem(second)).toBeUndefined();
  });

  it('should log the outage once, with its cause, and no recovery while the lock is held', async () => {
    await new Promise((r) => setTimeout(r, 2500)); // more than two checks of the outage
    const errors = errorLines(logFrom);
    expect(errors).toHaveLength(1);
    expectOutageLine(errors[0], 'sqlite');
    expect(errors[0].code).toMatch(/^SQLITE_BUSY/);
    expect(recoveryLines(logFrom)).toEqual([]);
  });

  it('should log the recovery once the lock is released and write again; nothing half-written', async () => {
    await lock!.query('ROLLBACK');
    await lock!.release();
    await locker!.destroy();
    await waitFor(async () => recoveryLines(logFrom).length > 0, 10_000);
    expect(recoveryLines(logFrom)).toEqual([
      expect.objectContaining({
        level: 30,
        event: 'database.recovered',
        failedRequests: 2,
        msg: 'database reachable again after 2 failed requests',
      }),
    ]);
    expect(await count()).toBe(before);
    const res = await create();
    expect(res.statusCode).toBe(201);
    expect(await count()).toBe(before + 1);
    expect(errorLines(logFrom)).toHaveLength(1);
  });
}
