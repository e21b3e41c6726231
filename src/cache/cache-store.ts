/**
 * One interface for Redis and the in-process store (D2): same commands, same TTL semantics.
 * Values are strings; CacheService adds JSON on top.
 */
export interface CacheStore {
  readonly kind: 'redis' | 'memory';
  get(key: string): Promise<string | null>;
  /** Values of several keys in one round trip (MGET), null for each missing one. */
  mget(keys: string[]): Promise<Array<string | null>>;
  /** ttlSeconds undefined or 0 = no expiry. */
  set(key: string, value: string, ttlSeconds?: number): Promise<void>;
  del(keys: string[]): Promise<number>;
  /** Keys matching a glob pattern (`*`, `?`), found incrementally (SCAN on Redis). */
  keys(pattern: string): Promise<string[]>;
  /** Remaining lifetime: -2 missing, -1 no expiry, else seconds (Redis TTL semantics). */
  ttl(key: string): Promise<number>;
  incr(key: string, ttlSeconds?: number): Promise<number>;
  ping(): Promise<string>;
  close(): Promise<void>;
}
