import { Module } from '@nestjs/common';
import { ProfileModule } from '../profile/profile.module';
import { RegistryModule } from '../registry/registry.module';
import { EntityController } from './entity.controller';
import { EntityAccessGuard, EntityInfoGuard, MaintainedByGuard, ProfileLoaderGuard } from './entity.guards';
import { EntityRepository } from './entity.repository';
import { EntityService } from './entity.service';

/** Generic reads over registered entities (spec §4.3). */
@Module({
  imports: [RegistryModule, ProfileModule],
  controllers: [EntityController],
  providers: [
    EntityService,
    EntityRepository,
    EntityInfoGuard,
    ProfileLoaderGuard,
    MaintainedByGuard,
    EntityAccessGuard,
  ],
})
export class EntityModule {}
