import { Global, Module } from '@nestjs/common';
import { HealthModule } from '../health/health.module';
import { RegistryModule } from '../registry/registry.module';
import { CacheService } from './cache.service';
import { CacheClearService } from './catalog/cache-clear.service';
import { CacheAdminController, CacheCatalogController } from './catalog/cache-catalog.controller';
import { ProfileCatalogRepository } from './catalog/profile-catalog.repository';
import { ProfileCatalogService } from './catalog/profile-catalog.service';
import { CollectionEventsService } from './collection-events';
import { EntityCacheInvalidator } from './entity-cache-invalidator';

/**
 * The cache store, the collection-event bus and, in ./catalog, the start-up profile catalog with
 * the cache routes (spec §4.5, D38). HealthModule: the catalog loads as a bootstrap step;
 * RegistryModule: a catalog reload drops the registry cache too.
 */
@Global()
@Module({
  imports: [HealthModule, RegistryModule],
  controllers: [CacheCatalogController, CacheAdminController],
  providers: [
    CacheService,
    CollectionEventsService,
    EntityCacheInvalidator,
    ProfileCatalogRepository,
    ProfileCatalogService,
    CacheClearService,
  ],
  exports: [CacheService, CollectionEventsService, EntityCacheInvalidator, ProfileCatalogService],
})
export class CacheModule {}
