import { Module } from '@nestjs/common';
import { RegistryRepository } from './registry.repository';
import { RegistryService } from './registry.service';

/**
 * Owns the object registry: entity info resolution, field ↔ column mapping, payload merge.
 * DatabaseModule and CacheModule are global.
 */
@Module({
  providers: [RegistryRepository, RegistryService],
  exports: [RegistryRepository, RegistryService],
})
export class RegistryModule {}
