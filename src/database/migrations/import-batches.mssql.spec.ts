import { IMPORT_BATCHES_TABLE, IMPORT_TABLES } from '../schema';
import { ImportBatches1796183000000 } from './1796183000000-import-batches';
import { describeMssqlTableMigration } from '../../../test/support/mssql-table-migration';

/** The ImportBatches migration's SQL for SQL Server (D53), generated offline and parsed as T-SQL. */
describeMssqlTableMigration({
  title: 'ImportBatches',
  migration: new ImportBatches1796183000000(),
  tables: IMPORT_TABLES,
  table: IMPORT_BATCHES_TABLE,
  up: [
    'CREATE TABLE "app_import_batches" ',
    'CREATE UNIQUE INDEX "UQ_app_import_batches_imb_job_id_imb_batch" ON "app_import_batches" ',
    'CREATE INDEX "IDX_app_import_batches_imb_tenant_id_imb_job_id" ON "app_import_batches" ',
  ],
  down: [
    'DROP INDEX "IDX_app_import_batches_imb_tenant_id_imb_job_id" ON "app_import_batches"',
    'DROP INDEX "UQ_app_import_batches_imb_job_id_imb_batch" ON "app_import_batches"',
    'DROP TABLE "app_import_batches"',
  ],
  columns: [
    ['imb_id', 'INT', 'not null'],
    ['imb_tenant_id', 'INT', 'not null'],
    ['imb_job_id', 'INT', 'not null'],
    ['imb_batch', 'INT', 'not null'],
    ['imb_rows', 'INT', 'not null'],
    ['imb_created', 'INT', 'not null'],
    ['imb_updated', 'INT', 'not null'],
    ['imb_skipped', 'INT', 'not null'],
    ['imb_failed', 'INT', 'not null'],
    ['imb_report', 'NVARCHAR', undefined],
    ['imb_created_at', 'DATETIME2', 'not null'],
  ],
});
