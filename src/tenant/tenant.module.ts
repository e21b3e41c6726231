import { Module } from '@nestjs/common';
import { TenantConfigService } from './tenant-config.service';
import { TenantHeaderService } from './tenant-header.service';
import { TenantLookupService } from './tenant-lookup.service';
import { TenantGuard } from './tenant.guard';
import { TenantRateLimitGuard } from './tenant-rate-limit.guard';
import { TenantsRepository } from './tenants.repository';
import { TenantUsageService } from './tenant-usage.service';

/** Owns the x-tenant-id header crypto, TenantGuard, the tenants repository and tenant-config. */
@Module({
  providers: [
    TenantHeaderService,
    TenantsRepository,
    TenantLookupService,
    TenantConfigService,
    TenantGuard,
    TenantRateLimitGuard,
    TenantUsageService,
  ],
  exports: [
    TenantHeaderService,
    TenantsRepository,
    TenantLookupService,
    TenantConfigService,
    TenantGuard,
    TenantRateLimitGuard,
    TenantUsageService,
  ],
})
export class TenantModule {}
