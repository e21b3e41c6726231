import { TENANT_USAGE_TABLE, TENANT_USAGE_TABLES } from '../schema';
import { TenantUsage1795910400000 } from './1795910400000-tenant-usage';
import { describeMssqlTableMigration } from '../../../test/support/mssql-table-migration';

/** The TenantUsage migration's SQL for SQL Server (D58), generated offline and parsed as T-SQL. */
describeMssqlTableMigration({
  title: 'TenantUsage',
  migration: new TenantUsage1795910400000(),
  tables: TENANT_USAGE_TABLES,
  table: TENANT_USAGE_TABLE,
  up: [
    'CREATE TABLE "app_tenant_usage" ',
    'CREATE UNIQUE INDEX "UQ_app_tenant_usage_tnu_tenant_id_tnu_hour" ON "app_tenant_usage" ',
    'CREATE INDEX "IDX_app_tenant_usage_tnu_hour" ON "app_tenant_usage" ',
  ],
  down: [
    'DROP INDEX "IDX_app_tenant_usage_tnu_hour" ON "app_tenant_usage"',
    'DROP INDEX "UQ_app_tenant_usage_tnu_tenant_id_tnu_hour" ON "app_tenant_usage"',
    'DROP TABLE "app_tenant_usage"',
  ],
  columns: [
    ['tnu_id', 'INT', 'not null'],
    ['tnu_tenant_id', 'INT', 'not null'],
    ['tnu_hour', 'INT', 'not null'],
    ['tnu_requests', 'INT', 'not null'],
  ],
});
