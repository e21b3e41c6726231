import { DataviewChangesController } from './dataview-changes.controller';
import { EntityModule } from '../entity/entity.module';
import { Inject, Injectable, Module, OnApplicationShutdown } from '@nestjs/common';
import type { AppConfig } from '../config/config.schema';
import { APP_CONFIG } from '../config/config.module';
import { ProfileModule } from '../profile/profile.module';
import { DatabaseService } from '../database/database.service';
import { RecordsModule } from '../records/records.module';
import { RegistryModule } from '../registry/registry.module';
import { DataviewConfigRepository } from './config/dataview-config.repository';
import { DataviewConfigService } from './config/dataview-config.service';
import { DataviewController } from './dataview.controller';
import { DatabaseExportStore } from './download/database-export-store';
import { DirectoryExportStore } from './download/directory-export-store';
import { DownloadController } from './download/download.controller';
import { EXPORT_STORE } from './download/export-store';
import { ExportDataview } from './export/export-dataview';
import { ExportJob } from './export/export-job';
import { ExportController } from './export/export.controller';
import { ImportController } from './import/import.controller';
import { ImportJob } from './import/import-job';
import { ImportBatchesRepository } from './import/import-batches.repository';
import { createRenderPool, EXPORT_RENDER_POOL, type RenderPool } from './export/render-pool';
import { JobsModule } from '../jobs/jobs.module';
import { TenantModule } from '../tenant/tenant.module';
import { DataviewCursors } from './grid/cursor';
import { ReadDataviewData } from './grid/grid-data';
import { WorkflowModule } from '../workflow/workflow.module';
import { DataviewActions } from './actions/dataview-actions';
import { DataviewActionsController } from './actions/dataview-actions.controller';

/**
 * Which export store serves downloads (D32, D48): `directory` (the embedded default) or
 * `database` (app_export_files, shared by every instance), from EXPORT_STORE.
 */
export function exportStoreKind(config: AppConfig): 'directory' | 'database' {
  return config.exports.store;
}

/**
 * Owns dataview configuration (config/), grid queries (grid/: configuration + request → records
 * query, cursors, the data use case), exports (export/: renderers and the export use case) and
 * downloads (download/: the export store and its route). Reads go through the records core;
 * exports run as jobs (src/jobs) whose rendering happens in render threads (issue 21 #1).
 * DatabaseModule and CacheModule are global.
 */
/** Ends the render threads once the job worker has stopped (beforeApplicationShutdown). */
@Injectable()
class RenderPoolShutdown implements OnApplicationShutdown {
  constructor(@Inject(EXPORT_RENDER_POOL) private readonly pool: RenderPool) {}

  async onApplicationShutdown(): Promise<void> {
    await this.pool.destroy();
  }
}

@Module({
  imports: [
    EntityModule,
    RegistryModule,
    ProfileModule,
    RecordsModule,
    TenantModule,
    JobsModule,
    WorkflowModule,
  ],
  controllers: [
    DataviewChangesController,
    DataviewController,
    DataviewActionsController,
    ExportController,
    DownloadController,
    ImportController,
  ],
  providers: [
    DataviewConfigRepository,
    DataviewConfigService,
    DataviewCursors,
    ReadDataviewData,
    DataviewActions,
    ExportDataview,
    ExportJob,
    ImportJob,
    ImportBatchesRepository,
    { provide: EXPORT_RENDER_POOL, inject: [APP_CONFIG], useFactory: createRenderPool },
    RenderPoolShutdown,
    {
      provide: EXPORT_STORE,
      inject: [APP_CONFIG, DatabaseService],
      useFactory: (config: AppConfig, database: DatabaseService) =>
        exportStoreKind(config) === 'database'
          ? new DatabaseExportStore(database, config)
          : new DirectoryExportStore(config),
    },
  ],
  exports: [DataviewConfigService, ReadDataviewData, EXPORT_STORE],
})
export class DataviewModule {}
