import { backoffDelayMs } from '../common/backoff';
import type Redis from 'ioredis';
import { lazyModule } from '../common/lazy-module';
import { CacheStore } from './cache-store';

// eslint-disable-next-line @typescript-eslint/no-require-imports -- the embedded default never loads it
const ioredis = lazyModule<typeof Redis>(() => require('ioredis'));

/**
 * Redis through ioredis (D2). Commands fail fast while disconnected (no offline queue) so that a
 * missing cache never stalls a request: callers treat cache errors as misses (spec §4.3 rule 9).
 */
export class RedisCacheStore implements CacheStore {
  readonly kind = 'redis' as const;
  readonly client: Redis;
  /** How long one connection attempt may take (ioredis connectTimeout). */
  readonly connectTimeoutMs = 5000;

  constructor(url: string) {
    this.client = new (ioredis())(url, {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      connectTimeout: this.connectTimeoutMs,
      // Keep reconnecting in the background; the start-up loop decides readiness (spec §3.3).
      retryStrategy: (times) => backoffDelayMs({ baseMs: 400, maxMs: 5000 }, times),
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

  /**
   * Resolves once the connection is ready; rejects with the connection's error if the attempt
   * under way fails, or after `timeoutMs` (default: the connect timeout). For the start-up loop's
   * first PING, which would otherwise run into the connection the constructor has only begun
   * ("Stream isn't writeable"). Commands themselves still fail fast: nothing here queues them.
   */
  async whenReady(timeoutMs = this.connectTimeoutMs): Promise<void> {
    const client = this.client;
    if (client.status === 'ready') return;
    if (client.status === 'end') throw new Error('Connection is closed.');
    // No time left: not ready now is the answer (a 0 ms timer could fire after a fast connect).
    if (timeoutMs <= 0) throw new Error(`Cache not ready within ${timeoutMs} ms`);
    await new Promise<void>((resolve, reject) => {
      let lastError: Error | undefined;
      const onError = (err: Error): void => {
        lastError = err;
      };
      const finish = (err?: Error): void => {
        clearTimeout(timer);
        client.off('ready', onReady);
        client.off('error', onError);
        client.off('close', onClose);
        if (err) reject(err);
        else resolve();
      };
      const onReady = (): void => finish();
      const onClose = (): void => finish(lastError ?? new Error('Connection is closed.'));
      const timer = setTimeout(
        () => finish(lastError ?? new Error(`Cache not ready within ${timeoutMs} ms`)),
        timeoutMs,
      );
      client.on('ready', onReady);
      client.on('error', onError);
      client.on('close', onClose);
    });
  }

  async close(): Promise<void> {
    this.client.disconnect(false);
  }
}
