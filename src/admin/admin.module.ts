import { Module } from '@nestjs/common';
import { CatalogModule } from '../catalog/catalog.module';
import { DataviewModule } from '../dataview/dataview.module';
import { RegistryModule } from '../registry/registry.module';
import { TenantModule } from '../tenant/tenant.module';
import { TenantLifecycleController } from './tenants/tenant-lifecycle.controller';
import { TenantLifecycleService } from './tenants/tenant-lifecycle.service';

/** Operating many tenants (D58): the tenant lifecycle routes. */
@Module({
  imports: [TenantModule, RegistryModule, CatalogModule, DataviewModule],
  controllers: [TenantLifecycleController],
  providers: [TenantLifecycleService],
})
export class AdminModule {}
