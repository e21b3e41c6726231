import { DataSource } from 'typeorm';
import { loadConfig } from '../../config/config.schema';
import { createDataSource } from '../data-source.factory';
import { readCommitted, readMark } from './sqlite-transactions';

const config = () =>
  loadConfig({
    NODE_ENV: 'test',
    DB_TYPE: 'sqlite',
    DB_NAME: ':memory:',
    JWT_SECRET: 'sqlite-transactions-spec-jwt-secret-0123456789abcdef',
    TENANT_ENCRYPTION_KEY: '0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef',
  }).db;

/** Whether a read on the one shared SQLite connection saw committed rows only (a real database). */
describe('SQLite read marks', () => {
  let ds: DataSource;

  beforeAll(async () => {
    ds = await createDataSource(config()).initialize();
    await ds.query('CREATE TABLE t (id INTEGER PRIMARY KEY)');
  });

  afterAll(async () => {
    await ds?.destroy();
  });

  it('should pass a read with no transaction open before, during or after it', async () => {
    const mark = readMark(ds);
    await ds.query('SELECT COUNT(*) FROM t');
    expect(readCommitted(ds, mark)).toBe(true);
  });

  it('should fail a read begun while a transaction is open, even once it has ended', async () => {
    const qr = ds.createQueryRunner();
    await qr.startTransaction();
    await qr.query('INSERT INTO t (id) VALUES (1)');
    const mark = readMark(ds);
    await ds.query('SELECT COUNT(*) FROM t');
    await qr.rollbackTransaction();
    expect(readCommitted(ds, mark)).toBe(false);
  });

  it('should fail a read during which a transaction began and rolled back', async () => {
    const mark = readMark(ds);
    const qr = ds.createQueryRunner();
    await qr.startTransaction();
    await qr.query('INSERT INTO t (id) VALUES (2)');
    await ds.query('SELECT COUNT(*) FROM t');
    await qr.rollbackTransaction();
    expect(readCommitted(ds, mark)).toBe(false);
  });

  it('should fail a read that ends while a transaction is open', async () => {
    const mark = readMark(ds);
    const qr = ds.createQueryRunner();
    await qr.startTransaction();
    expect(readCommitted(ds, mark)).toBe(false);
    await qr.rollbackTransaction();
  });

  it('should always pass on a data source it does not track', () => {
    const other = { options: { type: 'postgres' } } as unknown as DataSource;
    expect(readCommitted(other, readMark(other))).toBe(true);
  });
});
