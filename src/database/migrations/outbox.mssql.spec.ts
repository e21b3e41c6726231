import { generateSql, GeneratedSql, mssqlDataSource } from '../mssql-sql';
import { OUTBOX_TABLES } from '../schema';
import { Outbox1795737600000 } from './1795737600000-outbox';
import { mask, parseTypeormMssqlDdl, ParsedDdl } from '../../../test/support/tsql';

interface ColumnAst {
  resource: 'column';
  column: { column: string };
  definition: { dataType: string; length?: number | 'max' };
  nullable?: { type: string };
}

/**
 * The Outbox migration's SQL for SQL Server (D54), generated offline by TypeORM's real
 * SqlServerQueryRunner on a DataSource that is never connected, printed (snapshot) and parsed.
 */
describe('Outbox on SQL Server (mssql driver, no server)', () => {
  let sql: GeneratedSql;
  let parsed: ParsedDdl[];

  beforeAll(async () => {
    const ds = mssqlDataSource();
    sql = await generateSql(ds, (qr) => new Outbox1795737600000().up(qr));
    expect(ds.isInitialized).toBe(false);
    parsed = [...sql.up, ...sql.down].map(parseTypeormMssqlDdl);
  });

  it('creates exactly the outbox and webhook tables with their indexes, and drops them in reverse', () => {
    expect(OUTBOX_TABLES.map((t) => t.name)).toEqual([
      'app_events',
      'app_event_sequences',
      'app_webhooks',
      'app_webhook_deliveries',
    ]);
    expect(sql.up).toMatchSnapshot();
    const creates = sql.up.filter((s) => s.trim().startsWith('CREATE TABLE'));
    expect(creates.map((s) => /CREATE TABLE "(\w+)"/.exec(s)?.[1])).toEqual(OUTBOX_TABLES.map((t) => t.name));
    expect(sql.up).toContain(
      'CREATE UNIQUE INDEX "UQ_app_events_evt_tenant_id_evt_sequence" ON "app_events" ("evt_tenant_id", "evt_sequence") ',
    );
    const drops = sql.down.filter((s) => s.trim().startsWith('DROP TABLE')).map((s) => s.trim());
    expect(drops).toEqual([...OUTBOX_TABLES].reverse().map((t) => `DROP TABLE "${t.name}"`));
  });

  it('parses every statement as T-SQL, with no foreign keys', () => {
    for (const p of parsed) {
      expect(p.asts.length).toBeGreaterThan(0);
      expect(p.foreignKeys).toEqual([]);
      expect(mask(p.original)).not.toMatch(/[`[\]]/);
    }
  });

  it('gives every column its declared SQL Server type (JSON and text as NVARCHAR(MAX))', () => {
    const creates = parsed.filter((p) => p.original.trim().startsWith('CREATE TABLE'));
    creates.forEach((p, i) => {
      const create = p.asts[0] as unknown as { create_definitions: ColumnAst[] };
      const columns = create.create_definitions.filter((d) => d.resource === 'column');
      expect(columns.map((c) => c.column.column)).toEqual(OUTBOX_TABLES[i].columns.map((c) => c.name));
    });
    const events = creates[0].asts[0] as unknown as { create_definitions: ColumnAst[] };
    const byName = new Map(
      events.create_definitions
        .filter((d) => d.resource === 'column')
        .map((c) => [c.column.column, [c.definition.dataType, c.definition.length, c.nullable?.type]]),
    );
    expect(byName.get('evt_sequence')).toEqual(['INT', undefined, 'not null']);
    expect(byName.get('evt_occurred_at')).toEqual(['DATETIME2', 3, 'not null']);
    expect(byName.get('evt_record')).toEqual(['NVARCHAR', 'max', undefined]);
  });
});
