import { generateSql, GeneratedSql, mssqlDataSource } from '../mssql-sql';
import { auditBackfillSql, RecordHistory1795824000000 } from './1795824000000-record-history';
import { assertParsesAsTsql, parseTypeormMssqlDdl } from '../../../test/support/tsql';

/**
 * The RecordHistory migration's SQL for SQL Server (D56): its DDL generated offline by TypeORM's
 * real SqlServerQueryRunner on a DataSource that is never connected (the migration passes the
 * initial Table object, so nothing reads a live schema), printed and parsed as T-SQL, and its
 * backfill statements parsed too.
 */
describe('RecordHistory on SQL Server (mssql driver, no server)', () => {
  let sql: GeneratedSql;

  beforeAll(async () => {
    const ds = mssqlDataSource();
    sql = await generateSql(ds, (qr) => new RecordHistory1795824000000().schema(qr));
    expect(ds.isInitialized).toBe(false);
  });

  it('adds the version, changed fields, operation id and actor, then the three indexes', () => {
    expect(sql.up).toMatchSnapshot();
    expect(sql.up).toEqual([
      'ALTER TABLE "app_audit_logs" ADD "aud_version" int',
      'ALTER TABLE "app_audit_logs" ADD "aud_changed" nvarchar(MAX)',
      'ALTER TABLE "app_audit_logs" ADD "aud_operation_id" nvarchar(128)',
      'ALTER TABLE "app_audit_logs" ADD "aud_user_email" nvarchar(255)',
      'CREATE INDEX "IDX_app_audit_logs_aud_tenant_id_aud_entity_code_aud_record_" ON "app_audit_logs" ("aud_tenant_id", "aud_entity_code", "aud_record_id", "aud_version") ',
      'CREATE INDEX "IDX_app_audit_logs_aud_tenant_id_aud_operation_id" ON "app_audit_logs" ("aud_tenant_id", "aud_operation_id") ',
      'CREATE INDEX "IDX_app_audit_logs_aud_at" ON "app_audit_logs" ("aud_at") ',
    ]);
  });

  it('parses every statement as T-SQL, the backfill included', () => {
    for (const statement of sql.up) {
      if (statement.startsWith('CREATE'))
        expect(parseTypeormMssqlDdl(statement).asts.length).toBeGreaterThan(0);
      else assertParsesAsTsql(statement);
    }
    const backfill = auditBackfillSql('mssql');
    expect(backfill).toMatchSnapshot();
    for (const statement of backfill) assertParsesAsTsql(statement);
  });
});
