import { generateSql, GeneratedSql, mssqlDataSource } from '../mssql-sql';
import { TenantKeyIndexes1795564800000 } from './1795564800000-tenant-key-indexes';
import { parseTypeormMssqlDdl } from '../../../test/support/tsql';

/** The TenantKeyIndexes migration's SQL for SQL Server, generated offline and parsed as T-SQL. */
describe('TenantKeyIndexes on SQL Server (mssql driver, no server)', () => {
  let sql: GeneratedSql;

  beforeAll(async () => {
    const ds = mssqlDataSource();
    sql = await generateSql(ds, (qr) => new TenantKeyIndexes1795564800000().up(qr));
    expect(ds.isInitialized).toBe(false);
  });

  it('creates the (tenant, key) index of each demo entity table', () => {
    expect(sql.up).toEqual([
      'CREATE INDEX "IDX_demo_customers_cus_tenant_id_cus_id" ON "demo_customers" ("cus_tenant_id", "cus_id") ',
      'CREATE INDEX "IDX_demo_orders_ord_tenant_id_ord_id" ON "demo_orders" ("ord_tenant_id", "ord_id") ',
    ]);
  });

  it('parses every statement as T-SQL', () => {
    for (const statement of sql.up) expect(parseTypeormMssqlDdl(statement).asts.length).toBeGreaterThan(0);
  });
});
