import { Module } from '@nestjs/common';
import { CatalogModule } from '../catalog/catalog.module';
import { DataviewModule } from '../dataview/dataview.module';
import { RegistryModule } from '../registry/registry.module';
import { JobsModule } from '../jobs/jobs.module';
import { RecordsModule } from '../records/records.module';
import { TenantModule } from '../tenant/tenant.module';
import { KeyStatusController } from './keys/key-status.controller';
import { TenantEntities } from './tenants/tenant-entities';
import { TenantExportJob } from './tenants/tenant-export.job';
import { TenantLifecycleController } from './tenants/tenant-lifecycle.controller';
import { TenantEraser } from './tenants/tenant-eraser';
import { TenantExports } from './tenants/tenant-exports';
import { TenantLifecycleService } from './tenants/tenant-lifecycle.service';
import { TenantRecords } from './tenants/tenant-records';
import { TenantUsageReport } from './tenants/tenant-usage-report';

/** Operating many tenants (D58): the tenant lifecycle routes; the key rotation status (D57). */
@Module({
  imports: [TenantModule, RegistryModule, CatalogModule, DataviewModule, JobsModule, RecordsModule],
  controllers: [TenantLifecycleController, KeyStatusController],
  providers: [
    TenantRecords,
    TenantEntities,
    TenantLifecycleService,
    TenantUsageReport,
    TenantExports,
    TenantExportJob,
    TenantEraser,
  ],
})
export class AdminModule {}
