import { Injectable } from '@nestjs/common';
import { CacheService } from '../cache/cache.service';
import { CACHE_TTL } from '../cache/cache-keys';
import { TenantRow, TenantsRepository } from './tenants.repository';

/**
 * How long an unknown tenant is remembered, in seconds (issue 34 #11). Short: a tenant created
 * by a process that cannot reach this one's cache (`npm run seed:demo` beside a service on the
 * in-process cache) is found within it; long enough that a burst of one unknown header costs one
 * query. Where a drop can reach the cache (an admin creating a tenant; the seed on Redis) the
 * entry is dropped at once (forget).
 */
export const UNKNOWN_TENANT_TTL_S = 5;

/**
 * Tenant rows change rarely and are read on every request (TenantGuard, tenant-config, sign-in),
 * so they are cached for CACHE_TTL.tenant seconds, misses for UNKNOWN_TENANT_TTL_S.
 */
@Injectable()
export class TenantLookupService {
  constructor(
    private readonly tenants: TenantsRepository,
    private readonly cache: CacheService,
  ) {}

  /**
   * The tenant as this process holds it in the cache, without a promise: the row, null for a
   * remembered unknown tenant, undefined when only findById can tell.
   */
  peek(id: string): Readonly<TenantRow> | null | undefined {
    return this.cache.peekShared<TenantRow | null>(this.cache.keys.tenant(id));
  }

  async findById(id: string): Promise<TenantRow | undefined> {
    const key = this.cache.keys.tenant(id);
    const cached = await this.cache.getShared<TenantRow | null>(key);
    if (cached !== undefined) return cached ?? undefined;
    // Concurrent misses of one tenant read it once (issue 13 #3).
    return this.cache.singleFlight(key, async () => {
      const row = await this.tenants.findById(id);
      await this.cache.setJson(key, row ?? null, row ? CACHE_TTL.tenant : UNKNOWN_TENANT_TTL_S);
      return row;
    });
  }

  /**
   * Drops what the cache holds of these tenants (a remembered miss above all), on every instance:
   * the next request reads the row. After a tenant is created, and by the seed's tenants-changed.
   */
  async forget(ids: Array<string | number>): Promise<void> {
    await this.cache.delete(ids.map((id) => this.cache.keys.tenant(id)));
  }
}
