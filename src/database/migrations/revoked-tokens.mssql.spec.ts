import { generateSql, GeneratedSql, mssqlDataSource } from '../mssql-sql';
import { REVOCATION_TABLES, REVOKED_TOKENS_TABLE } from '../schema';
import { RevokedTokens1795305600000 } from './1795305600000-revoked-tokens';
import { mask, parseTypeormMssqlDdl, ParsedDdl } from '../../../test/support/tsql';

/**
 * The RevokedTokens migration's SQL for SQL Server (D46), generated offline by TypeORM's real
 * SqlServerQueryRunner on a DataSource that is never connected, and parsed as T-SQL. The general
 * checks of every generated DDL shape live in initial-schema.mssql.spec.ts; this one pins the new
 * table, in particular the filtered unique index that makes `rvk_jti` unique only when set.
 */

interface ColumnAst {
  resource: 'column';
  column: { column: string };
  definition: { dataType: string; length?: number | 'max' };
  nullable?: { type: string };
  auto_increment?: { keyword: string };
}
interface CreateIndexAst {
  type: 'create';
  keyword: 'index';
  index: string;
  index_type: string | null;
  table: { table: string };
  index_columns: Array<{ column: string }>;
  where: {
    type: string;
    operator: string;
    left: { type: string; column: string };
    right: { type: string };
  } | null;
}

describe('RevokedTokens on SQL Server (mssql driver, no server)', () => {
  let sql: GeneratedSql;
  let parsed: ParsedDdl[];

  beforeAll(async () => {
    const ds = mssqlDataSource();
    sql = await generateSql(ds, (qr) => new RevokedTokens1795305600000().up(qr));
    expect(ds.isInitialized).toBe(false);
    parsed = [...sql.up, ...sql.down].map(parseTypeormMssqlDdl);
  });

  it('creates exactly app_revoked_tokens, no table of the initial schema', () => {
    expect(REVOCATION_TABLES.map((t) => t.name)).toEqual(['app_revoked_tokens']);
    expect(sql.up.map((s) => s.trim())).toEqual([
      expect.stringMatching(
        new RegExp(
          '^CREATE TABLE "app_revoked_tokens" \\(' +
            [
              '"rvk_id" int NOT NULL IDENTITY\\(1,1\\)',
              '"rvk_tenant_id" int NOT NULL',
              '"rvk_user_id" int NOT NULL',
              '"rvk_jti" nvarchar\\(64\\)',
              '"rvk_not_before" datetime2\\(3\\)',
              '"rvk_expires_at" datetime2\\(3\\) NOT NULL',
              '"rvk_created_at" datetime2\\(3\\) NOT NULL',
              'CONSTRAINT "PK_[0-9a-f]{27}" PRIMARY KEY \\("rvk_id"\\)',
            ].join(', ') +
            '\\)$',
        ),
      ),
      'CREATE UNIQUE INDEX "UQ_app_revoked_tokens_rvk_jti" ON "app_revoked_tokens" ("rvk_jti") WHERE rvk_jti IS NOT NULL',
      'CREATE INDEX "IDX_app_revoked_tokens_rvk_tenant_id_rvk_user_id" ON "app_revoked_tokens" ("rvk_tenant_id", "rvk_user_id")',
      'CREATE INDEX "IDX_app_revoked_tokens_rvk_expires_at" ON "app_revoked_tokens" ("rvk_expires_at")',
    ]);
  });

  it('has the inverse down statements: the indexes, then the table', () => {
    expect(sql.down.map((s) => s.trim())).toEqual([
      'DROP INDEX "IDX_app_revoked_tokens_rvk_expires_at" ON "app_revoked_tokens"',
      'DROP INDEX "IDX_app_revoked_tokens_rvk_tenant_id_rvk_user_id" ON "app_revoked_tokens"',
      'DROP INDEX "UQ_app_revoked_tokens_rvk_jti" ON "app_revoked_tokens"',
      'DROP TABLE "app_revoked_tokens"',
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

  it('gives every column its declared SQL Server type and nullability (ms timestamps, D4)', () => {
    const create = parsed[0].asts[0] as unknown as { create_definitions: ColumnAst[] };
    const columns = create.create_definitions.filter((d) => d.resource === 'column');
    expect(
      columns.map((c) => [c.column.column, c.definition.dataType, c.definition.length, c.nullable?.type]),
    ).toEqual([
      ['rvk_id', 'INT', undefined, 'not null'],
      ['rvk_tenant_id', 'INT', undefined, 'not null'],
      ['rvk_user_id', 'INT', undefined, 'not null'],
      ['rvk_jti', 'NVARCHAR', 64, undefined],
      ['rvk_not_before', 'DATETIME2', 3, undefined],
      ['rvk_expires_at', 'DATETIME2', 3, 'not null'],
      ['rvk_created_at', 'DATETIME2', 3, 'not null'],
    ]);
    expect(columns.map((c) => c.column.column)).toEqual(REVOKED_TOKENS_TABLE.columns.map((c) => c.name));
    expect(columns[0].auto_increment?.keyword).toBe('identity');
  });

  it('filters the unique jti index to rows with a jti: SQL Server would allow one NULL otherwise', () => {
    const indices = parsed
      .slice(1, sql.up.length)
      .map((p) => p.asts[0] as unknown as CreateIndexAst)
      .map((i) => ({
        name: i.index,
        unique: i.index_type === 'unique',
        columns: i.index_columns.map((c) => c.column),
        where: i.where && {
          operator: i.where.operator,
          column: i.where.left.column,
          right: i.where.right.type,
        },
      }));
    expect(indices).toEqual([
      {
        name: 'UQ_app_revoked_tokens_rvk_jti',
        unique: true,
        columns: ['rvk_jti'],
        where: { operator: 'IS NOT', column: 'rvk_jti', right: 'null' },
      },
      {
        name: 'IDX_app_revoked_tokens_rvk_tenant_id_rvk_user_id',
        unique: false,
        columns: ['rvk_tenant_id', 'rvk_user_id'],
        where: null,
      },
      {
        name: 'IDX_app_revoked_tokens_rvk_expires_at',
        unique: false,
        columns: ['rvk_expires_at'],
        where: null,
      },
    ]);
  });

  it('cannot generate down() offline: dropTable(…, ifExist = true) asks the server first', async () => {
    await expect(
      generateSql(mssqlDataSource(), (qr) => new RevokedTokens1795305600000().down(qr)),
    ).rejects.toThrow(/Driver not Connected/);
  });
});
