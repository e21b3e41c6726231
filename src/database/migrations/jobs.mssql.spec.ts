import { generateSql, GeneratedSql, mssqlDataSource } from '../mssql-sql';
import { JOB_TABLES, JOBS_TABLE } from '../schema';
import { Jobs1795651200000 } from './1795651200000-jobs';
import { mask, parseTypeormMssqlDdl, ParsedDdl } from '../../../test/support/tsql';

interface ColumnAst {
  resource: 'column';
  column: { column: string };
  definition: { dataType: string; length?: number | 'max' };
  nullable?: { type: string };
}

/** A named DEFAULT in a column definition: valid T-SQL the parser lacks (see workflow-runtime.mssql.spec.ts). */
const NAMED_DEFAULT = /CONSTRAINT "DF_[^"]+" DEFAULT \d+/g;

/**
 * The Jobs migration's SQL for SQL Server, generated offline by TypeORM's real SqlServerQueryRunner
 * on a DataSource that is never connected, printed (snapshot) and parsed as T-SQL.
 */
describe('Jobs on SQL Server (mssql driver, no server)', () => {
  let sql: GeneratedSql;
  let parsed: ParsedDdl[];

  beforeAll(async () => {
    const ds = mssqlDataSource();
    sql = await generateSql(ds, (qr) => new Jobs1795651200000().up(qr));
    expect(ds.isInitialized).toBe(false);
    parsed = [...sql.up, ...sql.down].map(parseTypeormMssqlDdl);
  });

  it('creates exactly app_jobs and its indexes, and drops them in reverse', () => {
    expect(JOB_TABLES.map((t) => t.name)).toEqual(['app_jobs']);
    expect(sql.up).toMatchSnapshot();
    expect(sql.up.map((s) => s.trim().replace(/\(.*$/s, ''))).toEqual([
      'CREATE TABLE "app_jobs" ',
      'CREATE INDEX "IDX_app_jobs_job_status_job_lease_until" ON "app_jobs" ',
      'CREATE INDEX "IDX_app_jobs_job_tenant_id_job_kind_job_status" ON "app_jobs" ',
      'CREATE INDEX "IDX_app_jobs_job_finished_at" ON "app_jobs" ',
    ]);
    expect(sql.down.map((s) => s.trim())).toEqual([
      'DROP INDEX "IDX_app_jobs_job_finished_at" ON "app_jobs"',
      'DROP INDEX "IDX_app_jobs_job_tenant_id_job_kind_job_status" ON "app_jobs"',
      'DROP INDEX "IDX_app_jobs_job_status_job_lease_until" ON "app_jobs"',
      'DROP TABLE "app_jobs"',
    ]);
  });

  it('parses every statement as T-SQL, with no foreign keys', () => {
    for (const p of parsed) {
      expect(p.asts.length).toBeGreaterThan(0);
      expect(p.foreignKeys).toEqual([]);
      expect(mask(p.original)).not.toMatch(/[`[\]]/);
    }
    expect(sql.up[0].match(NAMED_DEFAULT)).toHaveLength(2);
  });

  it('gives every column its declared SQL Server type and nullability (JSON as NVARCHAR(MAX))', () => {
    const create = parsed[0].asts[0] as unknown as { create_definitions: ColumnAst[] };
    const columns = create.create_definitions.filter((d) => d.resource === 'column');
    expect(
      columns.map((c) => [c.column.column, c.definition.dataType, c.definition.length, c.nullable?.type]),
    ).toEqual([
      ['job_id', 'INT', undefined, 'not null'],
      ['job_tenant_id', 'INT', undefined, 'not null'],
      ['job_kind', 'NVARCHAR', 50, 'not null'],
      ['job_status', 'NVARCHAR', 20, 'not null'],
      ['job_created_by', 'INT', undefined, undefined],
      ['job_request_id', 'NVARCHAR', 100, undefined],
      ['job_input', 'NVARCHAR', 'max', undefined],
      ['job_processed', 'INT', undefined, 'not null'],
      ['job_total', 'INT', undefined, undefined],
      ['job_result', 'NVARCHAR', 'max', undefined],
      ['job_error', 'NVARCHAR', 'max', undefined],
      ['job_lease_owner', 'NVARCHAR', 100, undefined],
      ['job_lease_until', 'DATETIME2', 3, undefined],
      ['job_attempts', 'INT', undefined, 'not null'],
      ['job_run_after', 'DATETIME2', 3, undefined],
      ['job_created_at', 'DATETIME2', 3, 'not null'],
      ['job_started_at', 'DATETIME2', 3, undefined],
      ['job_updated_at', 'DATETIME2', 3, 'not null'],
      ['job_finished_at', 'DATETIME2', 3, undefined],
    ]);
    expect(columns.map((c) => c.column.column)).toEqual(JOBS_TABLE.columns.map((c) => c.name));
  });
});
