import { randomBytes } from 'node:crypto';
import { CacheService } from '../../src/cache/cache.service';
import { loadConfig } from '../../src/config/config.schema';
import { waitFor } from '../support/test-app';
import { realRedisUrl, TEST_SECRETS } from '../support/test-database';

/** An instance of the service's cache on the machine's real Redis, under a shared prefix. */
function instance(prefix: string): CacheService {
  return new CacheService(
    loadConfig({ ...TEST_SECRETS, NODE_ENV: 'test', CACHE_KEY_PREFIX: prefix, CACHE_URL: realRedisUrl() }),
  );
}

/** Time from a write on one instance until another instance's in-process tier serves the new value. */
async function propagation(a: CacheService, b: CacheService, key: string, value: unknown): Promise<number> {
  const started = process.hrtime.bigint();
  await a.setJson(key, value, 60);
  const want = JSON.stringify(value);
  for (;;) {
    if (JSON.stringify(await b.getJson(key)) === want) return Number(process.hrtime.bigint() - started) / 1e6;
    await new Promise((r) => setImmediate(r));
  }
}

/**
 * The two tiers across instances (issue 13 #3), on the real Redis: each instance keeps tiered keys
 * in process; a write on one makes every other drop its older copy within the documented bound.
 */
describe('In-process tier in front of Redis, across instances', () => {
  const prefix = `tier-${randomBytes(4).toString('hex')}`;
  let a: CacheService;
  let b: CacheService;

  beforeAll(async () => {
    a = instance(prefix);
    b = instance(prefix);
    // Both connections up first (a command before that fails fast, and would log a warning).
    await waitFor(
      async () => {
        const pongs = await Promise.all([a.ping(), b.ping()].map((p) => p.catch(() => '')));
        return pongs.every((p) => p === 'PONG');
      },
      10000,
      20,
    );
    // Both subscriptions are up once a message published by one reaches the other.
    await waitFor(
      async () => {
        await a.setJson(`${prefix}:tenant:probe`, Math.random(), 60);
        await b.getJson(`${prefix}:tenant:probe`);
        await a.setJson(`${prefix}:tenant:probe`, 'ready', 60);
        await new Promise((r) => setTimeout(r, 20));
        return (await b.getJson(`${prefix}:tenant:probe`)) === 'ready';
      },
      10000,
      50,
    );
  });

  afterAll(async () => {
    await a.deletePattern(`${prefix}:*`);
    await a.onApplicationShutdown();
    await b.onApplicationShutdown();
  });

  it('should serve a tiered key from process memory once read (no Redis round trip)', async () => {
    const key = `${prefix}:tenant:1`;
    await a.setJson(key, { name: 'Acme' }, 60);
    expect(await b.getJson(key)).toEqual({ name: 'Acme' });
    // Changed behind the service's back in Redis: the tier still answers with what it holds.
    await (b.store as unknown as { set(k: string, v: string): Promise<void> }).set(key, '{"name":"Other"}');
    expect(await b.getJson(key)).toEqual({ name: 'Acme' });
    expect(b.tier?.versionOf(key)).toBeDefined();
  });

  it('should answer peekText from the tier only: undefined until read once, the held copy after, nothing after a deletion', async () => {
    const key = `${prefix}:tenant:7`;
    await a.setJson(key, { name: 'Initech' }, 60);
    expect(b.peekText(key)).toBeUndefined(); // in Redis, not yet in b's process
    expect(await b.getJson(key)).toEqual({ name: 'Initech' });
    expect(b.peekShared(key)).toEqual({ name: 'Initech' });
    await a.delete([key]);
    await waitFor(async () => b.peekText(key) === undefined, 5000, 10);
    // Token state is tiered, but a read that must not trust the tier (tier: false) never gets it.
    const revoked = `${prefix}:revoked:jti-1`;
    await a.setJson(revoked, false, 60);
    expect(await b.getJson(revoked)).toBe(false);
    expect(b.peekShared(revoked)).toBe(false);
    expect(b.peekShared(revoked, { tier: false })).toBeUndefined();
    // A list page is never held in process: peek leaves it to Redis.
    const page = `${prefix}:list:1:customers:abc`;
    await a.setText(page, '{"records":[]}', 60);
    expect(await b.getText(page)).toBe('{"records":[]}');
    expect(b.peekText(page)).toBeUndefined();
  });

  it('should make another instance serve a changed value within 100 ms (measured over 50 changes)', async () => {
    const key = `${prefix}:prf:1:customers`;
    await a.setJson(key, { v: -1 }, 60);
    await b.getJson(key);
    const delays: number[] = [];
    for (let i = 0; i < 50; i++) {
      await b.getJson(key); // b holds the old value in process
      delays.push(await propagation(a, b, key, { v: i }));
    }
    delays.sort((x, y) => x - y);
    const p50 = delays[25];
    const max = delays[delays.length - 1];
    // eslint-disable-next-line no-console -- the measured figure is quoted in docs/cache-and-scale-out.md
    console.log(`tier propagation over Redis pub/sub: p50 ${p50.toFixed(2)} ms, max ${max.toFixed(2)} ms`);
    expect(max).toBeLessThan(100);
  });

  it('should propagate deletions and pattern deletions', async () => {
    await a.setJson(`${prefix}:user:1:7`, { active: true }, 60);
    await a.setJson(`${prefix}:user:1:8`, { active: true }, 60);
    expect(await b.getJson(`${prefix}:user:1:7`)).toEqual({ active: true });
    expect(await b.getJson(`${prefix}:user:1:8`)).toEqual({ active: true });
    await a.delete([`${prefix}:user:1:7`]);
    await waitFor(async () => (await b.getJson(`${prefix}:user:1:7`)) === undefined, 1000, 5);
    await a.deletePattern(`${prefix}:user:1:*`);
    await waitFor(async () => (await b.getJson(`${prefix}:user:1:8`)) === undefined, 1000, 5);
  });

  it('should not drop anything when another instance recomputes the same value (no invalidation loop)', async () => {
    const key = `${prefix}:registry:1:customers`;
    await a.setJson(key, { info: { code: 'customers' } }, 60);
    expect(await b.getJson(key)).toEqual({ info: { code: 'customers' } });
    const version = b.tier?.versionOf(key);
    // Both recompute the same content many times: versions agree, nobody's copy is dropped.
    for (let i = 0; i < 20; i++) {
      await a.setJson(key, { info: { code: 'customers' } }, 60);
      await b.setJson(key, { info: { code: 'customers' } }, 60);
    }
    await new Promise((r) => setTimeout(r, 50));
    expect(b.tier?.versionOf(key)).toBe(version);
    expect(a.tier?.versionOf(key)).toBe(version);
  });

  it('should load a missed key once for concurrent callers (single flight)', async () => {
    let loads = 0;
    const load = async () => {
      loads++;
      await new Promise((r) => setTimeout(r, 30));
      return 42;
    };
    const answers = await Promise.all(
      Array.from({ length: 50 }, () => a.singleFlight(`${prefix}:tenant:sf`, load)),
    );
    expect(answers).toEqual(Array(50).fill(42));
    expect(loads).toBe(1);
    // Once settled, the next miss loads again.
    await a.singleFlight(`${prefix}:tenant:sf`, load);
    expect(loads).toBe(2);
  });

  it('should never keep list pages or counters in process', async () => {
    const key = `${prefix}:list:1:customers:h`;
    await a.setJson(key, [1], 60);
    expect(await a.getJson(key)).toEqual([1]);
    expect(a.tier?.versionOf(key)).toBeUndefined();
  });
});
