import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { globToRegExp } from './memory-cache.store';

/**
 * Key families (the first part after the prefix) kept in the in-process tier in front of Redis:
 * tenant rows, registry and configuration entries, profiles, user (token) state. They are small,
 * read on every request and change rarely. List pages, sign-up codes, counters and events are not.
 */
export const TIERED_FAMILIES: ReadonlySet<string> = new Set([
  'tenant',
  'registry',
  'config',
  'prf',
  'profile',
  'page',
  'workflow',
  'dataview',
  'dataview-code',
  'navigation',
  'valueset',
  'user',
  'revoked',
]);

/** The deterministic version of a cached value: the same content has the same version everywhere. */
export function versionOf(raw: string): string {
  return createHash('sha1').update(raw).digest('base64url').slice(0, 16);
}

/**
 * What one instance tells the others on `{prefix}:events:cache`: a key got a new value (with its
 * version), or keys / a pattern were deleted. `o` is the sending instance.
 */
export type TierMessage =
  | { o: string; op: 'set'; key: string; v: string }
  | { o: string; op: 'del'; keys: string[] }
  | { o: string; op: 'delp'; pattern: string };

export function decodeTierMessage(raw: string): TierMessage | undefined {
  let m: unknown;
  try {
    m = JSON.parse(raw);
  } catch {
    return undefined;
  }
  if (!m || typeof m !== 'object') return undefined;
  const x = m as Record<string, unknown>;
  if (typeof x.o !== 'string') return undefined;
  if (x.op === 'set' && typeof x.key === 'string' && typeof x.v === 'string')
    return { o: x.o, op: 'set', key: x.key, v: x.v };
  if (x.op === 'del' && Array.isArray(x.keys) && x.keys.every((k) => typeof k === 'string'))
    return { o: x.o, op: 'del', keys: x.keys };
  if (x.op === 'delp' && typeof x.pattern === 'string') return { o: x.o, op: 'delp', pattern: x.pattern };
  return undefined;
}

interface TierEntry {
  raw: string;
  version: string;
}

export interface LocalTierOptions {
  prefix: string;
  maxBytes: number;
  /** The longest an entry is served without asking the shared store (bounds a lost message). */
  ttlMs: number;
}

/**
 * The in-process tier (issue 13 #3) in front of the shared store: a size-bounded LRU of raw JSON
 * values with their content versions. A write on any instance publishes the new version (or the
 * deletion); every other instance drops an entry whose version differs. Versions are hashes of
 * the content, never random tokens: two instances that recompute the same value agree on it and
 * drop nothing, so invalidations cannot ping-pong between pods (Twenty's PR #22980). Entries also
 * expire after `ttlMs`, which bounds the staleness if a message is lost (a Redis reconnect clears
 * the tier for the same reason).
 */
export class LocalTier {
  private readonly entries: LRUCache<string, TierEntry>;
  private readonly familyStart: number;
  /**
   * Bumped by every deletion (local or heard from another instance). A read of the shared store
   * takes the epoch before it asks and keeps the answer in process only if no deletion happened
   * meanwhile: otherwise a value read just before a deletion could be kept after it.
   */
  private deletions = 0;

  constructor(private readonly options: LocalTierOptions) {
    this.entries = new LRUCache<string, TierEntry>({
      maxSize: Math.max(1024, options.maxBytes),
      sizeCalculation: (entry, key) => Math.max(1, (key.length + entry.raw.length) * 2 + 64),
      ttl: options.ttlMs,
      ttlAutopurge: false,
    });
    this.familyStart = options.prefix.length + 1;
  }

  /** Whether `key` belongs to a family kept in this tier. */
  holds(key: string): boolean {
    if (!key.startsWith(`${this.options.prefix}:`)) return false;
    const end = key.indexOf(':', this.familyStart);
    return TIERED_FAMILIES.has(key.slice(this.familyStart, end === -1 ? undefined : end));
  }

  get(key: string): string | undefined {
    return this.entries.get(key)?.raw;
  }

  versionOf(key: string): string | undefined {
    return this.entries.get(key)?.version;
  }

  /** Keeps `raw` for at most the tier's TTL and, when given, the store's own TTL. */
  set(key: string, raw: string, ttlSeconds?: number): string {
    const version = versionOf(raw);
    const ttl = ttlSeconds ? Math.min(this.options.ttlMs, ttlSeconds * 1000) : this.options.ttlMs;
    this.entries.set(key, { raw, version }, { ttl });
    return version;
  }

  /** The deletion epoch, to pass to `setIfUnchanged` after a read of the shared store. */
  get epoch(): number {
    return this.deletions;
  }

  /** Keeps a value read from the shared store, unless a deletion happened since `epoch`. */
  setIfUnchanged(key: string, raw: string, epoch: number): void {
    if (epoch === this.deletions) this.set(key, raw);
  }

  delete(keys: string[]): void {
    this.deletions++;
    for (const k of keys) this.entries.delete(k);
  }

  deletePattern(pattern: string): void {
    this.deletions++;
    const re = globToRegExp(pattern);
    for (const k of [...this.entries.keys()]) if (re.test(k)) this.entries.delete(k);
  }

  clear(): void {
    this.deletions++;
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }

  get bytes(): number {
    return this.entries.calculatedSize;
  }

  /** Applies another instance's message: drops what is older (a different version) or deleted. */
  apply(message: TierMessage): void {
    if (message.op === 'set') {
      const held = this.entries.get(message.key);
      if (held && held.version !== message.v) this.delete([message.key]);
    } else if (message.op === 'del') this.delete(message.keys);
    else this.deletePattern(message.pattern);
  }
}
