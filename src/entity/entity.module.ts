import { Module } from '@nestjs/common';
import { ProfileModule } from '../profile/profile.module';
import { RegistryModule } from '../registry/registry.module';
import { EntityAuditService } from './entity-audit.service';
import { EntityCacheInvalidator } from './entity-cache-invalidator';
import { EntityWriteController } from './entity-write.controller';
import { EntityWriteRepository } from './entity-write.repository';
import { EntityWriteService } from './entity-write.service';
import { EntityController } from './entity.controller';
import { EntityAccessGuard, EntityInfoGuard, MaintainedByGuard, ProfileLoaderGuard } from './entity.guards';
import { EntityRepository } from './entity.repository';
import { EntityService } from './entity.service';

/** Generic reads and writes over registered entities (spec §4.3). */
@Module({
  imports: [RegistryModule, ProfileModule],
  controllers: [EntityController, EntityWriteController],
  providers: [
    EntityService,
    EntityRepository,
    EntityWriteService,
    EntityWriteRepository,
    EntityAuditService,
    EntityCacheInvalidator,
    EntityInfoGuard,
    ProfileLoaderGuard,
    MaintainedByGuard,
    EntityAccessGuard,
  ],
})
export class EntityModule {}
