import { Module } from '@nestjs/common';
import { ProfileModule } from '../profile/profile.module';
import { RecordsModule } from '../records/records.module';
import { TenantModule } from '../tenant/tenant.module';
import { AuthModule } from './auth.module';
import { MailerService } from './mailer.service';
import { RolesRepository } from './roles.repository';
import { SignupController } from './signup.controller';
import { SignupService } from './signup.service';

/** Self-service sign-up (D15): codes and links by mail; the account is created through records. */
@Module({
  imports: [AuthModule, TenantModule, ProfileModule, RecordsModule],
  controllers: [SignupController],
  providers: [SignupService, MailerService, RolesRepository],
})
export class SignupModule {}
