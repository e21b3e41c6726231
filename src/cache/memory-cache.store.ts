import { LRUCache } from 'lru-cache';
import { CacheStore } from './cache-store';

interface Entry {
  value: string;
  /** Epoch ms; undefined = no expiry. */
  expiresAt?: number;
}

export function globToRegExp(pattern: string): RegExp {
  const escaped = pattern
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${escaped}$`);
}

/** The default bound of the in-process store: 64 MiB of keys and values (UTF-16 code units × 2). */
export const MEMORY_STORE_MAX_BYTES = 64 * 1024 * 1024;

/**
 * The embedded default's cache (D2): Redis-like expiry, swept lazily and periodically, in an LRU
 * bounded by size (issue 13 #3: a cache that grows without bound is a memory leak under a flood of
 * distinct keys). Past the bound, the least recently used entries go — a miss, which every reader
 * already handles by loading from the database.
 */
export class MemoryCacheStore implements CacheStore {
  readonly kind = 'memory' as const;
  private readonly entries: LRUCache<string, Entry>;
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    sweepIntervalMs = 60_000,
    private readonly now: () => number = Date.now,
    maxBytes = MEMORY_STORE_MAX_BYTES,
  ) {
    this.entries = new LRUCache<string, Entry>({
      maxSize: maxBytes,
      sizeCalculation: (entry, key) => Math.max(1, (key.length + entry.value.length) * 2 + 48),
    });
    this.sweeper = setInterval(() => this.sweep(), sweepIntervalMs);
    this.sweeper.unref();
  }

  /** Bytes held, as the bound counts them. */
  get bytes(): number {
    return this.entries.calculatedSize;
  }

  get size(): number {
    return this.entries.size;
  }

  private live(key: string): Entry | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (e.expiresAt !== undefined && e.expiresAt <= this.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return e;
  }

  async mget(keys: string[]): Promise<Array<string | null>> {
    return keys.map((k) => this.live(k)?.value ?? null);
  }

  /** get() without a promise: the value, or undefined when missing or expired. */
  peek(key: string): string | undefined {
    return this.live(key)?.value;
  }

  async get(key: string): Promise<string | null> {
    return this.live(key)?.value ?? null;
  }

  async set(key: string, value: string, ttlSeconds?: number): Promise<void> {
    this.entries.set(key, { value, expiresAt: ttlSeconds ? this.now() + ttlSeconds * 1000 : undefined });
  }

  async del(keys: string[]): Promise<number> {
    let n = 0;
    for (const k of keys) if (this.live(k) && this.entries.delete(k)) n++;
    return n;
  }

  async keys(pattern: string): Promise<string[]> {
    const re = globToRegExp(pattern);
    return [...this.entries.keys()].filter((k) => re.test(k) && this.live(k) !== undefined);
  }

  async ttl(key: string): Promise<number> {
    const e = this.live(key);
    if (!e) return -2;
    if (e.expiresAt === undefined) return -1;
    return Math.ceil((e.expiresAt - this.now()) / 1000);
  }

  async incr(key: string, ttlSeconds?: number): Promise<number> {
    const e = this.live(key);
    const next = (e ? Number(e.value) || 0 : 0) + 1;
    // Like INCR followed by EXPIRE NX: the window starts with the first increment.
    const expiresAt = e ? e.expiresAt : ttlSeconds ? this.now() + ttlSeconds * 1000 : undefined;
    this.entries.set(key, { value: String(next), expiresAt });
    return next;
  }

  async ping(): Promise<string> {
    return 'PONG';
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    this.entries.clear();
  }

  private sweep(): void {
    const t = this.now();
    for (const [k, e] of this.entries.entries())
      if (e.expiresAt !== undefined && e.expiresAt <= t) this.entries.delete(k);
  }
}
