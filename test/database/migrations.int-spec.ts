import { DataSource } from 'typeorm';
import { TABLES } from '../../src/database/schema';
import { createTestDatabase, migratedDataSource, TestDatabase } from '../support/test-database';

describe('InitialSchema migration', () => {
  let db: TestDatabase;
  let ds: DataSource;

  beforeAll(async () => {
    db = await createTestDatabase('migrations');
    ds = await migratedDataSource(db);
  });

  afterAll(async () => {
    await ds?.destroy();
    await db?.drop();
  });

  it('should create every table with exactly the declared columns', async () => {
    const qr = ds.createQueryRunner();
    try {
      for (const def of TABLES) {
        const table = await qr.getTable(def.name);
        expect(table).toBeDefined();
        expect(table!.columns.map((c) => c.name).sort()).toEqual(def.columns.map((c) => c.name).sort());
      }
    } finally {
      await qr.release();
    }
  });

  it('should refuse a second user with the same e-mail in one tenant, but allow it in another', async () => {
    await ds.query(
      `INSERT INTO app_tenants (tnt_tenant_code, tnt_tenant_name) VALUES ('ua', 'A'), ('ub', 'B')`,
    );
    const ids: Array<{ tnt_id: number }> = await ds.query(
      `SELECT tnt_id FROM app_tenants WHERE tnt_tenant_code IN ('ua', 'ub') ORDER BY tnt_tenant_code`,
    );
    const [a, b] = ids.map((r) => Number(r.tnt_id));
    const insert = (tenant: number) =>
      ds.query(`INSERT INTO app_users (usr_tenant_id, usr_email_id) VALUES (${tenant}, 'same@x.test')`);
    await insert(a);
    await expect(insert(a)).rejects.toThrow();
    await expect(insert(b)).resolves.toBeDefined();
  });

  it('should apply the convention defaults: status 1, is_deleted false', async () => {
    await ds.query(`INSERT INTO app_tenants (tnt_tenant_code, tnt_tenant_name) VALUES ('t1', 'T1')`);
    const rows: Array<Record<string, unknown>> = await ds.query(
      `SELECT tnt_status, tnt_is_deleted FROM app_tenants WHERE tnt_tenant_code = 't1'`,
    );
    expect(Number(rows[0].tnt_status)).toBe(1);
    expect(Boolean(Number(rows[0].tnt_is_deleted))).toBe(false);
  });

  it('should be reversible: down drops every table and up recreates them', async () => {
    await ds.undoLastMigration({ transaction: 'each' });
    const qr = ds.createQueryRunner();
    try {
      for (const def of TABLES) expect(await qr.hasTable(def.name)).toBe(false);
    } finally {
      await qr.release();
    }
    await ds.runMigrations({ transaction: 'each' });
    const again = ds.createQueryRunner();
    try {
      expect(await again.hasTable('app_users')).toBe(true);
    } finally {
      await again.release();
    }
  });
});
