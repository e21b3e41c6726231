import { randomBytes } from 'node:crypto';
import Redis from 'ioredis';
import type { DataSource } from 'typeorm';
import { SIGNIN_MAX_FAILURES } from '../../src/auth/signin-throttle';
import { createDataSource } from '../../src/database/data-source.factory';
import { DEMO_PASSWORD, TENANT } from '../support/auth';
import { RedisServer } from '../support/redis-server';
import {
  ServiceClient,
  ServiceCluster,
  type JsonResponse,
  type ServiceProcess,
} from '../support/service-cluster';
import { testDialect } from '../support/test-database';

type Rec = Record<string, unknown>;

/**
 * The two-tier cache across service processes (issue 13, "Tests", items 3 and 5): `node dist/main.js`
 * processes on one database and on a redis-server of this test's own (its own port, so it can be
 * stopped and started again, empty, without touching the machine's Redis; this file therefore uses
 * it whatever TEST_CACHE says).
 *
 * PostgreSQL and MariaDB: two processes, A and B. Every cross-instance claim is checked by acting on
 * A and observing B: a profile change reloaded through A is enforced by B; an entity write through
 * A drops B's list cache; the tenant rate limit and the sign-in throttle are one budget for both;
 * a logout on A is honoured by B. Then Redis is stopped for ~2.5 s under a steady load through
 * both processes and started again (no 5xx, every 201 in the database, one warning per outage,
 * recovery measured), and once more while failed sign-ins go on (the throttle must keep working
 * or fail closed, issue 13 item 5). The rate-limit test comes last: it restarts the processes
 * with a small RATE_LIMIT_POINTS.
 *
 * Two tests fail against the current src/ on purpose (bugs, reported with the issue):
 *  - the outage test: CollectionEventsService.publishAll (src/cache/collection-events.ts) logs
 *    "Collection event publish failed" once per entity write while Redis is down, not once per
 *    outage as docs/cache-and-scale-out.md "Failures" says;
 *  - the sign-in throttle with Redis stopped: SigninThrottle (src/auth/signin-throttle.ts) swallows
 *    the Redis errors and lets every attempt through (fails open), so the password is checked
 *    after any number of failures.
 *
 * SQLite: one process (several processes on one SQLite file are not a supported set-up: each has
 * its own in-process single writer, see workflow-cluster.e2e-spec.ts). The same tests run as
 * single-process variants — A and B are the same process — so they check that the reload, the
 * list-cache drop, the limits, the logout and the Redis outage behave on that dialect too; the
 * cross-instance part is covered by the two server dialects only.
 *
 * Bounds asserted: cross-instance enforcement of a profile reload < 1000 ms after the reload is
 * sent (the in-process tier's bound is < 100 ms, test/cache/local-tier.int-spec.ts, but the reload
 * itself reads every profile from the database first); list-cache drop and logout < 1000 ms. The
 * measured figures are printed (console.log) for the issue note.
 */
const dialect = testDialect();
const SIZE = dialect === 'sqlite' ? 1 : 2;
const BOUND_MS = 1000;
/** The tenant rate limit of the rate-limit test (the processes are restarted with it). */
const RATE_POINTS = 30;
const RATE_WINDOW_S = 10;

jest.setTimeout(240_000);

describe(`Cache across ${SIZE} service process(es), ${dialect} + Redis (issue 13 tests, items 3 and 5)`, () => {
  let redis: RedisServer;
  let cluster: ServiceCluster;
  let ds: DataSource;
  let A: ServiceProcess;
  let B: ServiceProcess;
  const tag = `cc${randomBytes(3).toString('hex')}`;
  let serial = 0;

  const report = (line: string): void => {
    // eslint-disable-next-line no-console -- the figures are this test's output
    console.log(`[cache-cluster ${dialect}] ${line}`);
  };
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  const rows = (sql: string, params: unknown[] = []): Promise<Rec[]> => ds.query<Rec[]>(sql, params);
  const text = (v: unknown): string | null =>
    v === null || v === undefined
      ? null
      : Buffer.isBuffer(v)
        ? v.toString('utf8')
        : typeof v === 'string'
          ? v
          : typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean'
            ? String(v)
            : JSON.stringify(v);
  const placeholder = (i: number) => (dialect === 'postgres' ? `$${i}` : '?');

  /** A client of its own (own token) on a process. */
  const clientOn = (node: ServiceProcess, tenantId: string = TENANT.acme): ServiceClient =>
    new ServiceClient(node.client.baseUrl, tenantId);

  const newCustomer = (): Rec => {
    serial++;
    return {
      name: `Cache Cluster ${tag} ${serial}`,
      email: `${tag}-${serial}@acme.example`,
      tier: 'silver',
      credit_limit: 100,
    };
  };

  /** Polls `probe` as fast as it answers until it returns true; the ms from `since` to that answer. */
  const pollUntil = async (
    probe: () => Promise<boolean>,
    since: number,
    timeoutMs: number,
  ): Promise<number> => {
    for (;;) {
      if (await probe()) return Date.now() - since;
      if (Date.now() - since > timeoutMs) return Number.POSITIVE_INFINITY;
    }
  };

  beforeAll(async () => {
    redis = await RedisServer.start();
    cluster = await ServiceCluster.start({
      label: 'cache-cluster',
      dialect,
      size: SIZE,
      env: { CACHE_URL: redis.url },
    });
    A = cluster.node(0);
    B = cluster.nodes[1] ?? A;
    ds = createDataSource(cluster.db.config);
    await ds.initialize();
    report(
      `processes: ${cluster.nodes.map((n) => `#${n.index} port ${n.port} ready in ${n.readyMs} ms`).join(', ')}; redis port ${redis.port}`,
    );
  });

  afterAll(async () => {
    await ds?.destroy();
    await cluster?.close();
    await redis?.stop();
  });

  describe('profiles, lists and tokens', () => {
    let admin: { a: ServiceClient; b: ServiceClient };

    beforeAll(async () => {
      const a = clientOn(A);
      await a.signin('admin@acme.test');
      const b = clientOn(B);
      b.token = a.token;
      admin = { a, b };
    });

    it(
      SIZE > 1
        ? 'should enforce on B a profile change reloaded through A (POST /api/cache/reload) within the bound'
        : 'should enforce a profile change once it is reloaded (POST /api/cache/reload; one process on SQLite)',
      async () => {
        const root = clientOn(A);
        await root.signin('root@acme.test');
        const [row] = await rows(
          `SELECT prf_id AS id, prf_policy AS policy FROM app_object_profiles WHERE prf_code = ${placeholder(1)}`,
          ['customers'],
        );
        expect(row).toBeDefined();
        const original = text(row.policy)!;
        const policy = JSON.parse(original) as { permissions: Record<string, boolean> };
        expect(policy.permissions.read).toBe(true);
        const setPolicy = async (json: string): Promise<void> => {
          await ds
            .createQueryBuilder()
            .update('app_object_profiles')
            .set({ prf_policy: json })
            .where('prf_id = :id', { id: Number(row.id) })
            .execute();
        };

        const list = await admin.b.get('/api/v1/customers?limit=1');
        expect(list.status).toBe(200);
        const id = Number(list.body.data.records[0].id);
        const readOnB = async (): Promise<number> => (await admin.b.get(`/api/v1/customers/${id}`)).status;
        expect(await readOnB()).toBe(200);
        expect((await admin.a.get(`/api/v1/customers/${id}`)).status).toBe(200);

        try {
          await setPolicy(JSON.stringify({ ...policy, permissions: { ...policy.permissions, read: false } }));
          // The profile is cached (prf key, 1 h, and B's in-process tier): the database change
          // alone is not seen; that is what the reload is for.
          expect(await readOnB()).toBe(200);

          const sent = Date.now();
          let answeredAt = 0;
          const reload = root.post('/api/cache/reload').then((res) => {
            answeredAt = Date.now();
            return res;
          });
          const seenMs = await pollUntil(async () => (await readOnB()) === 403, sent, 5000);
          const res: JsonResponse = await reload;
          expect(res.status).toBe(200);
          expect(res.body.data.profiles.keys).toContain('customers');
          const reloadMs = answeredAt - sent;
          report(
            `profile reload through A enforced on B (403) ${seenMs} ms after the reload was sent; ` +
              `the reload answered in ${reloadMs} ms (so ${seenMs - reloadMs} ms after its answer)`,
          );
          expect(seenMs).toBeLessThan(BOUND_MS);
          // And it stays enforced on both (nothing stale cached again).
          for (let i = 0; i < 5; i++) {
            expect(await readOnB()).toBe(403);
            expect((await admin.a.get(`/api/v1/customers/${id}`)).status).toBe(403);
          }
          const denied = await admin.b.get(`/api/v1/customers/${id}`);
          expect(denied.body.error.code).toBe('FORBIDDEN');
        } finally {
          await setPolicy(original);
          const sent = Date.now();
          const res = await root.post('/api/cache/reload');
          expect(res.status).toBe(200);
          const backMs = await pollUntil(async () => (await readOnB()) === 200, sent, 5000);
          report(`profile restored through A: B answers 200 again ${backMs} ms after the reload was sent`);
          expect(backMs).toBeLessThan(BOUND_MS);
        }
      },
    );

    it(
      SIZE > 1
        ? "should drop B's cached list page when a customer is created through A"
        : 'should drop the cached list page when a customer is created (one process on SQLite)',
      async () => {
        const path = '/api/v1/customers?limit=5';
        const first = await admin.b.get(path);
        const second = await admin.b.get(path);
        expect(first.status).toBe(200);
        expect(second.status).toBe(200);
        // The second answer is the cached first one (D27): the same retrievedAt.
        expect(second.body.data.meta.retrievedAt).toBe(first.body.data.meta.retrievedAt);
        const total = Number(first.body.data.total);

        const created = await admin.a.post('/api/v1/customers', newCustomer());
        expect(created.status).toBe(201);
        const since = Date.now();
        const seenMs = await pollUntil(
          async () => Number((await admin.b.get(path)).body.data.total) === total + 1,
          since,
          BOUND_MS,
        );
        report(`entity write through A: B's list total went from ${total} to ${total + 1} in ${seenMs} ms`);
        expect(seenMs).toBeLessThan(BOUND_MS);
      },
    );

    it(
      SIZE > 1
        ? 'should refuse on B a token logged out on A (401 TOKEN_REVOKED) within the bound'
        : 'should refuse a logged-out token (401 TOKEN_REVOKED; one process on SQLite)',
      async () => {
        const a = clientOn(A);
        await a.signin('viewer@acme.test');
        const b = clientOn(B);
        b.token = a.token;
        // B caches "not revoked" (60 s) and the user state in its tier.
        expect((await b.get('/api/v1/auth/profile')).status).toBe(200);
        expect((await b.get('/api/v1/auth/profile')).status).toBe(200);

        const out = await a.post('/api/v1/auth/logout');
        expect(out.status).toBe(200);
        const since = Date.now();
        let last: JsonResponse | undefined;
        const seenMs = await pollUntil(
          async () => {
            last = await b.get('/api/v1/auth/profile');
            return last.status === 401;
          },
          since,
          BOUND_MS,
        );
        report(`logout on A: B answers 401 ${seenMs} ms after the logout answered`);
        expect(seenMs).toBeLessThan(BOUND_MS);
        expect(last?.body.error.code).toBe('TOKEN_REVOKED');
        expect((await a.get('/api/v1/auth/profile')).body.error.code).toBe('TOKEN_REVOKED');
      },
    );

    it(
      SIZE > 1
        ? `should throttle failed sign-ins across A and B together (${SIGNIN_MAX_FAILURES} in total, not per process)`
        : `should throttle failed sign-ins (${SIGNIN_MAX_FAILURES} per account and address; one process on SQLite)`,
      async () => {
        // root@acme.test signs in no more in this file after the profile test; every request comes
        // from 127.0.0.1, so the per-address counter (5 / 15 min) is the one that trips.
        const email = 'root@acme.test';
        const nodes = [A, B];
        const answers: Array<{ node: number; status: number; code?: string }> = [];
        for (let i = 0; i < SIGNIN_MAX_FAILURES * 2; i++) {
          const node = nodes[i % 2];
          const res = await clientOn(node, TENANT.acme).request(
            'POST',
            '/api/v1/auth/signin',
            { email_id: email, password: `wrong-${i}` },
            false,
          );
          answers.push({ node: node.index, status: res.status, code: res.body?.error?.code });
        }
        const firstBlocked = answers.findIndex((r) => r.status === 429);
        report(
          `sign-in throttle: answers alternating A/B: ${answers.map((r) => r.status).join(',')}; ` +
            `first 429 at attempt ${firstBlocked + 1}`,
        );
        expect(answers.slice(0, SIGNIN_MAX_FAILURES).map((r) => r.code)).toEqual(
          Array(SIGNIN_MAX_FAILURES).fill('INVALID_CREDENTIALS'),
        );
        expect(answers.slice(SIGNIN_MAX_FAILURES).map((r) => r.code)).toEqual(
          Array(SIGNIN_MAX_FAILURES).fill('RATE_LIMITED'),
        );
        // The right password is refused on both processes as well.
        for (const node of nodes) {
          const res = await clientOn(node, TENANT.acme).request(
            'POST',
            '/api/v1/auth/signin',
            { email_id: email, password: DEMO_PASSWORD },
            false,
          );
          expect(res.status).toBe(429);
        }
      },
    );
  });

  describe('Redis stopped and started again under steady load', () => {
    const LOAD_MS = 9000;
    const STOP_AT_MS = 1500;
    const OUTAGE_MS = 2500;
    const LOOPS = 3;

    interface Outcome {
      op: 'list' | 'get' | 'create';
      node: number;
      status: number;
      code?: string;
      at: number;
    }

    it('should answer without 5xx, keep every acknowledged write, log once per outage and recover by itself', async () => {
      const admin = clientOn(A);
      await admin.signin('admin@acme.test');
      const clients = [A, B].map((n) => {
        const c = clientOn(n);
        c.token = admin.token;
        return c;
      });
      const [{ id: knownId }] = (await admin.get('/api/v1/customers?limit=1')).body.data.records as Array<{
        id: number;
      }>;
      const logFrom = cluster.nodes.map((n) => n.stdout().length);
      const outcomes: Outcome[] = [];
      const acknowledged: Array<{ id: number; email: string }> = [];
      const began = Date.now();
      let stopped = 0;
      let restarted = 0;

      const loop = async (k: number): Promise<void> => {
        for (let i = 0; Date.now() - began < LOAD_MS; i++) {
          const client = clients[(i + k) % clients.length];
          const node = cluster.nodes.find((n) => n.client.baseUrl === client.baseUrl)!.index;
          const op = (['list', 'get', 'create'] as const)[(i + k) % 3];
          const at = Date.now() - began;
          let res: JsonResponse;
          try {
            if (op === 'list') res = await client.get(`/api/v1/customers?limit=5&skip=${i % 4}`);
            else if (op === 'get') res = await client.get(`/api/v1/customers/${knownId}`);
            else {
              const body = newCustomer();
              res = await client.post('/api/v1/customers', body);
              if (res.status === 201)
                acknowledged.push({ id: Number(res.body.data.id), email: String(body.email) });
            }
          } catch (err) {
            outcomes.push({ op, node, status: 0, code: (err as Error).message, at });
            continue;
          }
          outcomes.push({ op, node, status: res.status, code: res.body?.error?.code, at });
        }
      };

      /** /health/redis of a process: 200 while it PINGs Redis, 503 while it cannot. */
      const redisHealth = async (n: ServiceProcess): Promise<number> =>
        (await fetch(`${n.client.baseUrl}/health/redis`).catch(() => undefined))?.status ?? 0;
      const recoveredMs: number[] = [];
      let noticedMs = Number.POSITIVE_INFINITY;
      const outage = (async () => {
        await sleep(STOP_AT_MS);
        await redis.stop();
        stopped = Date.now() - began;
        // The processes notice (fail fast, no offline queue).
        noticedMs = await pollUntil(async () => (await redisHealth(A)) === 503, began + stopped, OUTAGE_MS);
        await sleep(Math.max(0, OUTAGE_MS - (Date.now() - began - stopped)));
        await redis.start();
        restarted = Date.now() - began;
        // Recovery, measured from the restart while the load goes on: every process PINGs Redis again.
        recoveredMs.push(
          ...(await Promise.all(
            cluster.nodes.map((n) =>
              pollUntil(
                async () => {
                  if ((await redisHealth(n)) === 200) return true;
                  await sleep(20);
                  return false;
                },
                began + restarted,
                20000,
              ),
            ),
          )),
        );
      })();
      await Promise.all([...Array.from({ length: LOOPS }, (_, k) => loop(k)), outage]);

      // Figures.
      const byStatus = (list: Outcome[]): Record<string, number> =>
        list.reduce<Record<string, number>>((acc, o) => {
          const k =
            o.code && o.status !== 201 && o.status !== 200 ? `${o.status} ${o.code}` : String(o.status);
          acc[k] = (acc[k] ?? 0) + 1;
          return acc;
        }, {});
      const during = outcomes.filter((o) => o.at >= stopped && o.at < restarted);
      report(
        `outage: Redis stopped at +${stopped} ms, started again at +${restarted} ms (${restarted - stopped} ms down); ` +
          `${outcomes.length} requests in ${LOAD_MS} ms over ${LOOPS} loops and ${SIZE} process(es)`,
      );
      report(`outage: answers by status, whole run: ${JSON.stringify(byStatus(outcomes))}`);
      report(`outage: answers by status, Redis down: ${JSON.stringify(byStatus(during))}`);
      for (const op of ['list', 'get', 'create'] as const)
        report(`outage: ${op}: ${JSON.stringify(byStatus(outcomes.filter((o) => o.op === op)))}`);
      report(
        `outage: /health/redis 503 on A ${noticedMs} ms after Redis stopped; 200 again on every process ` +
          `${recoveredMs.join(' ms, ')} ms after Redis was started`,
      );

      // Log lines at warn or above since the load began, per process.
      const logLines = cluster.nodes.map((n, i) =>
        n
          .stdout()
          .slice(logFrom[i])
          .split('\n')
          .filter((l) => l.startsWith('{'))
          .map((l) => {
            try {
              return JSON.parse(l) as Rec;
            } catch {
              return {};
            }
          }),
      );
      const warnings = logLines.map((lines) => lines.filter((l) => Number(l.level) >= 40));
      warnings.forEach((lines, i) => {
        const groups: Record<string, number> = {};
        for (const l of lines) {
          const k = `${String(l.context)}: ${String(l.msg).slice(0, 90)}`;
          groups[k] = (groups[k] ?? 0) + 1;
        }
        report(`outage: process #${i} logged ${lines.length} line(s) at warn+: ${JSON.stringify(groups)}`);
        const recovered = logLines[i].filter(
          (l) => l.context === 'CacheService' && String(l.msg).startsWith('Cache works again'),
        );
        report(`outage: process #${i} recovery lines: ${JSON.stringify(recovered.map((l) => l.msg))}`);
      });

      // Every acknowledged write is in the database.
      const ids = acknowledged.map((w) => w.id);
      expect(ids.length).toBeGreaterThan(0);
      const found = await rows(
        `SELECT cus_id AS id, cus_email AS email FROM demo_customers WHERE cus_id IN (${ids.join(',')})`,
      );
      const stored = new Map(found.map((r) => [Number(r.id), text(r.email)]));
      const missing = acknowledged.filter((w) => stored.get(w.id) !== w.email);
      report(
        `outage: ${acknowledged.length} acknowledged writes (201), ${missing.length} missing in the database`,
      );
      expect(missing).toEqual([]);

      // The load went on through the outage, and nothing answered 5xx (none is documented for a
      // cache outage: revocations fall back to the database, limits to a per-process limiter).
      expect(during.length).toBeGreaterThan(0);
      expect(outcomes.filter((o) => o.status >= 500 || o.status === 0)).toEqual([]);
      expect(outcomes.filter((o) => o.status !== 200 && o.status !== 201)).toEqual([]);
      expect(during.filter((o) => o.op === 'create' && o.status === 201).length).toBeGreaterThan(0);

      // Recovered by itself: Redis answers the processes again, within ioredis' backoff (≤ 5 s).
      expect(noticedMs).toBeLessThan(OUTAGE_MS);
      expect(recoveredMs).toHaveLength(SIZE);
      for (const ms of recoveredMs) expect(ms).toBeLessThan(10000);
      // ... and the cache is used again: a list page read now is stored in the restarted Redis.
      const probe = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
      try {
        await probe.connect();
        const path = `/api/v1/customers?limit=3&skip=${serial}`;
        expect((await clients[SIZE - 1].get(path)).status).toBe(200);
        const keys = await probe.keys(`${cluster.prefix}:list:${TENANT.acme}:customers:*`);
        expect(keys.length).toBeGreaterThan(0);
      } finally {
        probe.disconnect();
      }

      // One warning per outage and process from the cache (plus at most one more line of another
      // component), not one per request.
      warnings.forEach((lines) => {
        expect(lines.filter((l) => l.context === 'CacheService').length).toBeLessThanOrEqual(2);
        expect(lines.length).toBeLessThanOrEqual(4);
      });
    });

    it(
      SIZE > 1
        ? "should drop B's list cache on a write through A again once Redis is back (subscriptions renewed)"
        : 'should drop the list cache on a write again once Redis is back (one process on SQLite)',
      async () => {
        const a = clientOn(A);
        await a.signin('admin@acme.test');
        const b = clientOn(B);
        b.token = a.token;
        // The subscriptions were renewed on reconnect; /health/redis said so above for the commands.
        const path = '/api/v1/customers?limit=2';
        const first = await b.get(path);
        const second = await b.get(path);
        expect(second.body.data.meta.retrievedAt).toBe(first.body.data.meta.retrievedAt);
        const total = Number(first.body.data.total);
        expect((await a.post('/api/v1/customers', newCustomer())).status).toBe(201);
        const since = Date.now();
        const seenMs = await pollUntil(
          async () => Number((await b.get(path)).body.data.total) === total + 1,
          since,
          BOUND_MS,
        );
        report(`after the outage: B's list total follows a write through A in ${seenMs} ms`);
        expect(seenMs).toBeLessThan(BOUND_MS);
      },
    );
    it('should keep throttling failed sign-ins while Redis is stopped (issue 13 item 5: "keep working … or fail closed")', async () => {
      // viewer@acme.test: logged out above, signs in no more in this file. All attempts go to A:
      // whether the throttle falls back to the database or to a per-process counter, the attempt
      // after SIGNIN_MAX_FAILURES failures must not be checked against the password.
      const email = 'viewer@acme.test';
      const answers: Array<{ status: number; code?: string }> = [];
      await redis.stop();
      try {
        await pollUntil(
          async () =>
            (await fetch(`${A.client.baseUrl}/health/redis`).catch(() => undefined))?.status === 503,
          Date.now(),
          5000,
        );
        for (let i = 0; i <= SIGNIN_MAX_FAILURES + 1; i++) {
          const res = await clientOn(A).request(
            'POST',
            '/api/v1/auth/signin',
            { email_id: email, password: i === SIGNIN_MAX_FAILURES + 1 ? DEMO_PASSWORD : `wrong-${i}` },
            false,
          );
          answers.push({ status: res.status, code: res.body?.error?.code });
        }
      } finally {
        const since = Date.now();
        await redis.start();
        const back = await Promise.all(
          cluster.nodes.map((n) =>
            pollUntil(
              async () => {
                if ((await fetch(`${n.client.baseUrl}/health/redis`).catch(() => undefined))?.status === 200)
                  return true;
                await sleep(20);
                return false;
              },
              since,
              20000,
            ),
          ),
        );
        report(`sign-in throttle test: Redis back on every process after ${back.join(' ms, ')} ms`);
      }
      report(
        `sign-in throttle with Redis stopped: ${answers.length} attempts on A (last with the right password): ` +
          answers.map((a) => `${a.status}${a.code ? ` ${a.code}` : ''}`).join(', '),
      );
      expect(answers.slice(0, SIGNIN_MAX_FAILURES).map((a) => a.code)).toEqual(
        Array(SIGNIN_MAX_FAILURES).fill('INVALID_CREDENTIALS'),
      );
      // The 6th failure and the right password after it are refused: 429 RATE_LIMITED (or a
      // documented fail-closed 503), never checked against the password.
      for (const a of answers.slice(SIGNIN_MAX_FAILURES)) expect([429, 503]).toContain(a.status);
    });
  });

  describe(`tenant rate limit of ${RATE_POINTS} per ${RATE_WINDOW_S} s`, () => {
    beforeAll(async () => {
      // The limit is configuration: the processes are restarted with it (one after another, the
      // first one migrating and seeding again, which finds everything in place).
      for (const n of cluster.nodes)
        await n.restart({
          RATE_LIMIT_POINTS: String(RATE_POINTS),
          // One user spends the tenant's budget in this test: their own limit is the tenant's.
          USER_RATE_LIMIT_POINTS: String(RATE_POINTS),
          RATE_LIMIT_WINDOW_S: String(RATE_WINDOW_S),
        });
    });

    it(
      SIZE > 1
        ? `should share the budget between A and B (${RATE_POINTS} in total, not per process)`
        : `should refuse the request after the ${RATE_POINTS}th (one process on SQLite)`,
      async () => {
        // Globex: a tenant no other test of this file spends requests of.
        const a = clientOn(A, TENANT.globex);
        await a.signin('admin@globex.test');
        const b = clientOn(B, TENANT.globex);
        b.token = a.token;
        const clients = [a, b];
        const began = Date.now();
        const answers: Array<{ node: number; status: number; code?: string }> = [];
        for (let i = 0; i < RATE_POINTS * 2; i++) {
          const res = await clients[i % 2].get('/api/v1/auth/profile');
          answers.push({ node: i % 2, status: res.status, code: res.body?.error?.code });
        }
        const elapsed = Date.now() - began;
        const ok = answers.filter((r) => r.status === 200).length;
        const limited = answers.filter((r) => r.status === 429);
        const firstLimited = answers.findIndex((r) => r.status === 429);
        report(
          `rate limit: ${answers.length} requests alternating A/B in ${elapsed} ms: ${ok} × 200, ` +
            `${limited.length} × 429 (first at request ${firstLimited + 1}` +
            (SIZE > 1
              ? `; 429s by process A/B: ${[0, 1].map((k) => limited.filter((r) => r.node === k).length).join('/')})`
              : ')'),
        );
        expect(elapsed).toBeLessThan(RATE_WINDOW_S * 1000);
        expect(ok).toBe(RATE_POINTS);
        expect(firstLimited).toBe(RATE_POINTS);
        expect(limited.every((r) => r.code === 'RATE_LIMITED')).toBe(true);
        expect(answers.slice(RATE_POINTS).every((r) => r.status === 429)).toBe(true);
      },
    );
  });
});
