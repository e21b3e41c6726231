import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { CatalogModule } from '../catalog/catalog.module';
import { ProfileModule } from '../profile/profile.module';
import { RecordsModule } from '../records/records.module';
import { RegistryModule } from '../registry/registry.module';
import { EntityWriteController } from './entity-write.controller';
import { EntityController } from './entity.controller';
import { LiveChangesController } from './live-changes.controller';
import { LiveChangesService } from './live-changes.service';
import { LiveTelemetry } from './live-telemetry';
import { HealthModule } from '../health/health.module';
import { EntityHistoryController } from './entity-history.controller';
import { EntityAccessGuard, EntityChainGuard, EntityInfoGuard, ProfileLoaderGuard } from './entity.guards';

/**
 * The HTTP adapter of the records core (spec §4.3 both path styles): guards resolve tenant, user,
 * entity and profile; controllers parse HTTP into a RecordContext and typed input and call the
 * records use cases.
 */
@Module({
  imports: [RegistryModule, ProfileModule, RecordsModule, AuthModule, HealthModule, CatalogModule],
  controllers: [LiveChangesController, EntityController, EntityWriteController, EntityHistoryController],
  providers: [
    LiveChangesService,
    LiveTelemetry,
    EntityInfoGuard,
    ProfileLoaderGuard,
    EntityAccessGuard,
    EntityChainGuard,
  ],
  exports: [LiveChangesService],
})
export class EntityModule {}
