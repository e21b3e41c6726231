import { DataSource } from 'typeorm';
import { parseTsql } from '../../../test/support/tsql';
import { advanceCounter, counterSql } from './counter';
import type { Dialect } from './dialect';

const TABLE = { table: 'app_event_sequences', keyColumn: 'evs_tenant_id', valueColumn: 'evs_last_sequence' };
const DIALECTS: Dialect[] = ['postgres', 'mysql', 'mssql', 'sqlite'];

describe('counterSql: the per-key counter step of each dialect', () => {
  it.each(DIALECTS)('should write the %s statements as reviewed', (dialect) => {
    expect(counterSql(dialect, TABLE, 7, 3)).toMatchSnapshot();
  });

  it('should write SQL Server statements that parse as T-SQL, the add holding the key range', () => {
    const sql = counterSql('mssql', TABLE, 7, 3);
    for (const s of [sql.add, sql.create, sql.read!]) expect(parseTsql(s.sql).length).toBe(1);
    expect(sql.add.sql).toContain('WITH (UPDLOCK, HOLDLOCK)');
    expect(sql.addFirst).toBe(true);
  });

  it('should upsert a key MariaDB has not seen yet (no UPDATE of a missing row, whose gap lock deadlocks)', () => {
    const sql = counterSql('mysql', TABLE, 7, 3);
    expect(sql.addFirst).toBe(false);
    expect(sql.create.sql).toContain('ON DUPLICATE KEY UPDATE');
    expect(sql.create.params).toEqual([7, 3, 3]);
  });
});

describe('advanceCounter on a real SQLite database', () => {
  let ds: DataSource;

  beforeAll(async () => {
    ds = new DataSource({ type: 'better-sqlite3', database: ':memory:' });
    await ds.initialize();
    await ds.query(
      'CREATE TABLE app_event_sequences (evs_id INTEGER PRIMARY KEY AUTOINCREMENT, evs_tenant_id INTEGER NOT NULL UNIQUE, evs_last_sequence INTEGER NOT NULL DEFAULT 0)',
    );
  });

  afterAll(async () => {
    await ds.destroy();
  });

  const step = async (key: number, n: number, known: boolean) => {
    const qr = ds.createQueryRunner();
    await qr.startTransaction();
    try {
      const value = await advanceCounter(qr, TABLE, key, n, known);
      await qr.commitTransaction();
      return value;
    } finally {
      await qr.release();
    }
  };

  it('should create the row on the first step, add on the next, and keep keys apart', async () => {
    expect(await step(1, 1, false)).toBe(1);
    expect(await step(1, 5, true)).toBe(6);
    // Not known to this process (another instance created it): still an add, not a duplicate.
    expect(await step(1, 2, false)).toBe(8);
    expect(await step(2, 1, false)).toBe(1);
    // Known but gone (the database was rebuilt): created again.
    await ds.query('DELETE FROM app_event_sequences WHERE evs_tenant_id = 2');
    expect(await step(2, 4, true)).toBe(4);
    const rows = await ds.query(
      'SELECT evs_tenant_id AS k, evs_last_sequence AS v FROM app_event_sequences ORDER BY 1',
    );
    expect(rows).toEqual([
      { k: 1, v: 8 },
      { k: 2, v: 4 },
    ]);
  });

  it('should leave nothing behind a rolled-back step', async () => {
    const qr = ds.createQueryRunner();
    await qr.startTransaction();
    expect(await advanceCounter(qr, TABLE, 3, 1, false)).toBe(1);
    await qr.rollbackTransaction();
    await qr.release();
    expect(await ds.query('SELECT * FROM app_event_sequences WHERE evs_tenant_id = 3')).toEqual([]);
  });
});
