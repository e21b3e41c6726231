import { Module } from '@nestjs/common';
import { HealthModule } from '../health/health.module';
import { RegistryModule } from '../registry/registry.module';
import { CacheClearService } from './cache-clear.service';
import { CacheAdminController, CacheCatalogController } from './cache-catalog.controller';
import { ProfileCatalogRepository } from './profile-catalog.repository';
import { ProfileCatalogService } from './profile-catalog.service';

/**
 * The start-up profile catalog and the cache routes (spec §4.5, D38): a feature above the cache,
 * the registry and the profiles it reads. HealthModule: the catalog loads as a bootstrap step;
 * RegistryModule: a catalog reload drops the registry cache too.
 */
@Module({
  imports: [HealthModule, RegistryModule],
  controllers: [CacheCatalogController, CacheAdminController],
  providers: [ProfileCatalogRepository, ProfileCatalogService, CacheClearService],
  exports: [ProfileCatalogService, CacheClearService],
})
export class CatalogModule {}
