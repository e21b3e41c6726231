import { generateSql, GeneratedSql, mssqlDataSource } from '../mssql-sql';
import { JobVisibility1796262000000 } from './1796262000000-job-visibility';
import { assertParsesAsTsql, parseTypeormMssqlDdl } from '../../../test/support/tsql';

/**
 * The JobVisibility migration's SQL for SQL Server (issue 34), generated offline by TypeORM's real
 * SqlServerQueryRunner on a DataSource that is never connected, and parsed as T-SQL.
 */
describe('JobVisibility on SQL Server (mssql driver, no server)', () => {
  let sql: GeneratedSql;

  beforeAll(async () => {
    const ds = mssqlDataSource();
    sql = await generateSql(ds, (qr) => new JobVisibility1796262000000().up(qr));
    expect(ds.isInitialized).toBe(false);
  });

  it('adds the public id, its unique index filtered to the rows that have one, and the file kind', () => {
    expect(sql.up.map((s) => s.trim())).toEqual([
      'ALTER TABLE "app_jobs" ADD "job_public_id" nvarchar(32)',
      'CREATE UNIQUE INDEX "UQ_app_jobs_job_tenant_id_job_public_id" ON "app_jobs" ("job_tenant_id", "job_public_id") WHERE job_public_id IS NOT NULL',
      'ALTER TABLE "app_export_files" ADD "exf_kind" nvarchar(20)',
    ]);
  });

  it('undoes them in reverse', () => {
    expect(sql.down.map((s) => s.trim())).toEqual([
      'ALTER TABLE "app_export_files" DROP COLUMN "exf_kind"',
      'DROP INDEX "UQ_app_jobs_job_tenant_id_job_public_id" ON "app_jobs"',
      'ALTER TABLE "app_jobs" DROP COLUMN "job_public_id"',
    ]);
  });

  it('parses every statement as T-SQL', () => {
    for (const statement of [...sql.up, ...sql.down]) {
      if (statement.startsWith('CREATE'))
        expect(parseTypeormMssqlDdl(statement).asts.length).toBeGreaterThan(0);
      else assertParsesAsTsql(statement);
    }
  });
});
