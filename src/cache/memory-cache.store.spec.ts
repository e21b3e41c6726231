import { MemoryCacheStore } from './memory-cache.store';

describe(MemoryCacheStore.name, () => {
  let now = 1_000_000;
  let store: MemoryCacheStore;

  beforeEach(() => {
    now = 1_000_000;
    store = new MemoryCacheStore(60_000, () => now);
  });

  afterEach(async () => {
    await store.close();
  });

  it('should return what was set until the TTL runs out, like Redis EX', async () => {
    await store.set('k', 'v', 10);
    expect(await store.get('k')).toBe('v');
    expect(await store.ttl('k')).toBe(10);
    now += 9_999;
    expect(await store.get('k')).toBe('v');
    now += 1;
    expect(await store.get('k')).toBeNull();
    expect(await store.ttl('k')).toBe(-2);
  });

  it('should keep a value without TTL forever (ttl -1)', async () => {
    await store.set('k', 'v');
    now += 10 ** 9;
    expect(await store.get('k')).toBe('v');
    expect(await store.ttl('k')).toBe(-1);
  });

  it('should list keys by glob pattern, skipping expired ones', async () => {
    await store.set('mtb:prf:1:a', '1');
    await store.set('mtb:prf:2:a', '1', 1);
    await store.set('mtb:prf:1:b', '1');
    now += 2000;
    expect((await store.keys('mtb:prf:*:a')).sort()).toEqual(['mtb:prf:1:a']);
  });

  it('should count deletions of live keys only', async () => {
    await store.set('a', '1');
    await store.set('b', '1', 1);
    now += 1500;
    expect(await store.del(['a', 'b', 'c'])).toBe(1);
  });

  it('should increment with a window that starts at the first increment', async () => {
    expect(await store.incr('n', 10)).toBe(1);
    now += 5000;
    expect(await store.incr('n', 10)).toBe(2);
    now += 5000;
    expect(await store.incr('n', 10)).toBe(1);
  });

  it('should answer PING with PONG', async () => {
    expect(await store.ping()).toBe('PONG');
  });

  it('should stay within its size bound under a flood of distinct keys, dropping the least recently used', async () => {
    const bounded = new MemoryCacheStore(60_000, () => now, 256 * 1024);
    try {
      await bounded.set('kept', 'v');
      for (let i = 0; i < 5000; i++) {
        await bounded.set(`k${i}`, 'x'.repeat(200));
        if (i % 100 === 0) await bounded.get('kept'); // recently used: survives
      }
      expect(bounded.bytes).toBeLessThanOrEqual(256 * 1024);
      expect(bounded.size).toBeLessThan(5000);
      expect(await bounded.get('kept')).toBe('v');
      expect(await bounded.get('k0')).toBeNull();
      expect(await bounded.get('k4999')).toBe('x'.repeat(200));
    } finally {
      await bounded.close();
    }
  });
});
