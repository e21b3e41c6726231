import { Injectable } from '@nestjs/common';
import { CacheService } from '../cache/cache.service';

/**
 * Cache invalidation after an entity mutation (spec §4.3 create 6, update 6, delete 7): the entity's
 * list entries of the tenant (`{prefix}:list:{tenantId}:{entityCode}:*`, D27) and, for `users`, the
 * user-state entries the JWT guard keeps, so a deactivated or deleted user is locked out at once.
 * Cache failures are logged by CacheService and never fail the (already committed) mutation.
 */
@Injectable()
export class EntityCacheInvalidator {
  constructor(private readonly cache: CacheService) {}

  async invalidate(tenantId: string, entityCode: string, recordIds: readonly number[] = []): Promise<void> {
    await this.cache.deletePattern(this.cache.keys.entityListAll(tenantId, entityCode));
    if (entityCode === 'users' && recordIds.length > 0) {
      await this.cache.delete(recordIds.map((id) => this.cache.keys.userState(tenantId, id)));
    }
  }
}
