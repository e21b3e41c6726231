import { Logger } from '@nestjs/common';
import type { AppConfig } from '../config/config.schema';
import { CacheService } from './cache.service';
import { MemoryCacheStore } from './memory-cache.store';

/**
 * Outage logging (issue 9, finding 9): one warning when the cache starts failing, nothing while it
 * keeps failing, one info line with the count when it works again. The store here is the
 * in-process one with its commands made to fail; the same against a real Redis that is stopped
 * and started again is in test/cache/cache-outage.int-spec.ts.
 */
describe(`${CacheService.name} outage logging`, () => {
  let cache: CacheService;
  let store: MemoryCacheStore;
  let warn: jest.SpyInstance;
  let info: jest.SpyInstance;
  let down = false;

  beforeEach(() => {
    cache = new CacheService({ cache: { url: undefined, keyPrefix: 'spec' } } as unknown as AppConfig);
    store = cache.store as MemoryCacheStore;
    down = false;
    const fail = <A extends unknown[], R>(real: (...a: A) => Promise<R>) =>
      ((...args: A) => (down ? Promise.reject(new Error('connection refused')) : real(...args))) as (
        ...a: A
      ) => Promise<R>;
    for (const name of ['get', 'mget', 'set', 'del', 'keys', 'ping'] as const) {
      const real = (store[name] as (...a: unknown[]) => Promise<unknown>).bind(store);
      jest.spyOn(store, name).mockImplementation(fail(real) as never);
    }
    warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    info = jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
  });

  afterEach(async () => {
    jest.restoreAllMocks();
    await cache.onApplicationShutdown();
  });

  /** Every kind of call a request makes, `n` times over, concurrently. */
  async function traffic(n: number): Promise<void> {
    await Promise.all(
      Array.from({ length: n }, (_, i) =>
        Promise.all([
          cache.getJson(`k${i}`),
          cache.getManyJson([`a${i}`, `b${i}`]),
          cache.setJson(`k${i}`, { i }, 60),
          cache.delete([`k${i}`]),
          cache.deletePattern(`x${i}:*`),
        ]),
      ),
    );
  }

  it('should log nothing while the cache works', async () => {
    await traffic(10);
    expect(warn).not.toHaveBeenCalled();
    expect(info).not.toHaveBeenCalled();
  });

  it('should log one warning with the error for an outage, and one info line with the count after it', async () => {
    down = true;
    await traffic(100); // 500 failed calls, as under a flood
    expect(await cache.getJson('k')).toBeUndefined(); // still a miss, not an error
    expect(await cache.setJson('k', 1)).toBe(false);
    expect(warn).toHaveBeenCalledTimes(1);
    expect(warn.mock.calls[0][0]).toEqual(expect.objectContaining({ err: 'connection refused' }));
    expect(String(warn.mock.calls[0][1])).toMatch(/^Cache (read|write|delete|pattern delete) failed/);
    expect(info).not.toHaveBeenCalled();

    down = false;
    await traffic(10);
    expect(warn).toHaveBeenCalledTimes(1);
    expect(info).toHaveBeenCalledTimes(1);
    expect(info.mock.calls[0][0]).toEqual({ suppressed: 501 });
    expect(String(info.mock.calls[0][1])).toMatch(/^Cache works again; 501 further failures not logged/);
  });

  it('should log each outage once, and count a successful PING as the end of one', async () => {
    down = true;
    await traffic(3);
    down = false;
    expect(await cache.ping()).toBe('PONG');
    expect(info).toHaveBeenCalledTimes(1);
    expect(info.mock.calls[0][0]).toEqual({ suppressed: 14 });

    down = true;
    await expect(cache.ping()).rejects.toThrow('connection refused'); // the caller's to report
    expect(warn).toHaveBeenCalledTimes(1);
    await traffic(2);
    expect(warn).toHaveBeenCalledTimes(2);
    down = false;
    await traffic(1);
    expect(info).toHaveBeenCalledTimes(2);
    expect(info.mock.calls[1][0]).toEqual({ suppressed: 9 });
  });

  it('should count per instance', async () => {
    const other = new CacheService({ cache: { url: undefined, keyPrefix: 'spec2' } } as unknown as AppConfig);
    try {
      down = true;
      await cache.getJson('k');
      await other.getJson('k'); // its store works: nothing to log
      expect(warn).toHaveBeenCalledTimes(1);
    } finally {
      await other.onApplicationShutdown();
    }
  });
});

/** The synchronous reads the request guards try first (issue 14). */
describe(`${CacheService.name} peekText and peekShared (in-process store)`, () => {
  let now = 1_000_000;
  let cache: CacheService;

  beforeEach(() => {
    cache = new CacheService({ cache: { url: undefined, keyPrefix: 'spec' } } as unknown as AppConfig);
    // The store with a clock of the test's own, so expiry can be stepped over.
    (cache as unknown as { store: MemoryCacheStore }).store = new MemoryCacheStore(60_000, () => now);
  });

  afterEach(async () => {
    await cache.onApplicationShutdown();
  });

  it('should answer what getText and getShared answer for a held key, without a promise', async () => {
    await cache.setJson('spec:tenant:1', { name: 'Acme' }, 60);
    expect(cache.peekText('spec:tenant:1')).toBe(await cache.getText('spec:tenant:1'));
    const held = cache.peekShared<{ name: string }>('spec:tenant:1');
    expect(held).toEqual({ name: 'Acme' });
    expect(held).toBe(await cache.getShared('spec:tenant:1')); // the same shared, frozen value
    expect(Object.isFrozen(held)).toBe(true);
  });

  it('should answer undefined for a missing, an expired and an unparsable key (the async path decides)', async () => {
    expect(cache.peekText('spec:none')).toBeUndefined();
    await cache.setJson('spec:short', 1, 5);
    now += 5_000;
    expect(cache.peekText('spec:short')).toBeUndefined();
    await cache.setText('spec:bad', '{not json', 60);
    expect(cache.peekText('spec:bad')).toBe('{not json');
    expect(() => cache.peekShared('spec:bad')).not.toThrow();
    expect(cache.peekShared('spec:bad')).toBeUndefined();
  });

  it('should see a deletion at once', async () => {
    await cache.setJson('spec:tenant:2', { name: 'Globex' }, 60);
    expect(cache.peekShared('spec:tenant:2')).toEqual({ name: 'Globex' });
    await cache.delete(['spec:tenant:2']);
    expect(cache.peekShared('spec:tenant:2')).toBeUndefined();
  });
});
