import Redis from 'ioredis';
import { CacheStore } from './cache-store';

/**
 * Redis through ioredis (D2). Commands fail fast while disconnected (no offline queue) so that a
 * missing cache never stalls a request: callers treat cache errors as misses (spec §4.3 rule 9).
 */
export class RedisCacheStore implements CacheStore {
  readonly kind = 'redis' as const;
  readonly client: Redis;

  constructor(url: string) {
    this.client = new Redis(url, {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      connectTimeout: 5000,
      // Keep reconnecting in the background; the start-up loop decides readiness (spec §3.3).
      retryStrategy: (times) => Math.min(200 * 2 ** Math.min(times, 5), 5000),
    });
    // Errors surface on the commands; an unhandled 'error' event would crash the process.
    this.client.on('error', () => undefined);
    this.client.connect().catch(() => undefined);
  }

  async get(key: string): Promise<string | null> {
    return this.client.get(key);
  }

  async mget(keys: string[]): Promise<Array<string | null>> {
    return keys.length === 0 ? [] : this.client.mget(...keys);
  }

  async set(key: string, value: string, ttlSeconds?: number): Promise<void> {
    if (ttlSeconds) await this.client.set(key, value, 'EX', ttlSeconds);
    else await this.client.set(key, value);
  }

  async del(keys: string[]): Promise<number> {
    if (keys.length === 0) return 0;
    let n = 0;
    for (let i = 0; i < keys.length; i += 500) n += await this.client.unlink(...keys.slice(i, i + 500));
    return n;
  }

  async keys(pattern: string): Promise<string[]> {
    const found = new Set<string>();
    let cursor = '0';
    do {
      const [next, batch] = await this.client.scan(cursor, 'MATCH', pattern, 'COUNT', 500);
      for (const k of batch) found.add(k);
      cursor = next;
    } while (cursor !== '0');
    return [...found];
  }

  async ttl(key: string): Promise<number> {
    return this.client.ttl(key);
  }

  async incr(key: string, ttlSeconds?: number): Promise<number> {
    const multi = this.client.multi().incr(key);
    if (ttlSeconds) multi.expire(key, ttlSeconds, 'NX');
    const res = await multi.exec();
    const first = res?.[0];
    if (!first || first[0]) throw first?.[0] ?? new Error('INCR failed');
    return Number(first[1]);
  }

  async ping(): Promise<string> {
    return this.client.ping();
  }

  async close(): Promise<void> {
    this.client.disconnect(false);
  }
}
