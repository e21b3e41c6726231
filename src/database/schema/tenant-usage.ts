import { id, int, TableDef } from './columns';

/**
 * Requests per tenant and hour (D58 usage): each instance counts in memory and adds its counts here
 * every flush, so the table holds one row per tenant and hour whatever the number of instances.
 * `tnu_hour` is the hour as whole hours since the epoch. Rows older than 31 days are removed by the
 * flush. No foreign key, like the other operational tables: an erased tenant's rows are deleted.
 */
export const TENANT_USAGE_TABLE: TableDef = {
  name: 'app_tenant_usage',
  prefix: 'tnu',
  columns: [id('tnu'), int('tnu_tenant_id', false), int('tnu_hour', false), int('tnu_requests', false)],
  indices: [{ columns: ['tnu_tenant_id', 'tnu_hour'], unique: true }, { columns: ['tnu_hour'] }],
};

/** The tables of migration TenantUsage1795910400000, which creates exactly these. */
export const TENANT_USAGE_TABLES: readonly TableDef[] = [TENANT_USAGE_TABLE];
