import { DataSource } from 'typeorm';
import { loadConfig } from '../../config/config.schema';
import { createDataSource, dataSourceOptions } from '../data-source.factory';
import { integersBound } from './sqlite-binding';

const config = () =>
  loadConfig({
    NODE_ENV: 'test',
    DB_TYPE: 'sqlite',
    DB_NAME: ':memory:',
    JWT_SECRET: 'sqlite-binding-spec-jwt-secret-0123456789abcdef',
    TENANT_ENCRYPTION_KEY: '0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef',
  }).db;

/**
 * SQLite: safe integers bound (BigInt, SQLite INTEGER) instead of written into the statement by
 * TypeORM — checked against TypeORM's own inlining on a real in-memory database: the same rows
 * stored, the same rows found, one statement text for every value.
 */
describe('SQLite integer binding', () => {
  let bound: DataSource;
  let inline: DataSource;

  beforeAll(async () => {
    bound = await createDataSource(config()).initialize();
    inline = await new DataSource(dataSourceOptions(config())).initialize();
    for (const ds of [bound, inline])
      await ds.query('CREATE TABLE t (id INTEGER PRIMARY KEY, txt TEXT, n INTEGER, x)');
  });

  afterAll(async () => {
    await bound?.destroy();
    await inline?.destroy();
  });

  const insert = (ds: DataSource, row: Record<string, unknown>) =>
    ds.createQueryBuilder().insert().into('t', Object.keys(row)).values(row).execute();
  const rows = (ds: DataSource) =>
    ds.query<unknown[]>(
      'SELECT id, txt, typeof(txt) AS tt, n, typeof(n) AS tn, x, typeof(x) AS tx FROM t ORDER BY id',
    );

  it('should store and find exactly what TypeORM inlining stores and finds', async () => {
    const values = [
      { id: 1, txt: 5, n: 5, x: 5 },
      { id: 2, txt: 2.5, n: 7, x: 2.5 },
      { id: 3, txt: 'text', n: -3, x: 2 ** 53 - 1 },
      { id: 4, txt: 10, n: 0, x: true },
    ];
    for (const ds of [bound, inline]) for (const v of values) await insert(ds, v);
    expect(await rows(bound)).toEqual(await rows(inline));
    expect((await rows(bound))[0]).toMatchObject({
      txt: '5',
      tt: 'text',
      n: 5,
      tn: 'integer',
      tx: 'integer',
    });
    const find = (ds: DataSource) =>
      ds
        .createQueryBuilder()
        .select('t.id', 'id')
        .from('t', 't')
        .where('t.txt = :txt OR t.n IN (:...ns) OR t.x = :x', { txt: 10, ns: [7, -3], x: 2.5 })
        .orderBy('t.id')
        .getRawMany();
    expect(await find(bound)).toEqual(await find(inline));
    expect((await find(bound)).map((r: { id: number }) => r.id)).toEqual([2, 3, 4]);
  });

  it('should write one statement text whatever the integer', () => {
    const sql = (ds: DataSource, id: number) =>
      ds
        .createQueryBuilder()
        .select('t.id')
        .from('t', 't')
        .where('t.id = :id', { id })
        .getQueryAndParameters();
    const [a, pa] = sql(bound, 1);
    const [b, pb] = sql(bound, 2);
    expect(a).toBe(b);
    expect(a).toMatch(/"?t"?\.id = \?$/);
    expect([pa, pb]).toEqual([[1n], [2n]]);
    // TypeORM alone writes the number into the text.
    expect(sql(inline, 1)[0]).toMatch(/= 1$/);
  });

  it('should leave every other parameter as it is', () => {
    const date = new Date(0);
    const params = { a: 1, b: 1.5, c: 'x', d: [1, 2], e: ['a'], f: date, g: 2 ** 53, h: null };
    expect(integersBound(params)).toEqual({
      a: 1n,
      b: 1.5,
      c: 'x',
      d: [1n, 2n],
      e: ['a'],
      f: date,
      g: 2 ** 53,
      h: null,
    });
    const untouched = { c: 'x', e: ['a'] };
    expect(integersBound(untouched)).toBe(untouched);
  });
});
