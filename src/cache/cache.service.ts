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
 */
@Injectable()
export class CacheService implements OnApplicationShutdown {
  private readonly logger = new Logger(CacheService.name);
  readonly store: CacheStore;
  readonly keys: CacheKeys;

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
      return raw === null ? undefined : (JSON.parse(raw) as T);
    } catch (err) {
      this.logger.warn({ key, err: errorMessage(err) }, 'Cache read failed; treating as a miss');
      return undefined;
    }
  }

  /** Several JSON values in one round trip; a failed read is a miss for every key. */
  async getManyJson<T>(keys: string[]): Promise<Array<T | undefined>> {
    try {
      const raw = await this.store.mget(keys);
      return raw.map((r) => (r === null ? undefined : (JSON.parse(r) as T)));
    } catch (err) {
      this.logger.warn(
        { keys: keys.length, err: errorMessage(err) },
        'Cache read failed; treating as a miss',
      );
      return keys.map(() => undefined);
    }
  }

  async setJson(key: string, value: unknown, ttlSeconds?: number): Promise<boolean> {
    try {
      await this.store.set(key, JSON.stringify(value), ttlSeconds);
      return true;
    } catch (err) {
      this.logger.warn({ key, err: errorMessage(err) }, 'Cache write failed');
      return false;
    }
  }

  async delete(keys: string[]): Promise<number> {
    try {
      return await this.store.del(keys);
    } catch (err) {
      this.logger.warn({ keys: keys.length, err: errorMessage(err) }, 'Cache delete failed');
      return 0;
    }
  }

  async deletePattern(pattern: string): Promise<number> {
    try {
      return await this.store.del(await this.store.keys(pattern));
    } catch (err) {
      this.logger.warn({ pattern, err: errorMessage(err) }, 'Cache pattern delete failed');
      return 0;
    }
  }

  /** PING: 'PONG' or throws. Used by readiness and /livez. */
  async ping(): Promise<string> {
    return this.store.ping();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.store.close();
  }
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
