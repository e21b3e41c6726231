import { Injectable } from '@nestjs/common';
import { CacheService } from '../cache/cache.service';
import { CACHE_TTL } from '../cache/cache-keys';
import { TenantRow, TenantsRepository } from './tenants.repository';

/**
 * Tenant rows change rarely and are read on every request (TenantGuard, tenant-config, sign-in),
 * so they are cached for CACHE_TTL.tenant seconds, misses included.
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
      await this.cache.setJson(key, row ?? null, CACHE_TTL.tenant);
      return row;
    });
  }
}
