import { MigrationInterface, QueryRunner } from 'typeorm';
import { Dialect, dialectOf } from '../dialect';
import {
  AUDIT_HISTORY_COLUMNS,
  AUDIT_HISTORY_INDEXES,
  TABLES,
  toTable,
  toTableColumn,
  toTableIndex,
} from '../schema';

const AUDIT_TABLE = 'app_audit_logs';

/** Each record's entries numbered 1, 2, … in the order they were written. */
const NUMBERED = `SELECT aud_id AS id, ROW_NUMBER() OVER (PARTITION BY aud_tenant_id, aud_entity_code, aud_record_id ORDER BY aud_at, aud_id) AS rn FROM app_audit_logs WHERE aud_record_id IS NOT NULL AND aud_version IS NULL`;

/**
 * The statements that make the entries written before the migration readable as history: their
 * version per record, and their request id as operation id (a request deletes one record and its
 * cascade, so the request ties a cascade's entries together). One UPDATE per dialect's syntax.
 */
export function auditBackfillSql(dialect: Dialect): string[] {
  const operation = `UPDATE app_audit_logs SET aud_operation_id = aud_request_id WHERE aud_operation_id IS NULL`;
  switch (dialect) {
    case 'postgres':
    case 'sqlite':
      return [
        `UPDATE app_audit_logs SET aud_version = v.rn FROM (${NUMBERED}) v WHERE app_audit_logs.aud_id = v.id`,
        operation,
      ];
    case 'mysql':
      return [
        `UPDATE app_audit_logs a JOIN (${NUMBERED}) v ON v.id = a.aud_id SET a.aud_version = v.rn`,
        operation,
      ];
    case 'mssql':
      return [
        `UPDATE a SET a.aud_version = v.rn FROM app_audit_logs a JOIN (${NUMBERED}) v ON v.id = a.aud_id`,
        operation,
      ];
  }
}

/**
 * D56: version, changed fields and operation id on `app_audit_logs`, the indexes record history
 * reads through (schema/history.ts), and the existing entries numbered. The table is passed as the
 * initial schema's Table object, so the DDL needs no read of the live schema and its SQL Server
 * form is generated offline (record-history.mssql.spec.ts).
 */
export class RecordHistory1795824000000 implements MigrationInterface {
  name = 'RecordHistory1795824000000';

  /** The DDL alone (what the SQL Server spec prints). */
  async schema(queryRunner: QueryRunner): Promise<void> {
    const dialect = dialectOf(queryRunner.connection.driver.options.type);
    const def = TABLES.find((t) => t.name === AUDIT_TABLE);
    if (!def) throw new Error(`${AUDIT_TABLE} is not a table of the initial schema`);
    const table = toTable(def, dialect);
    await queryRunner.addColumns(
      table,
      AUDIT_HISTORY_COLUMNS.map((c) => toTableColumn(c, dialect)),
    );
    for (const index of AUDIT_HISTORY_INDEXES)
      await queryRunner.createIndex(table, toTableIndex(AUDIT_TABLE, index));
  }

  async up(queryRunner: QueryRunner): Promise<void> {
    await this.schema(queryRunner);
    const dialect = dialectOf(queryRunner.connection.driver.options.type);
    for (const sql of auditBackfillSql(dialect)) await queryRunner.query(sql);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    for (const index of [...AUDIT_HISTORY_INDEXES].reverse())
      await queryRunner.dropIndex(AUDIT_TABLE, toTableIndex(AUDIT_TABLE, index).name as string);
    for (const c of [...AUDIT_HISTORY_COLUMNS].reverse()) await queryRunner.dropColumn(AUDIT_TABLE, c.name);
  }
}
