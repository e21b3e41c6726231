import type { MigrationInterface, QueryRunner } from 'typeorm';
import { generateSql, GeneratedSql, mssqlDataSource } from '../../src/database/mssql-sql';
import { mask, parseTypeormMssqlDdl, ParsedDdl } from './tsql';

interface ColumnAst {
  resource: 'column';
  column: { column: string };
  definition: { dataType: string };
  nullable?: { type: string };
}

export interface TableMigrationCase {
  /** The migration's class name and the decision it serves, for the suite's title. */
  title: string;
  migration: MigrationInterface;
  /** The tables the schema lists for the migration, and the one it creates. */
  tables: ReadonlyArray<{ name: string }>;
  table: { name: string; columns: ReadonlyArray<{ name: string }> };
  /** Statement heads of `up` (text before the first parenthesis) and the `down` statements. */
  up: string[];
  down: string[];
  /** [column, SQL Server type, nullability] in table order. */
  columns: Array<[string, string, string | undefined]>;
}

/**
 * A migration creating one table (and its indexes) for SQL Server: its SQL generated offline by
 * the mssql driver (no server) and parsed as T-SQL — the statements, their reverse, and every
 * column's type and nullability, which must match the schema's column list.
 */
export function describeMssqlTableMigration(c: TableMigrationCase): void {
  describe(`${c.title} on SQL Server (mssql driver, no server)`, () => {
    let sql: GeneratedSql;
    let parsed: ParsedDdl[];

    beforeAll(async () => {
      const ds = mssqlDataSource();
      sql = await generateSql(ds, (qr: QueryRunner) => c.migration.up(qr));
      expect(ds.isInitialized).toBe(false);
      parsed = [...sql.up, ...sql.down].map(parseTypeormMssqlDdl);
    });

    it(`creates exactly ${c.table.name} and its indexes, and drops them in reverse`, () => {
      expect(c.tables.map((t) => t.name)).toEqual([c.table.name]);
      expect(sql.up.map((s) => s.trim().replace(/\(.*$/s, ''))).toEqual(c.up);
      expect(sql.down.map((s) => s.trim())).toEqual(c.down);
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
      expect(columns.map((x) => [x.column.column, x.definition.dataType, x.nullable?.type])).toEqual(
        c.columns,
      );
      expect(columns.map((x) => x.column.column)).toEqual(c.table.columns.map((x) => x.name));
    });
  });
}
