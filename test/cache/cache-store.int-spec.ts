import { randomUUID } from 'node:crypto';
import { createCacheStore } from '../../src/cache/cache.service';
import type { CacheStore } from '../../src/cache/cache-store';
import { testCacheUrl } from '../support/test-database';

/**
 * The store contract on the store this run uses (TEST_CACHE=redis → the real Redis, otherwise the
 * in-process store): what the service relies on must behave the same on both (D2).
 */
describe(`cache store (${testCacheUrl() ? 'redis' : 'memory'})`, () => {
  let store: CacheStore;
  const p = `test-store-${randomUUID()}`;

  beforeAll(async () => {
    store = createCacheStore(testCacheUrl());
    for (let i = 0; i < 50; i++) {
      try {
        if ((await store.ping()) === 'PONG') break;
      } catch {
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  });

  afterAll(async () => {
    await store.del(await store.keys(`${p}:*`));
    await store.close();
  });

  it('should read several keys in one call, null for missing ones, in the order asked', async () => {
    await store.set(`${p}:a`, 'A');
    await store.set(`${p}:c`, 'C', 60);
    expect(await store.mget([`${p}:c`, `${p}:b`, `${p}:a`])).toEqual(['C', null, 'A']);
    expect(await store.mget([])).toEqual([]);
  });

  it('should not return a deleted key from mget', async () => {
    await store.set(`${p}:gone`, 'x');
    await store.del([`${p}:gone`]);
    expect(await store.mget([`${p}:gone`])).toEqual([null]);
  });
});
