import { generateSql, GeneratedSql, mssqlDataSource } from '../mssql-sql';
import { EXPORT_FILES_TABLE, EXPORT_TABLES } from '../schema';
import { ExportFiles1795392000000 } from './1795392000000-export-files';
import { mask, parseTypeormMssqlDdl, ParsedDdl } from '../../../test/support/tsql';

interface ColumnAst {
  resource: 'column';
  column: { column: string };
  definition: { dataType: string; length?: number | 'max' };
  nullable?: { type: string };
}

/**
 * The ExportFiles migration's SQL for SQL Server (D48), generated offline by TypeORM's real
 * SqlServerQueryRunner on a DataSource that is never connected, and parsed as T-SQL.
 */
describe('ExportFiles on SQL Server (mssql driver, no server)', () => {
  let sql: GeneratedSql;
  let parsed: ParsedDdl[];

  beforeAll(async () => {
    const ds = mssqlDataSource();
    sql = await generateSql(ds, (qr) => new ExportFiles1795392000000().up(qr));
    expect(ds.isInitialized).toBe(false);
    parsed = [...sql.up, ...sql.down].map(parseTypeormMssqlDdl);
  });

  it('creates exactly app_export_files and its indexes, and drops them in reverse', () => {
    expect(EXPORT_TABLES.map((t) => t.name)).toEqual(['app_export_files']);
    expect(sql.up.map((s) => s.trim().replace(/\(.*$/s, ''))).toEqual([
      'CREATE TABLE "app_export_files" ',
      'CREATE UNIQUE INDEX "UQ_app_export_files_exf_file_id_exf_chunk" ON "app_export_files" ',
      'CREATE INDEX "IDX_app_export_files_exf_expires_at" ON "app_export_files" ',
      'CREATE INDEX "IDX_app_export_files_exf_created_at" ON "app_export_files" ',
    ]);
    expect(sql.down.map((s) => s.trim())).toEqual([
      'DROP INDEX "IDX_app_export_files_exf_created_at" ON "app_export_files"',
      'DROP INDEX "IDX_app_export_files_exf_expires_at" ON "app_export_files"',
      'DROP INDEX "UQ_app_export_files_exf_file_id_exf_chunk" ON "app_export_files"',
      'DROP TABLE "app_export_files"',
    ]);
  });

  it('parses every statement as T-SQL, with no foreign keys, defaults or rewrites needed', () => {
    for (const p of parsed) {
      expect(p.asts.length).toBeGreaterThan(0);
      expect(p.forParser).toEqual([p.original]);
      expect(p.foreignKeys).toEqual([]);
      expect(p.defaults).toEqual([]);
      expect(mask(p.original)).not.toMatch(/[`[\]]/);
    }
  });

  it('gives every column its declared SQL Server type and nullability (the data as NVARCHAR(MAX))', () => {
    const create = parsed[0].asts[0] as unknown as { create_definitions: ColumnAst[] };
    const columns = create.create_definitions.filter((d) => d.resource === 'column');
    expect(
      columns.map((c) => [c.column.column, c.definition.dataType, c.definition.length, c.nullable?.type]),
    ).toEqual([
      ['exf_id', 'INT', undefined, 'not null'],
      ['exf_file_id', 'NVARCHAR', 64, 'not null'],
      ['exf_chunk', 'INT', undefined, 'not null'],
      ['exf_tenant_id', 'INT', undefined, 'not null'],
      ['exf_created_by', 'INT', undefined, 'not null'],
      ['exf_filename', 'NVARCHAR', 255, 'not null'],
      ['exf_content_type', 'NVARCHAR', 128, 'not null'],
      ['exf_data', 'NVARCHAR', 'max', undefined],
      ['exf_expires_at', 'DATETIME2', 3, undefined],
      ['exf_created_at', 'DATETIME2', 3, 'not null'],
    ]);
    expect(columns.map((c) => c.column.column)).toEqual(EXPORT_FILES_TABLE.columns.map((c) => c.name));
  });
});
