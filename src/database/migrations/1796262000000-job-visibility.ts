import { MigrationInterface, QueryRunner } from 'typeorm';
import { dialectOf } from '../dialect';
import {
  EXPORT_FILE_KIND_COLUMNS,
  EXPORT_FILES_TABLE,
  JOB_PUBLIC_ID_COLUMNS,
  JOB_PUBLIC_ID_UNIQUE,
  JOBS_TABLE,
  toTable,
  toTableColumn,
  toTableIndex,
} from '../schema';

/**
 * Issue 34 (schema/job-visibility.ts): app_jobs.job_public_id with its unique (tenant, public id)
 * index, and app_export_files.exf_kind. The tables are passed as Table objects of their landed
 * migrations, so no live schema is read and the SQL can be generated offline
 * (job-visibility.mssql.spec.ts). Rows written before keep NULL in both columns: PostgreSQL,
 * MySQL/MariaDB and SQLite never compare NULLs in a unique index, and on SQL Server (one NULL per
 * key there) the index is filtered to the rows that have a public id, which is the same rule.
 */
export class JobVisibility1796262000000 implements MigrationInterface {
  name = 'JobVisibility1796262000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const dialect = dialectOf(queryRunner.connection.driver.options.type);
    await queryRunner.addColumns(
      toTable(JOBS_TABLE, dialect),
      JOB_PUBLIC_ID_COLUMNS.map((c) => toTableColumn(c, dialect)),
    );
    const unique = toTableIndex(JOBS_TABLE.name, JOB_PUBLIC_ID_UNIQUE);
    if (dialect === 'mssql') unique.where = 'job_public_id IS NOT NULL';
    await queryRunner.createIndex(toTable(JOBS_TABLE, dialect), unique);
    await queryRunner.addColumns(
      toTable(EXPORT_FILES_TABLE, dialect),
      EXPORT_FILE_KIND_COLUMNS.map((c) => toTableColumn(c, dialect)),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    for (const c of [...EXPORT_FILE_KIND_COLUMNS].reverse())
      await queryRunner.dropColumn(EXPORT_FILES_TABLE.name, c.name);
    await queryRunner.dropIndex(
      JOBS_TABLE.name,
      toTableIndex(JOBS_TABLE.name, JOB_PUBLIC_ID_UNIQUE).name as string,
    );
    for (const c of [...JOB_PUBLIC_ID_COLUMNS].reverse())
      await queryRunner.dropColumn(JOBS_TABLE.name, c.name);
  }
}
