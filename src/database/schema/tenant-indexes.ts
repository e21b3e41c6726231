import type { IndexDef } from './columns';

/**
 * Issue 14: the index every tenant-scoped page of a data table needs — the tenant column, then the
 * key. A list is `WHERE <tenant> = ? AND <not deleted> ORDER BY <key> LIMIT/OFFSET`: without it the
 * database walks the primary key across every tenant's rows and filters them (measured with
 * `npm run bench:curves`: a page at offset 99 read ~200,000 rows of other tenants). The demo entity
 * tables; tables of tenants' own entities are theirs to index.
 */
export const TENANT_KEY_INDEXES: ReadonlyArray<{ table: string; index: IndexDef }> = [
  { table: 'demo_customers', index: { columns: ['cus_tenant_id', 'cus_id'] } },
  { table: 'demo_orders', index: { columns: ['ord_tenant_id', 'ord_id'] } },
];
