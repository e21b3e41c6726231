import { Global, Module } from '@nestjs/common';
import { CacheService } from './cache.service';
import { CollectionEventsService } from './collection-events';

@Global()
@Module({
  providers: [CacheService, CollectionEventsService],
  exports: [CacheService, CollectionEventsService],
})
export class CacheModule {}
