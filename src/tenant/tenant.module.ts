import { Module } from '@nestjs/common';
import { TenantConfigService } from './tenant-config.service';
import { TenantHeaderService } from './tenant-header.service';
import { TenantGuard } from './tenant.guard';
import { TenantsRepository } from './tenants.repository';

/** Owns the x-tenant-id header crypto, TenantGuard, the tenants repository and tenant-config. */
@Module({
  providers: [TenantHeaderService, TenantsRepository, TenantConfigService, TenantGuard],
  exports: [TenantHeaderService, TenantsRepository, TenantConfigService, TenantGuard],
})
export class TenantModule {}
