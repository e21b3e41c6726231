import { Global, Module } from '@nestjs/common';
import { CacheService } from './cache.service';
import { CollectionEventsService } from './collection-events';
import { EntityCacheInvalidator } from './entity-cache-invalidator';

@Global()
@Module({
  providers: [CacheService, CollectionEventsService, EntityCacheInvalidator],
  exports: [CacheService, CollectionEventsService, EntityCacheInvalidator],
})
export class CacheModule {}
