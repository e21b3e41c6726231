import type { DataSource } from 'typeorm';
import { DatabaseService } from '../../src/database/database.service';
import { authHeaders, signin, TENANT } from '../support/auth';
import { copyEntityConfig, payloadWithRelations } from '../support/entity-fixtures';
import { startTestApp, TestApp } from '../support/test-app';
import { testDialect } from '../support/test-database';

type Json = Record<string, unknown>;

/**
 * Registry objects other than tables (spec §2.5 obj_type_code, D22): a VIEW is read like a table and
 * never written; a FUNCTION is a table-valued function read through the EXECUTE profile mode,
 * served where the database has table-valued functions (PostgreSQL here; SQL Server's SQL is
 * checked offline) and answered 501 where it has none (MariaDB, SQLite). Both stay tenant-scoped.
 */
describe('VIEW and FUNCTION entities (D22)', () => {
  let t: TestApp;
  let ds: DataSource;
  let acme: Record<string, string>;
  let goldIds: { acme: number[]; globex: number[] };

  /** An entity `code` over `source`, with the customers fields and no relations, and its profile. */
  async function register(code: string, type: 'VIEW' | 'FUNCTION', source: string, mode: string) {
    await copyEntityConfig(ds, 'customers', code, {
      registry: {
        obj_type_code: type,
        obj_payload_table: source,
        obj_payload_object_name: source,
        obj_payload: await payloadWithRelations(ds, 'customers', []),
      },
    });
    await ds
      .createQueryBuilder()
      .update('app_object_profiles')
      .set({ prf_mode_code: mode })
      .where('prf_code = :code', { code })
      .execute();
  }

  beforeAll(async () => {
    t = await startTestApp({ label: 'object_types' });
    ds = t.app.get(DatabaseService).dataSource;
    await ds.query(
      `CREATE VIEW demo_gold_customers_v AS SELECT * FROM demo_customers WHERE cus_tier = 'gold'`,
    );
    if (testDialect() === 'postgres') {
      await ds.query(
        `CREATE FUNCTION demo_gold_customers_f() RETURNS SETOF demo_customers LANGUAGE sql STABLE ` +
          `AS $$ SELECT * FROM demo_customers WHERE cus_tier = 'gold' $$`,
      );
    }
    // FULL mode: the object type alone must make the view read-only.
    await register('gold_view', 'VIEW', 'demo_gold_customers_v', 'FULL');
    await register('gold_fn', 'FUNCTION', 'demo_gold_customers_f', 'EXECUTE');
    const ids = async (tenant: number) =>
      (
        await ds
          .createQueryBuilder()
          .select('c.cus_id', 'id')
          .from('demo_customers', 'c')
          .where("c.cus_tenant_id = :tenant AND c.cus_tier = 'gold'", { tenant })
          .orderBy('c.cus_id')
          .getRawMany<{ id: unknown }>()
      ).map((r) => Number(r.id));
    goldIds = { acme: await ids(1), globex: await ids(2) };
    acme = authHeaders(TENANT.acme, (await signin(t.app, TENANT.acme, 'admin@acme.test')).token);
  });

  afterAll(async () => {
    await t?.close();
  });

  const get = (url: string) => t.app.inject({ method: 'GET', url, headers: acme });
  const writes = (code: string, id: number) => [
    t.app.inject({
      method: 'POST',
      url: `/api/v1/${code}`,
      headers: acme,
      payload: { name: 'x', email: 'x@x.example' },
    }),
    t.app.inject({
      method: 'PUT',
      url: `/api/v1/${code}/${id}`,
      headers: acme,
      payload: { name: 'x', lastModified: new Date().toISOString() },
    }),
    t.app.inject({ method: 'DELETE', url: `/api/v1/${code}/${id}`, headers: acme }),
  ];

  it('should read a VIEW like a table: the caller’s rows only, by list and by id', async () => {
    expect(goldIds.acme.length).toBeGreaterThan(0);
    const list = await get('/api/v1/gold_view?limit=500&sortBy=id');
    expect(list.statusCode).toBe(200);
    const records = list.json().data.records as Json[];
    expect(records.map((r) => r.id)).toEqual(goldIds.acme);
    expect(records.every((r) => r.tier === 'gold')).toBe(true);
    expect((await get(`/api/v1/gold_view/${goldIds.acme[0]}`)).statusCode).toBe(200);
    expect((await get(`/api/v1/gold_view/${goldIds.globex[0]}`)).statusCode).toBe(404);
  });

  it('should refuse every write to a VIEW with 403, even under a FULL profile, changing nothing', async () => {
    const before = await ds.query('SELECT COUNT(*) AS n FROM demo_customers');
    const answers = await Promise.all(writes('gold_view', goldIds.acme[0]));
    expect(answers.map((a) => a.statusCode)).toEqual([403, 403, 403]);
    expect(await ds.query('SELECT COUNT(*) AS n FROM demo_customers')).toEqual(before);
  });

  it('should read a FUNCTION through EXECUTE where the database has table-valued functions, else 501', async () => {
    const list = await get('/api/v1/gold_fn?limit=500&sortBy=id');
    if (testDialect() === 'postgres') {
      expect(list.statusCode).toBe(200);
      expect((list.json().data.records as Json[]).map((r) => r.id)).toEqual(goldIds.acme);
      expect((await get(`/api/v1/gold_fn/${goldIds.globex[0]}`)).statusCode).toBe(404);
    } else {
      expect(list.statusCode).toBe(501);
      expect(list.json().error.code).toBe('NOT_IMPLEMENTED');
    }
  });

  it('should not cascade a delete into a VIEW: 409, nothing changed', async () => {
    // A table entity whose registry names gold_view as an onDelete: cascade dependent.
    await copyEntityConfig(ds, 'customers', 'vip_customers', {
      registry: {
        obj_payload: await payloadWithRelations(ds, 'customers', [
          { entity: 'gold_view', foreignKey: 'id', onDelete: 'cascade' },
        ]),
      },
    });
    const id = goldIds.acme[1];
    const before = await ds.query(`SELECT cus_is_deleted AS d FROM demo_customers WHERE cus_id = ${id}`);
    const res = await t.app.inject({ method: 'DELETE', url: `/api/v1/vip_customers/${id}`, headers: acme });
    expect(res.statusCode).toBe(409);
    expect(res.json().error.details.dependentEntities).toEqual([{ entity: 'gold_view', count: 1 }]);
    expect(await ds.query(`SELECT cus_is_deleted AS d FROM demo_customers WHERE cus_id = ${id}`)).toEqual(
      before,
    );
  });

  it('should refuse every write to a FUNCTION with 403', async () => {
    const answers = await Promise.all(writes('gold_fn', goldIds.acme[0]));
    expect(answers.map((a) => a.statusCode)).toEqual([403, 403, 403]);
  });
});
