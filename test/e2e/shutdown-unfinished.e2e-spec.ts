import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TENANT, tenantHeader } from '../support/auth';
import { RawConnection } from '../support/raw-http';
import { dropRedisPrefix } from '../support/redis-keys';
import { buildService, freePort, ServiceProcess } from '../support/service-cluster';
import { NO_LOAD_SHEDDING, waitFor } from '../support/test-app';
import {
  createTestDatabase,
  TEST_SECRETS,
  testCacheUrl,
  testDialect,
  type TestDatabase,
} from '../support/test-database';

/**
 * Issue 34 #14: a request still running when the shutdown drain (SHUTDOWN_DRAIN_MS) ends — a PDF
 * export longer than the drain, here an upload whose body is still arriving — gets a complete
 * 503 NOT_READY answer with `Connection: close`, never a reset connection; requests that finish in
 * time are served as before. Against the built service as a real process.
 */
describe('Requests still running at the end of the shutdown drain', () => {
  let db: TestDatabase;
  let cwd: string;
  let service: ServiceProcess | undefined;
  const cachePrefix = `test-${randomBytes(4).toString('hex')}`;

  beforeAll(async () => {
    buildService();
    db = await createTestDatabase('shutdown_unfinished', testDialect());
    cwd = mkdtempSync(join(tmpdir(), 'mtb-shutdown-unfinished-'));
  });

  afterAll(async () => {
    if (service?.child) await service.kill();
    await db.drop();
    const cacheUrl = testCacheUrl();
    if (cacheUrl) await dropRedisPrefix(cacheUrl, cachePrefix);
    rmSync(cwd, { recursive: true, force: true });
  });

  it('should answer 503 NOT_READY, complete and not reset, to a request that outlasts the drain', async () => {
    service = new ServiceProcess(0, await freePort(), cwd, {
      ...TEST_SECRETS,
      ...db.env,
      ...(testCacheUrl() ? { CACHE_URL: testCacheUrl() ?? '', CACHE_KEY_PREFIX: cachePrefix } : {}),
      ...NO_LOAD_SHEDDING,
      NODE_ENV: 'test',
      LOG_FORMAT: 'json',
      SEED_DEMO: 'true',
      SHUTDOWN_DRAIN_MS: '1000',
      SHUTDOWN_TIMEOUT_MS: '10000',
    });
    const svc = service;
    await svc.start();
    const token = await svc.client.signin('admin@acme.test');
    const head =
      `POST /api/v1/customers HTTP/1.1\r\nx-tenant-id: ${tenantHeader(TENANT.acme)}\r\n` +
      `Authorization: Bearer ${token}\r\nContent-Type: application/json`;
    const text = JSON.stringify({ name: 'Outlasts The Drain', email: `outlast-${Date.now()}@acme.example` });
    const slow = await RawConnection.open(svc.port);
    // The body's rest arrives 4 s later: the request is still running when the 1 s drain ends.
    const outlasting = slow.request(head, {
      parts: [text.slice(0, 10), text.slice(10)],
      delayMs: 4000,
    }).outcome;
    const quick = await RawConnection.open(svc.port);
    const inTime = quick.request(head, {
      parts: [text.slice(0, 10), text.replace('Outlasts', 'Within').slice(10).replace('outlast', 'within')],
      delayMs: 300,
    }).outcome;
    await new Promise((r) => setTimeout(r, 100));
    svc.child.kill('SIGTERM');

    const [late, served] = await Promise.all([outlasting, inTime]);
    slow.close();
    quick.close();
    expect(served.kind === 'answer' && served.answer.status).toBe(201);
    expect(late.kind).toBe('answer');
    if (late.kind !== 'answer') return;
    expect(late.answer.status).toBe(503);
    expect(late.answer.headers.connection).toBe('close');
    expect(JSON.parse(late.answer.body)).toMatchObject({
      success: false,
      error: { code: 'NOT_READY', message: expect.stringMatching(/SHUTDOWN_DRAIN_MS/) },
    });
    expect(await svc.exited).toBe(0);
    await waitFor(async () => svc.stdout().includes('shutdown complete'), 5000);
    const done = svc
      .stdout()
      .split('\n')
      .filter((l) => l.includes('shutdown complete'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(done[0]).toMatchObject({ cutShortDuringDrain: 1 });
  });
});
