import { generateSql, GeneratedSql, mssqlDataSource } from '../mssql-sql';
import { TENANT_USAGE_TABLE, TENANT_USAGE_TABLES } from '../schema';
import { TenantUsage1795910400000 } from './1795910400000-tenant-usage';
import { mask, parseTypeormMssqlDdl, ParsedDdl } from '../../../test/support/tsql';

interface ColumnAst {
  resource: 'column';
  column: { column: string };
  definition: { dataType: string };
  nullable?: { type: string };
}

/** The TenantUsage migration's SQL for SQL Server (D58), generated offline and parsed as T-SQL. */
describe('TenantUsage on SQL Server (mssql driver, no server)', () => {
  let sql: GeneratedSql;
  let parsed: ParsedDdl[];

  beforeAll(async () => {
    const ds = mssqlDataSource();
    sql = await generateSql(ds, (qr) => new TenantUsage1795910400000().up(qr));
    expect(ds.isInitialized).toBe(false);
    parsed = [...sql.up, ...sql.down].map(parseTypeormMssqlDdl);
  });

  it('creates exactly app_tenant_usage and its indexes, and drops them in reverse', () => {
    expect(TENANT_USAGE_TABLES.map((t) => t.name)).toEqual(['app_tenant_usage']);
    expect(sql.up.map((s) => s.trim().replace(/\(.*$/s, ''))).toEqual([
      'CREATE TABLE "app_tenant_usage" ',
      'CREATE UNIQUE INDEX "UQ_app_tenant_usage_tnu_tenant_id_tnu_hour" ON "app_tenant_usage" ',
      'CREATE INDEX "IDX_app_tenant_usage_tnu_hour" ON "app_tenant_usage" ',
    ]);
    expect(sql.down.map((s) => s.trim())).toEqual([
      'DROP INDEX "IDX_app_tenant_usage_tnu_hour" ON "app_tenant_usage"',
      'DROP INDEX "UQ_app_tenant_usage_tnu_tenant_id_tnu_hour" ON "app_tenant_usage"',
      'DROP TABLE "app_tenant_usage"',
    ]);
  });

  it('parses every statement as T-SQL, with no foreign keys or rewrites needed', () => {
    for (const p of parsed) {
      expect(p.asts.length).toBeGreaterThan(0);
      expect(p.forParser).toEqual([p.original]);
      expect(p.foreignKeys).toEqual([]);
      expect(mask(p.original)).not.toMatch(/[`[\]]/);
    }
  });

  it('gives every column its SQL Server type and nullability', () => {
    const create = parsed[0].asts[0] as unknown as { create_definitions: ColumnAst[] };
    const columns = create.create_definitions.filter((d) => d.resource === 'column');
    expect(columns.map((c) => [c.column.column, c.definition.dataType, c.nullable?.type])).toEqual([
      ['tnu_id', 'INT', 'not null'],
      ['tnu_tenant_id', 'INT', 'not null'],
      ['tnu_hour', 'INT', 'not null'],
      ['tnu_requests', 'INT', 'not null'],
    ]);
    expect(columns.map((c) => c.column.column)).toEqual(TENANT_USAGE_TABLE.columns.map((c) => c.name));
  });
});
