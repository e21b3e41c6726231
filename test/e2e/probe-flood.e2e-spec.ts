import { CacheService } from '../../src/cache/cache.service';
import { DatabaseService } from '../../src/database/database.service';
import { PROBE_RESULT_TTL_MS } from '../../src/health/probe-checks';
import { authHeaders, signin, TENANT } from '../support/auth';
import { startTestApp, TestApp } from '../support/test-app';
import { testCacheUrl, testDialect } from '../support/test-database';

/**
 * The bound on a list request answered during the flood. The flood runs in this process, so the
 * list's every database and Redis round trip waits its turn behind the flood's in-flight steps:
 * on SQLite with the in-process cache (no network round trips) that is well under a second; on a
 * database server with Redis about ten round trips of queueing, so the bound is looser there.
 */
const LIST_BOUND_MS = testDialect() === 'sqlite' && !testCacheUrl() ? 1000 : 2500;

/**
 * Issue 9, finding 5: probes were public and unthrottled, and each ran its own `SELECT 1`; a flood
 * took every database connection. The database and cache checks are now computed at most once a
 * second per instance, with single flight.
 */
describe('Probe floods (issue 9 #5)', () => {
  let t: TestApp;
  let headers: Record<string, string>;
  /** `SELECT 1`s (the database check) and cache PINGs issued since the last reset. */
  let selectOnes = 0;
  let pings = 0;

  beforeAll(async () => {
    t = await startTestApp({ label: 'probe_flood' });
    headers = authHeaders(TENANT.acme, (await signin(t.app, TENANT.acme, 'admin@acme.test')).token);
    // Count, not replace: the real database and cache still answer every call.
    const ds = t.app.get(DatabaseService).dataSource;
    const query = ds.query.bind(ds);
    jest.spyOn(ds, 'query').mockImplementation((sql: string, ...rest: unknown[]) => {
      if (/^\s*SELECT 1\s*$/i.test(sql)) selectOnes++;
      return (query as (...a: unknown[]) => Promise<unknown>)(sql, ...rest);
    });
    const cache = t.app.get(CacheService);
    const ping = cache.ping.bind(cache);
    jest.spyOn(cache, 'ping').mockImplementation(() => {
      pings++;
      return ping();
    });
  });

  afterAll(async () => {
    jest.restoreAllMocks();
    await t?.close();
  });

  const get = (url: string, extra: Record<string, string> = {}) =>
    t.app.inject({ method: 'GET', url, headers: extra });

  /** One check per second of flood at most (plus one for a second boundary crossed). */
  const allowedChecks = (floodMs: number) => Math.ceil(floodMs / PROBE_RESULT_TTL_MS) + 1;

  it('should run the database check once for 500 concurrent probes', async () => {
    // Start from a cold check so the flood itself has to compute it.
    await new Promise((r) => setTimeout(r, PROBE_RESULT_TTL_MS + 50));
    selectOnes = 0;
    pings = 0;
    const started = Date.now();
    const answers = await Promise.all(
      Array.from({ length: 500 }, (_, i) => get(i % 2 ? '/livez' : '/health/db')),
    );
    const floodMs = Date.now() - started;

    expect(answers.map((a) => a.statusCode).filter((s) => s !== 200)).toEqual([]);
    expect(answers[0].json().details.database.status).toBe('up');
    expect(answers[499].json().details['cache-store'].status).toBe('up');
    expect(selectOnes).toBeGreaterThanOrEqual(1);
    expect(selectOnes).toBeLessThanOrEqual(allowedChecks(floodMs));
    expect(pings).toBeLessThanOrEqual(allowedChecks(floodMs));
  });

  it('should keep a list request fast during a sustained probe flood', async () => {
    selectOnes = 0;
    const TOTAL = 1500;
    const IN_FLIGHT = 100;
    let sent = 0;
    const statuses: number[] = [];
    let list: Promise<{ status: number; ms: number; records: number }> | undefined;
    const started = Date.now();
    // IN_FLIGHT probes at all times until TOTAL have been answered; the list request once a
    // third of them have.
    const worker = async (): Promise<void> => {
      while (sent < TOTAL) {
        const i = sent++;
        if (i === TOTAL / 3) {
          const listStarted = Date.now();
          list = get('/api/v1/customers', headers).then((res) => ({
            status: res.statusCode,
            ms: Date.now() - listStarted,
            records: (res.json().data?.records ?? []).length,
          }));
        }
        statuses.push((await get(i % 2 ? '/livez' : '/health/db')).statusCode);
      }
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
    const floodMs = Date.now() - started;
    const answered = await list!;

    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    expect(selectOnes).toBeLessThanOrEqual(allowedChecks(floodMs));
    expect(answered.status).toBe(200);
    expect(answered.records).toBeGreaterThan(0);
    expect(answered.ms).toBeLessThan(LIST_BOUND_MS);
  });

  it('should serve every probe that touches the database or cache from the shared result', async () => {
    await new Promise((r) => setTimeout(r, PROBE_RESULT_TTL_MS + 50));
    selectOnes = 0;
    pings = 0;
    const urls = ['/health', '/api/v1/health', '/health/db', '/health/redis', '/livez'];
    const answers = await Promise.all(Array.from({ length: 200 }, (_, i) => get(urls[i % urls.length])));
    expect(answers.map((a) => a.statusCode).filter((s) => s !== 200)).toEqual([]);
    expect(selectOnes).toBeLessThanOrEqual(2);
    expect(pings).toBeLessThanOrEqual(2);
    // A scrape of /metrics reads the cache_up gauge from the same result.
    expect((await get('/metrics')).body).toMatch(/cache_up\{kind="(memory|redis)"\} 1/);
    expect(pings).toBeLessThanOrEqual(2);
  });

  it('should compute the checks again once the result is older than a second', async () => {
    await get('/health/db');
    const before = selectOnes;
    await new Promise((r) => setTimeout(r, PROBE_RESULT_TTL_MS + 50));
    await get('/health/db');
    await get('/health/db');
    expect(selectOnes).toBe(before + 1);
  });
});
