import { Module } from '@nestjs/common';

/** Owns the x-tenant-id header crypto, TenantGuard, tenants repository and tenant-config (issue 3). */
@Module({})
export class TenantModule {}
