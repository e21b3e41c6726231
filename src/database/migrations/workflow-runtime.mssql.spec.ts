import { generateSql, GeneratedSql, mssqlDataSource } from '../mssql-sql';
import { WorkflowRuntime1795478400000 } from './1795478400000-workflow-runtime';
import { assertParsesAsTsql, parseTypeormMssqlDdl } from '../../../test/support/tsql';

/**
 * The WorkflowRuntime migration's SQL for SQL Server (D49), generated offline by TypeORM's real
 * SqlServerQueryRunner on a DataSource that is never connected (the migration passes Table objects,
 * so nothing reads a live schema), and parsed as T-SQL.
 */
const NAMED_DEFAULT = /^ALTER TABLE ("[^"]+") ADD ("[^"]+") (.+?) CONSTRAINT ("[^"]+") DEFAULT (\S+)$/;

describe('WorkflowRuntime on SQL Server (mssql driver, no server)', () => {
  let sql: GeneratedSql;

  beforeAll(async () => {
    const ds = mssqlDataSource();
    sql = await generateSql(ds, (qr) => new WorkflowRuntime1795478400000().up(qr));
    expect(ds.isInitialized).toBe(false);
  });

  it('adds the columns, the indexes and wft_step_keys, in that order', () => {
    expect(sql.up.map((s) => s.trim().replace(/\s+/g, ' ').slice(0, 60))).toMatchSnapshot();
    expect(sql.up[0]).toMatch(/^ALTER TABLE "wft_instances" ADD "wfi_request_id" nvarchar\(100\)/);
    expect(sql.up.join('\n')).toMatch(
      /ALTER TABLE "wft_queue" ADD "wfq_step_seq" int NOT NULL CONSTRAINT "[^"]+" DEFAULT 0/,
    );
    expect(sql.up.join('\n')).toContain(
      'CREATE UNIQUE INDEX "UQ_wft_node_states_wns_instance_id_wns_node_id" ON "wft_node_states" ("wns_instance_id", "wns_node_id")',
    );
    expect(sql.up.some((s) => s.startsWith('CREATE TABLE "wft_step_keys"'))).toBe(true);
  });

  it('parses every statement as T-SQL', () => {
    expect(sql.up.filter((s) => NAMED_DEFAULT.test(s)).map((s) => NAMED_DEFAULT.exec(s)?.[2])).toEqual([
      '"wfi_step_seq"',
      '"wfq_step_seq"',
    ]);
    for (const statement of sql.up) {
      if (statement.startsWith('CREATE')) {
        const parsed = parseTypeormMssqlDdl(statement);
        expect(parsed.asts.length).toBeGreaterThan(0);
        continue;
      }
      // A named DEFAULT in a column definition is valid T-SQL the parser lacks (PARSER_GAPS
      // .namedColumnDefault): parsed as the equivalent ADD column + ADD CONSTRAINT … DEFAULT … FOR.
      const named = NAMED_DEFAULT.exec(statement);
      if (named) {
        const [, table, column, type, constraint, value] = named;
        assertParsesAsTsql(`ALTER TABLE ${table} ADD ${column} ${type}`);
        assertParsesAsTsql(
          `ALTER TABLE ${table} ADD CONSTRAINT ${constraint} DEFAULT ${value} FOR ${column}`,
        );
      } else {
        assertParsesAsTsql(statement);
      }
    }
  });
});
