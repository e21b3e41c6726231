import { Table } from 'typeorm';
import { generateSql, mssqlDatabaseConfig, mssqlDataSource } from './mssql-sql';
import { parseTsql, rawParseTsql } from '../../test/support/tsql';

describe('mssqlDataSource', () => {
  it('builds the application mssql DataSource on the real mssql driver without connecting', () => {
    const ds = mssqlDataSource({ DB_HOST: 'sql.example.test' });
    expect(ds.isInitialized).toBe(false);
    expect(ds.options).toMatchObject({
      type: 'mssql',
      host: 'sql.example.test',
      port: 1433,
      username: 'sa',
      database: 'mtb',
    });
    expect((ds.driver as unknown as { mssql: unknown }).mssql).toBe(jest.requireActual('mssql'));
  });

  it('takes the DB_* variables through the real config loader', () => {
    expect(mssqlDatabaseConfig({ DB_PORT: '14330', DB_TRUST_SERVER_CERTIFICATE: 'true' })).toMatchObject({
      type: 'mssql',
      port: 14330,
      mssql: { encrypt: true, trustServerCertificate: true },
    });
    expect(() => mssqlDatabaseConfig({ DB_PORT: 'x' })).toThrow(/DB_PORT/);
  });
});

describe('generateSql', () => {
  it('records DDL without running it', async () => {
    const table = new Table({
      name: 't',
      columns: [{ name: 'a', type: 'int' }],
      indices: [{ name: 'IDX_t_a', columnNames: ['a'] }],
    });
    const { up, down } = await generateSql(mssqlDataSource(), (qr) => qr.createTable(table));
    expect(up.map((s) => s.trim())).toEqual([
      'CREATE TABLE "t" ("a" int NOT NULL)',
      'CREATE INDEX "IDX_t_a" ON "t" ("a")',
    ]);
    expect(down.map((s) => s.trim())).toEqual(['DROP INDEX "IDX_t_a" ON "t"', 'DROP TABLE "t"']);
  });

  it('fails loudly when the work needs the server', async () => {
    await expect(
      generateSql(mssqlDataSource(), (qr) => qr.hasTable('app_users').then(() => undefined)),
    ).rejects.toThrow(/needs a live database \(Driver not Connected\)/);
  });
});

describe('query builder SQL on mssql', () => {
  it('paginates a tenant-scoped select with OFFSET … FETCH NEXT and binds the tenant as @0', () => {
    const ds = mssqlDataSource();
    const tenantId = 42;
    const [sql, parameters] = ds
      .createQueryBuilder()
      .select(['c.cus_id', 'c.cus_name'])
      .from('demo_customers', 'c')
      .where('c.cus_tenant_id = :tenantId', { tenantId })
      .andWhere('c.cus_is_deleted = :deleted', { deleted: 0 })
      .orderBy('c.cus_name', 'ASC')
      .offset(10)
      .limit(5)
      .getQueryAndParameters();

    expect(sql).toMatch(/ ORDER BY c\.cus_name ASC OFFSET 10 ROWS FETCH NEXT 5 ROWS ONLY$/);
    expect(sql).toContain('WHERE c.cus_tenant_id = @0 AND c.cus_is_deleted = @1');
    expect(parameters).toEqual([tenantId, 0]);

    const [ast] = parseTsql(sql) as unknown as Array<{
      type: string;
      from: Array<{ table: string; as: string }>;
      where: {
        operator: string;
        left: { operator: string; left: { table: string; column: string }; right: { column: string } };
      };
      orderby: unknown[];
      limit: { offset: { value: { value: number } }; fetch: { value: { value: number } } };
    }>;
    expect(ast.type).toBe('select');
    expect(ast.from).toMatchObject([{ table: 'demo_customers', as: 'c' }]);
    expect(ast.where.operator).toBe('AND');
    expect(ast.where.left).toMatchObject({
      operator: '=',
      left: { table: 'c', column: 'cus_tenant_id' },
      right: { column: '@0' },
    });
    expect(ast.orderby).toHaveLength(1);
    expect(ast.limit.offset.value.value).toBe(10);
    expect(ast.limit.fetch.value.value).toBe(5);
  });
});

describe('T-SQL parse helper (test/support/tsql.ts)', () => {
  it.each([
    ['LIMIT', 'SELECT a FROM t ORDER BY a LIMIT 5'],
    ['backticks', 'SELECT a FROM `t`'],
    ['TRUE literal', 'SELECT a FROM t WHERE b = true'],
    ['$1 placeholder', 'SELECT a FROM t WHERE b = $1'],
    [':name placeholder', 'SELECT a FROM t WHERE b = :tenantId'],
    [':: cast', 'SELECT a::int FROM t'],
    ['TOP with OFFSET', 'SELECT TOP 5 a FROM t ORDER BY a OFFSET 1 ROWS FETCH NEXT 5 ROWS ONLY'],
    ['LONGTEXT', 'CREATE TABLE t (a longtext)'],
    ['TINYINT(1)', 'CREATE TABLE t (a tinyint(1))'],
    ['NVARCHAR(5000)', 'CREATE TABLE t (a nvarchar(5000))'],
    ['TIMESTAMP', 'CREATE TABLE t (a timestamp)'],
  ])('rejects %s, which node-sql-parser accepts but SQL Server does not', (_name, sql) => {
    expect(() => rawParseTsql(sql)).not.toThrow();
    expect(() => parseTsql(sql)).toThrow(/not valid T-SQL/);
  });

  it('ignores those characters inside strings, delimited identifiers and comments', () => {
    expect(() => parseTsql(`SELECT "a::b" FROM [t$1] WHERE c = N'x \`y\` $1' -- LIMIT \``)).not.toThrow();
  });
});
