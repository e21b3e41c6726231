import { Global, Module } from '@nestjs/common';
import { CacheService } from './cache.service';
import { CollectionEventsService } from './collection-events';
import { EntityCacheInvalidator } from './entity-cache-invalidator';

/** The cache store, the collection-event bus (D37) and the invalidation of entity caches. */
@Global()
@Module({
  providers: [CacheService, CollectionEventsService, EntityCacheInvalidator],
  exports: [CacheService, CollectionEventsService, EntityCacheInvalidator],
})
export class CacheModule {}
