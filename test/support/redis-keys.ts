import Redis from 'ioredis';

/**
 * The Redis database the tests use by default (TEST_REDIS_URL overrides it): not 0, where a
 * developer's own service (`CACHE_URL=redis://127.0.0.1:6379`) keeps its keys.
 */
export const TEST_REDIS_DB = 15;

/**
 * Deletes every key under `prefix:` (a test's CACHE_KEY_PREFIX) on `url`: a test app or cluster
 * leaves nothing behind in Redis when it closes (issue 34 #12). Never fails the test that calls it:
 * a Redis the test took away (outage tests) has nothing to clean.
 */
export async function dropRedisPrefix(url: string, prefix: string): Promise<number> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, connectTimeout: 2000 });
  client.on('error', () => undefined);
  let dropped = 0;
  try {
    await client.connect();
    let cursor = '0';
    do {
      const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      if (keys.length > 0) dropped += await client.unlink(...keys);
      cursor = next;
    } while (cursor !== '0');
    return dropped;
  } catch {
    return dropped;
  } finally {
    client.disconnect();
  }
}
