import { MigrationInterface, QueryRunner, Table } from 'typeorm';
import { Dialect, dialectOf } from '../dialect';
import { REVOCATION_TABLES, TableDef, toTable } from '../schema';

/**
 * A table of REVOCATION_TABLES for `dialect`. PostgreSQL, MySQL/MariaDB and SQLite never compare
 * NULLs in a unique index (any number of rows may have one); SQL Server allows one NULL per key.
 * There a unique index over nullable columns is filtered to the rows where they are all set, which
 * is the other dialects' behaviour: `rvk_jti` is unique when set, and the user-wide rows (jti NULL)
 * may repeat.
 */
export function revocationTable(def: TableDef, dialect: Dialect): Table {
  const table = toTable(def, dialect);
  if (dialect === 'mssql') {
    const nullable = new Set(def.columns.filter((c) => c.nullable).map((c) => c.name));
    for (const index of table.indices) {
      const filter = index.columnNames.filter((c) => nullable.has(c));
      if (index.isUnique && filter.length > 0)
        index.where = filter.map((c) => `${c} IS NOT NULL`).join(' AND ');
    }
  }
  return table;
}

/** D46: app_revoked_tokens, so that revocations survive a restart of the process or of Redis. */
export class RevokedTokens1795305600000 implements MigrationInterface {
  name = 'RevokedTokens1795305600000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const dialect = dialectOf(queryRunner.connection.driver.options.type);
    for (const def of REVOCATION_TABLES) {
      await queryRunner.createTable(revocationTable(def, dialect), false, true, true);
    }
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    for (const def of [...REVOCATION_TABLES].reverse()) {
      await queryRunner.dropTable(def.name, true, true, true);
    }
  }
}
