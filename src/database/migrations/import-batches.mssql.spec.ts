import { generateSql, GeneratedSql, mssqlDataSource } from '../mssql-sql';
import { IMPORT_BATCHES_TABLE, IMPORT_TABLES } from '../schema';
import { ImportBatches1796183000000 } from './1796183000000-import-batches';
import { mask, parseTypeormMssqlDdl, ParsedDdl } from '../../../test/support/tsql';

interface ColumnAst {
  resource: 'column';
  column: { column: string };
  definition: { dataType: string };
  nullable?: { type: string };
}

/** The ImportBatches migration's SQL for SQL Server (D53), generated offline and parsed as T-SQL. */
describe('ImportBatches on SQL Server (mssql driver, no server)', () => {
  let sql: GeneratedSql;
  let parsed: ParsedDdl[];

  beforeAll(async () => {
    const ds = mssqlDataSource();
    sql = await generateSql(ds, (qr) => new ImportBatches1796183000000().up(qr));
    expect(ds.isInitialized).toBe(false);
    parsed = [...sql.up, ...sql.down].map(parseTypeormMssqlDdl);
  });

  it('creates exactly app_import_batches and its indexes, and drops them in reverse', () => {
    expect(IMPORT_TABLES.map((t) => t.name)).toEqual(['app_import_batches']);
    expect(sql.up.map((s) => s.trim().replace(/\(.*$/s, ''))).toEqual([
      'CREATE TABLE "app_import_batches" ',
      'CREATE UNIQUE INDEX "UQ_app_import_batches_imb_job_id_imb_batch" ON "app_import_batches" ',
      'CREATE INDEX "IDX_app_import_batches_imb_tenant_id_imb_job_id" ON "app_import_batches" ',
    ]);
    expect(sql.down.map((s) => s.trim())).toEqual([
      'DROP INDEX "IDX_app_import_batches_imb_tenant_id_imb_job_id" ON "app_import_batches"',
      'DROP INDEX "UQ_app_import_batches_imb_job_id_imb_batch" ON "app_import_batches"',
      'DROP TABLE "app_import_batches"',
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
    ]);
    expect(columns.map((c) => c.column.column)).toEqual(IMPORT_BATCHES_TABLE.columns.map((c) => c.name));
  });
});
