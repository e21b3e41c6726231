import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEMO_PASSWORD, TENANT, tenantHeader } from '../support/auth';
import { RawConnection, type RawOutcome } from '../support/raw-http';
import { buildService, freePort, ServiceProcess } from '../support/service-cluster';
import { NO_LOAD_SHEDDING, waitFor } from '../support/test-app';
import {
  createTestDatabase,
  TEST_SECRETS,
  testCacheUrl,
  testDialect,
  type TestDatabase,
} from '../support/test-database';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

interface Sent {
  label: string;
  outcome: Promise<RawOutcome>;
}

/**
 * SIGTERM with requests on the wire (issue 20 #5), against the built service as a real process:
 * a burst of 16 requests — on idle keep-alive connections and on new ones, sign-ins (argon2) and
 * uploads whose body is still arriving after the signal — sent 0.1–0.2 s before SIGTERM, then
 * new requests during the drain. No connection may be reset and every request must get a
 * complete answer: the burst's are served (they were received before the signal), the later ones
 * get 503 NOT_READY with Connection: close.
 */
describe('Graceful shutdown of the service process', () => {
  let db: TestDatabase;
  let cwd: string;
  let service: ServiceProcess;

  beforeAll(async () => {
    buildService();
    db = await createTestDatabase('graceful_shutdown', testDialect());
    cwd = mkdtempSync(join(tmpdir(), 'mtb-shutdown-'));
  });

  afterAll(async () => {
    if (service?.child) await service.kill();
    await db.drop();
    rmSync(cwd, { recursive: true, force: true });
  });

  async function startService(): Promise<ServiceProcess> {
    service = new ServiceProcess(0, await freePort(), cwd, {
      ...TEST_SECRETS,
      ...db.env,
      ...(testCacheUrl()
        ? { CACHE_URL: testCacheUrl() ?? '', CACHE_KEY_PREFIX: `test-${randomBytes(4).toString('hex')}` }
        : {}),
      NODE_ENV: 'test',
      LOG_FORMAT: 'json',
      SEED_DEMO: 'true',
      SHUTDOWN_DRAIN_MS: '5000',
      SHUTDOWN_TIMEOUT_MS: '15000',
      // A busy test machine must not turn the burst away as 503 OVERLOADED.
      ...NO_LOAD_SHEDDING,
    });
    await service.start();
    return service;
  }

  it('should answer every request of a burst sent just before SIGTERM, reset none, and log the shutdown', async () => {
    const svc = await startService();
    const token = await svc.client.signin('admin@acme.test');
    const auth = `x-tenant-id: ${tenantHeader(TENANT.acme)}\r\nAuthorization: Bearer ${token}`;
    const json = 'Content-Type: application/json';
    const list = (entity: string, limit: number) =>
      `GET /api/v1/${entity}?limit=${limit} HTTP/1.1\r\n${auth}`;
    const signinHead = `POST /api/v1/auth/signin HTTP/1.1\r\nx-tenant-id: ${tenantHeader(TENANT.acme)}\r\n${json}`;
    const createHead = `POST /api/v1/customers HTTP/1.1\r\n${auth}\r\n${json}`;

    // Idle keep-alive connections: each has had one answer already (7 for the burst, 4 for the
    // moment of the signal).
    const keepAlive = await Promise.all(Array.from({ length: 11 }, () => RawConnection.open(svc.port)));
    for (const conn of keepAlive) {
      const first = await conn.request(list('customers', 5)).outcome;
      expect(first.kind === 'answer' && first.answer.status).toBe(200);
    }
    const fresh = await Promise.all(Array.from({ length: 9 }, () => RawConnection.open(svc.port)));

    const sent: Sent[] = [];
    const send = (
      label: string,
      conn: RawConnection,
      head: string,
      body?: Parameters<RawConnection['request']>[1],
    ) => sent.push({ label, outcome: conn.request(head, body).outcome });
    // Uploads whose body is complete only ~1 s after the signal.
    const slowBody = (email: string) => {
      const text = JSON.stringify({ name: 'Drain Test', email, tier: 'gold' });
      return { parts: [text.slice(0, 10), text.slice(10)], delayMs: 1100 };
    };
    const stamp = Date.now();
    for (let i = 0; i < 6; i++) send(`keep-alive list #${i}`, keepAlive[i], list('customers', 100));
    send('keep-alive slow upload', keepAlive[6], createHead, slowBody(`drain-ka-${stamp}@acme.example`));
    for (let i = 0; i < 4; i++) send(`new-connection list #${i}`, fresh[i], list('orders', 120));
    const users = ['admin@acme.test', 'viewer@acme.test', 'root@acme.test'];
    users.forEach((email, i) =>
      send(
        `sign-in ${email}`,
        fresh[4 + i],
        signinHead,
        JSON.stringify({ email_id: email, password: DEMO_PASSWORD }),
      ),
    );
    send('new-connection slow upload #1', fresh[7], createHead, slowBody(`drain-1-${stamp}@acme.example`));
    send('new-connection slow upload #2', fresh[8], createHead, slowBody(`drain-2-${stamp}@acme.example`));
    expect(sent).toHaveLength(16);

    await sleep(100 + Math.floor(Math.random() * 100));
    // Requests written on idle keep-alive connections the moment before the signal: they are in
    // the service's receive queues, unread, when it arrives (what a close of "idle" connections
    // resets).
    const atSignal: Sent[] = keepAlive.slice(7).map((conn, i) => ({
      label: `at-signal keep-alive #${i}`,
      outcome: conn.request(list('customers', 10)).outcome,
    }));
    svc.child.kill('SIGTERM');

    // New requests during the drain (the slow uploads keep it going), once the service has taken
    // the signal: a request read before that is still served, as one sent before the signal.
    await waitFor(async () => svc.stdout().includes('SIGTERM received'), 5000, 5);
    await sleep(100);
    const late = await Promise.all(
      Array.from({ length: 3 }, () => RawConnection.open(svc.port).catch(() => undefined)),
    );
    const lateOutcomes = late.map((conn) => conn?.request(list('customers', 5)).outcome);

    const all = [...sent, ...atSignal];
    const outcomes = await Promise.all(all.map((s) => s.outcome));
    const exitCode = await svc.exited;
    const report = all.map((s, i) => ({ label: s.label, ...summary(outcomes[i]) }));
    const resets = report.filter((r) => r.kind === 'reset');
    expect(resets).toEqual([]);
    expect(report.filter((r) => r.kind !== 'answer')).toEqual([]);
    // Received before the signal: every one served, none refused.
    for (const r of report)
      expect([r.label, r.status, r.error]).toEqual([
        r.label,
        r.label.includes('upload') ? 201 : 200,
        undefined,
      ]);

    // The listener stays open while the drain lasts: the late connections were accepted.
    expect(late.filter((conn) => conn === undefined)).toEqual([]);
    for (const outcome of lateOutcomes) {
      const o = await outcome;
      if (!o) continue;
      expect(o.kind).toBe('answer');
      if (o.kind !== 'answer') continue;
      expect(o.answer.status).toBe(503);
      expect(o.answer.headers.connection).toBe('close');
      expect(JSON.parse(o.answer.body)).toMatchObject({ success: false, error: { code: 'NOT_READY' } });
    }

    expect(exitCode).toBe(0);
    await waitFor(async () => svc.stdout().includes('shutdown complete'), 5000);
    const done = svc
      .stdout()
      .split('\n')
      .filter((l) => l.includes('shutdown complete'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(done).toHaveLength(1);
    expect(done[0]).toMatchObject({ signal: 'SIGTERM', forcedConnections: 0 });
    // At least the three uploads were under way at the signal; the three late ones were refused.
    expect(done[0].servedDuringDrain).toBeGreaterThanOrEqual(3);
    expect(done[0].refusedDuringDrain).toBeGreaterThanOrEqual(3);
    expect(done[0].durationMs).toEqual(expect.any(Number));
    // The refusals are in the access log with their code (written out at exit).
    const refusals = svc
      .stdout()
      .split('\n')
      .filter((l) => l.includes('"statusCode":503'))
      .map((l) => JSON.parse(l) as { errorCode?: string });
    expect(refusals.length).toBeGreaterThanOrEqual(3);
    expect(refusals.every((l) => l.errorCode === 'NOT_READY')).toBe(true);
  });
});

function summary(outcome: RawOutcome): {
  kind: string;
  status?: number;
  connection?: string;
  error?: string;
} {
  if (outcome.kind === 'answer') {
    const { status, headers, body } = outcome.answer;
    const error = status >= 400 ? body.slice(0, 300) : undefined;
    return { kind: 'answer', status, connection: headers.connection, ...(error ? { error } : {}) };
  }
  if (outcome.kind === 'reset') return { kind: 'reset', error: outcome.error };
  return { kind: 'closed' };
}
