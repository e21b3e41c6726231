import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { InjectConfig } from '../config/inject-config.decorator';
import type { AppConfig } from '../config/config.schema';
import { CacheKeys } from './cache-keys';
import { CacheStore } from './cache-store';
import { MemoryCacheStore } from './memory-cache.store';
import { RedisCacheStore } from './redis-cache.store';

export function createCacheStore(url: string | undefined): CacheStore {
  return url ? new RedisCacheStore(url) : new MemoryCacheStore();
}

/**
 * The cache as the rest of the service sees it: JSON values, the key builder, and failures that
 * degrade to misses with a warning instead of errors (spec §4.3 rule 9).
 *
 * An outage is logged once, not per call (issue 9, finding 9: a Redis outage under a flood wrote
 * four warnings per request): the first failure is a warning with its error, the failures after it
 * are only counted while the cache keeps failing, and the first success after them logs one info
 * line with that count. Per instance of this service.
 */
@Injectable()
export class CacheService implements OnApplicationShutdown {
  private readonly logger = new Logger(CacheService.name);
  readonly store: CacheStore;
  readonly keys: CacheKeys;
  /** True from a failure that was logged until the next success. */
  private failing = false;
  /** Failures not logged since the one that was. */
  private suppressed = 0;

  constructor(@InjectConfig() config: AppConfig) {
    this.store = createCacheStore(config.cache.url);
    this.keys = new CacheKeys(config.cache.keyPrefix);
  }

  get kind(): CacheStore['kind'] {
    return this.store.kind;
  }

  async getJson<T>(key: string): Promise<T | undefined> {
    try {
      const raw = await this.store.get(key);
      this.succeeded();
      return raw === null ? undefined : (JSON.parse(raw) as T);
    } catch (err) {
      this.failed({ key }, err, 'Cache read failed; treating as a miss');
      return undefined;
    }
  }

  /** Several JSON values in one round trip; a failed read is a miss for every key. */
  async getManyJson<T>(keys: string[]): Promise<Array<T | undefined>> {
    try {
      const raw = await this.store.mget(keys);
      this.succeeded();
      return raw.map((r) => (r === null ? undefined : (JSON.parse(r) as T)));
    } catch (err) {
      this.failed({ keys: keys.length }, err, 'Cache read failed; treating as a miss');
      return keys.map(() => undefined);
    }
  }

  async setJson(key: string, value: unknown, ttlSeconds?: number): Promise<boolean> {
    try {
      await this.store.set(key, JSON.stringify(value), ttlSeconds);
      this.succeeded();
      return true;
    } catch (err) {
      this.failed({ key }, err, 'Cache write failed');
      return false;
    }
  }

  async delete(keys: string[]): Promise<number> {
    try {
      const n = await this.store.del(keys);
      this.succeeded();
      return n;
    } catch (err) {
      this.failed({ keys: keys.length }, err, 'Cache delete failed');
      return 0;
    }
  }

  async deletePattern(pattern: string): Promise<number> {
    try {
      const n = await this.store.del(await this.store.keys(pattern));
      this.succeeded();
      return n;
    } catch (err) {
      this.failed({ pattern }, err, 'Cache pattern delete failed');
      return 0;
    }
  }

  /**
   * PING: 'PONG' or throws. Used by readiness and the probes. A failure is the caller's to report
   * (readiness, the probes' answers); a success ends a logged outage like any other.
   */
  async ping(): Promise<string> {
    const pong = await this.store.ping();
    if (pong === 'PONG') this.succeeded();
    return pong;
  }

  /** The first failure of an outage is logged, with its error; the ones after it are counted. */
  private failed(fields: Record<string, unknown>, err: unknown, message: string): void {
    if (this.failing) {
      this.suppressed++;
      return;
    }
    this.failing = true;
    this.suppressed = 0;
    this.logger.warn(
      { ...fields, err: errorMessage(err) },
      `${message} (further cache failures are not logged until the cache works again)`,
    );
  }

  /** Ends a logged outage: one info line with the number of failures not logged. */
  private succeeded(): void {
    if (!this.failing) return;
    const suppressed = this.suppressed;
    this.failing = false;
    this.suppressed = 0;
    this.logger.log(
      { suppressed },
      `Cache works again; ${suppressed} further failure${suppressed === 1 ? '' : 's'} not logged during the outage`,
    );
  }

  async onApplicationShutdown(): Promise<void> {
    await this.store.close();
  }
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
