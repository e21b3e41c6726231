import { errorMessage } from '../common/errors/error-message';
import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import type Redis from 'ioredis';
import { LRUCache } from 'lru-cache';
import { randomUUID } from 'node:crypto';
import { InjectConfig } from '../config/inject-config.decorator';
import type { AppConfig } from '../config/config.schema';
import { CacheKeys } from './cache-keys';
import { CacheStore } from './cache-store';
import { decodeTierMessage, LocalTier, type TierMessage } from './local-tier';
import { MemoryCacheStore } from './memory-cache.store';
import { RedisCacheStore } from './redis-cache.store';

/** Freezes a parsed JSON value and everything in it (objects and arrays only: JSON has no others). */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value as object)) deepFreeze(child);
  }
  return value;
}

export function createCacheStore(url: string | undefined, memoryMaxBytes?: number): CacheStore {
  return url ? new RedisCacheStore(url) : new MemoryCacheStore(60_000, Date.now, memoryMaxBytes);
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
/** What a synchronous read may answer from. */
export interface PeekOptions {
  /**
   * Whether the local tier in front of Redis may answer (default true). False for what must come
   * from the shared store or the database whenever Redis is there — token revocation and user
   * state, which fail closed to the database during a Redis outage rather than trusting a copy
   * that missed an invalidation (D46). The embedded default's store always answers.
   */
  tier?: boolean;
}

@Injectable()
export class CacheService implements OnApplicationShutdown {
  private readonly logger = new Logger(CacheService.name);
  readonly store: CacheStore;
  readonly keys: CacheKeys;
  /** True from a failure that was logged until the next success. */
  private failing = false;
  /** Failures not logged since the one that was. */
  private suppressed = 0;

  /** Redis only: the in-process tier in front of it (local-tier.ts), and its invalidation channel. */
  readonly tier?: LocalTier;
  private readonly tierChannel: string;
  private readonly instanceId = randomUUID();
  private subscriber?: Redis;
  private closed = false;
  /** getShared's parsed values by key, with the text each was parsed from. */
  private readonly parsed = new LRUCache<string, { raw: string; value: unknown }>({ max: 10_000 });
  /** Loads in flight by key (single flight: concurrent misses of one key load it once). */
  private readonly inflight = new Map<string, Promise<unknown>>();

  constructor(@InjectConfig() config: AppConfig) {
    this.store = createCacheStore(config.cache.url, config.cache.memoryMaxBytes);
    this.keys = new CacheKeys(config.cache.keyPrefix);
    this.tierChannel = `${config.cache.keyPrefix}:events:cache`;
    if (this.store instanceof RedisCacheStore) {
      this.tier = new LocalTier({
        prefix: config.cache.keyPrefix,
        maxBytes: config.cache.localTierMaxBytes,
        ttlMs: config.cache.localTierTtlMs,
      });
      this.listen(this.store);
    }
  }

  /**
   * Runs `load` once for concurrent callers of one key on this instance (a cache miss under load
   * reaches the database once, not once per request); later callers get the same promise.
   */
  singleFlight<T>(key: string, load: () => Promise<T>): Promise<T> {
    const running = this.inflight.get(key) as Promise<T> | undefined;
    if (running) return running;
    const started = load().finally(() => this.inflight.delete(key));
    this.inflight.set(key, started);
    return started;
  }

  get kind(): CacheStore['kind'] {
    return this.store.kind;
  }

  async getJson<T>(key: string): Promise<T | undefined> {
    const raw = await this.getText(key);
    return raw === undefined ? undefined : (JSON.parse(raw) as T);
  }

  /**
   * A value every request reads (tenant, registry entry, profile, user state), parsed once per
   * stored text and shared: while the cache holds the same text for the key, every caller gets the
   * same parsed value, deep-frozen, so nobody can change it for the next request. Saves a
   * JSON.parse of the profile and the registry entry on every request.
   */
  async getShared<T>(key: string): Promise<Readonly<T> | undefined> {
    const raw = await this.getText(key);
    return raw === undefined ? undefined : this.shared<T>(key, raw);
  }

  /** Several shared values in one round trip (getManyJson's semantics, getShared's values). */
  async getManyShared<T>(keys: string[]): Promise<Array<Readonly<T> | undefined>> {
    const raw = await this.getManyText(keys);
    return raw.map((r, i) => (r === undefined ? undefined : this.shared<T>(keys[i], r)));
  }

  private shared<T>(key: string, raw: string): Readonly<T> {
    const memo = this.parsed.get(key);
    if (memo !== undefined && memo.raw === raw) return memo.value as Readonly<T>;
    const value = deepFreeze(JSON.parse(raw) as unknown);
    this.parsed.set(key, { raw, value });
    return value as Readonly<T>;
  }

  /**
   * The text this process holds for `key` right now — the in-process store's, or with Redis the
   * local tier's — without a promise; undefined when only an asynchronous read can tell (not held
   * here, or a miss). A hit is the answer getText would give. Request guards try it first, so a
   * request whose tenant, token state, registry entry and profile are held in memory creates no
   * promise for them (issue 14: with the async-local scope every promise costs a hook).
   */
  peekText(key: string, { tier = true }: PeekOptions = {}): string | undefined {
    if (this.tier) return tier && this.tier.holds(key) ? this.tier.get(key) : undefined;
    return this.store instanceof MemoryCacheStore ? this.store.peek(key) : undefined;
  }

  /**
   * getShared without a promise, for a value held in this process (peekText); else undefined. A
   * held text that does not parse is undefined too: the caller's asynchronous path then meets it
   * and handles it as it always has (a warning and the database, spec §4.3 rule 9).
   */
  peekShared<T>(key: string, options?: PeekOptions): Readonly<T> | undefined {
    const raw = this.peekText(key, options);
    if (raw === undefined) return undefined;
    try {
      return this.shared<T>(key, raw);
    } catch {
      return undefined;
    }
  }

  /**
   * A value as the JSON text it is stored as, unparsed: what a route that answers the value as it
   * is (a cached list page) sends without parsing and serializing it again.
   */
  async getText(key: string): Promise<string | undefined> {
    const tiered = this.tier?.holds(key) === true;
    if (tiered) {
      const local = this.tier.get(key);
      if (local !== undefined) return local;
    }
    const epoch = this.tier?.epoch ?? 0;
    try {
      const raw = await this.store.get(key);
      this.succeeded();
      // Not kept if a deletion happened while Redis answered (it may have been the old value).
      if (raw !== null && tiered) this.tier.setIfUnchanged(key, raw, epoch);
      return raw ?? undefined;
    } catch (err) {
      this.failed({ key }, err, 'Cache read failed; treating as a miss');
      return undefined;
    }
  }

  /** Several JSON values in one round trip; a failed read is a miss for every key. */
  async getManyJson<T>(keys: string[]): Promise<Array<T | undefined>> {
    return (await this.getManyText(keys)).map((r) => (r === undefined ? undefined : (JSON.parse(r) as T)));
  }

  /** Several texts in one round trip (getText's values); a failed read is a miss for every key. */
  async getManyText(keys: string[]): Promise<Array<string | undefined>> {
    const epoch = this.tier?.epoch ?? 0;
    try {
      const raw = await this.store.mget(keys);
      this.succeeded();
      raw.forEach((r, i) => {
        if (r !== null && this.tier?.holds(keys[i])) this.tier.setIfUnchanged(keys[i], r, epoch);
      });
      return raw.map((r) => r ?? undefined);
    } catch (err) {
      this.failed({ keys: keys.length }, err, 'Cache read failed; treating as a miss');
      return keys.map(() => undefined);
    }
  }

  async setJson(key: string, value: unknown, ttlSeconds?: number): Promise<boolean> {
    return this.setText(key, JSON.stringify(value), ttlSeconds);
  }

  /** Stores JSON text as it is (the caller serialized it: `getText` gives it back unparsed). */
  async setText(key: string, raw: string, ttlSeconds?: number): Promise<boolean> {
    // The local copy is right whatever the shared store says: it serves this instance in an outage.
    if (this.tier?.holds(key))
      this.publish({ o: this.instanceId, op: 'set', key, v: this.tier.set(key, raw, ttlSeconds) });
    try {
      await this.store.set(key, raw, ttlSeconds);
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
    } finally {
      // After the shared store: a read racing the deletion then finds nothing to bring back in.
      this.dropTiered(keys);
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
    } finally {
      if (this.tier) {
        this.tier.deletePattern(pattern);
        this.publish({ o: this.instanceId, op: 'delp', pattern });
      }
    }
  }

  private dropTiered(keys: string[]): void {
    const tiered = this.tier ? keys.filter((k) => this.tier!.holds(k)) : [];
    if (tiered.length === 0) return;
    this.tier!.delete(tiered);
    this.publish({ o: this.instanceId, op: 'del', keys: tiered });
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
    this.closed = true;
    this.subscriber?.disconnect(false);
    this.subscriber = undefined;
    await this.store.close();
  }

  /** Tells the other instances what changed in the tier; never fails the caller. */
  private publish(message: TierMessage): void {
    if (this.closed || !(this.store instanceof RedisCacheStore)) return;
    this.store.client.publish(this.tierChannel, JSON.stringify(message)).catch(() => undefined);
  }

  /**
   * Hears the other instances' tier messages on a connection of its own. After a reconnect the tier
   * is cleared: messages sent while the connection was down are lost.
   */
  private listen(store: RedisCacheStore): void {
    const sub = store.client.duplicate({
      autoResubscribe: false,
      connectionName: `${this.tierChannel}:${this.instanceId}`,
    });
    this.subscriber = sub;
    let connectedBefore = false;
    sub.on('error', () => undefined);
    sub.on('ready', () => {
      if (connectedBefore) this.tier?.clear();
      connectedBefore = true;
      sub.subscribe(this.tierChannel).catch(() => undefined);
    });
    sub.on('message', (channel: string, raw: string) => {
      if (channel !== this.tierChannel || this.closed) return;
      const message = decodeTierMessage(raw);
      if (message && message.o !== this.instanceId) this.tier?.apply(message);
    });
    sub.connect().catch(() => undefined);
  }
}
