import { LRUCache } from 'lru-cache';
import { DataSource } from 'typeorm';
import type { DatabaseConfig } from '../../config/config.schema';
import { createDataSource } from '../../database/data-source.factory';

/** Looks a tenant code up: the id of an active, not deleted tenant, or undefined. */
export type TenantSource = (code: string) => Promise<number | undefined>;

export interface TenantDirectoryOptions {
  /** How long a found tenant is remembered. */
  ttlMs: number;
  /** How long an unknown or inactive code is remembered (short: a new tenant shows up soon). */
  missTtlMs: number;
  /** Most codes remembered at once; the oldest entry goes first (bounds memory under random hosts). */
  maxEntries?: number;
  now?: () => number;
}

/**
 * The proxy's in-memory cache in front of a TenantSource: hits and misses are remembered for their
 * TTL, concurrent lookups of one code share one query, and failures are not remembered at all.
 */
export class TenantDirectory {
  /** lru-cache bounds the entries and ages each by its own TTL (hits and misses differ). */
  private readonly entries: LRUCache<string, { id: number | undefined }>;
  private readonly inFlight = new Map<string, Promise<number | undefined>>();

  constructor(
    private readonly source: TenantSource,
    private readonly options: TenantDirectoryOptions,
  ) {
    const now = options.now;
    this.entries = new LRUCache({
      max: options.maxEntries ?? 10_000,
      // Read the clock on every look-up: an entry's expiry is exact, never cached for a tick.
      ttlResolution: 0,
      ...(now ? { perf: { now } } : {}),
    });
  }

  async resolve(code: string): Promise<number | undefined> {
    const cached = this.entries.get(code);
    if (cached) return cached.id;
    const pending = this.inFlight.get(code);
    if (pending) return pending;
    const lookup = this.source(code)
      .then((id) => {
        this.remember(code, id);
        return id;
      })
      .finally(() => this.inFlight.delete(code));
    this.inFlight.set(code, lookup);
    return lookup;
  }

  /** Forgets every cached lookup. */
  clear(): void {
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }

  private remember(code: string, id: number | undefined): void {
    const ttl = id === undefined ? this.options.missTtlMs : this.options.ttlMs;
    // lru-cache expires an entry once it is older than its ttl; this one expires at its TTL.
    if (ttl > 0) this.entries.set(code, { id }, { ttl: ttl - 1 || 1 });
  }
}

/** A BOOLEAN / BIT / TINYINT(1) column as each driver returns it. */
function isSet(value: unknown): boolean {
  if (Buffer.isBuffer(value)) return value.length > 0 && value[0] === 1;
  return value === true || value === 1 || value === '1' || value === 'true';
}

interface TenantRow {
  id: number | string;
  status: number | string | null;
  deleted: unknown;
}

/**
 * Reads `app_tenants` by code. Either borrows an initialised DataSource or opens its own from
 * DB_* lazily on first use (so the proxy starts while the database is still down; a failed
 * connect is retried on the next request).
 */
export class DatabaseTenantSource {
  private dataSource: DataSource | undefined;
  private connecting: Promise<DataSource> | undefined;
  private closed = false;
  private readonly owned: boolean;

  constructor(private readonly target: DataSource | DatabaseConfig) {
    this.owned = !(target instanceof DataSource);
    if (target instanceof DataSource) this.dataSource = target;
  }

  readonly lookup: TenantSource = async (code) => {
    const ds = await this.connect();
    const rows = await ds
      .createQueryBuilder()
      .select('t.tnt_id', 'id')
      .addSelect('t.tnt_status', 'status')
      .addSelect('t.tnt_is_deleted', 'deleted')
      .from('app_tenants', 't')
      .where('t.tnt_tenant_code = :code', { code })
      .getRawMany<TenantRow>();
    const row = rows[0];
    if (!row || Number(row.status) !== 1 || isSet(row.deleted)) return undefined;
    const id = Number(row.id);
    return Number.isSafeInteger(id) && id > 0 ? id : undefined;
  };

  async close(): Promise<void> {
    this.closed = true;
    await this.connecting?.catch(() => undefined);
    const ds = this.dataSource;
    this.dataSource = undefined;
    if (this.owned && ds?.isInitialized) await ds.destroy();
  }

  private async connect(): Promise<DataSource> {
    if (this.closed) throw new Error('Tenant source is closed');
    if (this.dataSource) return this.dataSource;
    if (this.target instanceof DataSource) return this.target;
    const config = this.target;
    this.connecting ??= (async () => {
      // The proxy needs a handful of connections, not the service's pool.
      const ds = createDataSource({
        ...config,
        pool: { ...config.pool, max: Math.min(config.pool.max, 10), min: 0 },
      });
      await ds.initialize();
      this.dataSource = ds;
      return ds;
    })().finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }
}
