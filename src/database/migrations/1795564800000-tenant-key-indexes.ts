import { MigrationInterface, QueryRunner } from 'typeorm';
import { dialectOf } from '../dialect';
import { TABLES, TENANT_KEY_INDEXES, toTable, toTableIndex } from '../schema';

/**
 * Issue 14: (tenant, key) indexes on the demo entity tables (schema/tenant-indexes.ts). The tables
 * are passed as Table objects of the initial schema, so no live schema is read and the SQL can be
 * generated offline (tenant-key-indexes.mssql.spec.ts).
 */
export class TenantKeyIndexes1795564800000 implements MigrationInterface {
  name = 'TenantKeyIndexes1795564800000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const dialect = dialectOf(queryRunner.connection.driver.options.type);
    for (const { table, index } of TENANT_KEY_INDEXES) {
      const def = TABLES.find((t) => t.name === table);
      if (!def) throw new Error(`${table} is not a table of the initial schema`);
      await queryRunner.createIndex(toTable(def, dialect), toTableIndex(table, index));
    }
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    for (const { table, index } of [...TENANT_KEY_INDEXES].reverse())
      await queryRunner.dropIndex(table, toTableIndex(table, index).name as string);
  }
}
