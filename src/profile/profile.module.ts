import { Module } from '@nestjs/common';
import { RegistryModule } from '../registry/registry.module';
import { ProfileLoaderService } from './profile-loader.service';
import { ProfileRepository } from './profile.repository';

/** The profile loader (spec §4.3) and the normalised policy model (D23, ./policy). */
@Module({
  imports: [RegistryModule],
  providers: [ProfileLoaderService, ProfileRepository],
  exports: [ProfileLoaderService, ProfileRepository],
})
export class ProfileModule {}
