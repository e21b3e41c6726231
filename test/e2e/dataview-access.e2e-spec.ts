import type { DataSource } from 'typeorm';
import { hashPassword } from '../../src/common/crypto/password';
import { CacheService } from '../../src/cache/cache.service';
import { DatabaseService } from '../../src/database/database.service';
import { DEMO_DATAVIEWS } from '../../src/database/seed/demo-data';
import { authHeaders, DEMO_PASSWORD, signin, TENANT } from '../support/auth';
import { copyEntityConfig } from '../support/entity-fixtures';
import { startTestApp, TestApp } from '../support/test-app';

type Rec = Record<string, any>;

async function insertDataview(
  ds: DataSource,
  tenantId: number | null,
  code: string,
  source: string,
  config: Rec,
) {
  await ds
    .createQueryBuilder()
    .insert()
    .into('app_dataview_configs')
    .values({
      dvc_tenant_id: tenantId,
      dvc_code: code,
      dvc_description: `${code} of tenant ${tenantId ?? 'system'}`,
      dvc_source_entity: source,
      dvc_config: JSON.stringify(config),
      dvc_is_default: false,
      dvc_status: 1,
      dvc_is_deleted: 0,
    })
    .execute();
}

/** A user of acme with a role of its own holding `permissions`; its token. */
async function userWith(t: TestApp, ds: DataSource, code: string, permissions: string[]): Promise<string> {
  await ds
    .createQueryBuilder()
    .insert()
    .into('app_roles')
    .values({
      rol_tenant_id: 1,
      rol_code: code,
      rol_permissions: JSON.stringify(permissions),
      rol_status: 1,
      rol_is_deleted: 0,
    })
    .execute();
  const role = await ds
    .createQueryBuilder()
    .select('r.rol_id', 'id')
    .from('app_roles', 'r')
    .where('r.rol_tenant_id = 1 AND r.rol_code = :code', { code })
    .getRawOne<{ id: unknown }>();
  const email = `${code.toLowerCase()}@acme.test`;
  await ds
    .createQueryBuilder()
    .insert()
    .into('app_users')
    .values({
      usr_tenant_id: 1,
      usr_email_id: email,
      usr_role_id: Number(role?.id),
      usr_password_hash: await hashPassword(DEMO_PASSWORD),
      usr_status: 1,
      usr_is_deleted: 0,
    })
    .execute();
  return (await signin(t.app, TENANT.acme, email)).token;
}

/**
 * Who may read a dataview (D9, D10, D22, D47): the role's read:dataview, the tenant feature
 * `dataviews`, and read on the source entity through canPerform; and tenant isolation — a dataview
 * row of another tenant is never used, and data is always the caller's tenant's.
 */
describe('Dataview access and tenant isolation', () => {
  let t: TestApp;
  let ds: DataSource;
  const token: Record<string, string> = {};

  const get = (url: string, who: string, tenant: string = TENANT.acme) =>
    t.app.inject({
      method: 'GET',
      url: `/api/v1/dataviews/${url}`,
      headers: authHeaders(tenant, token[who]),
    });
  const status = async (url: string, who: string, tenant: string = TENANT.acme) => {
    const res = await get(url, who, tenant);
    const code: string = res.statusCode >= 400 ? res.json().error.code : 'OK';
    return [res.statusCode, code];
  };

  beforeAll(async () => {
    t = await startTestApp({ label: 'dataview-access' });
    ds = t.app.get(DatabaseService).dataSource;
    token.admin = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
    token.viewer = (await signin(t.app, TENANT.acme, 'viewer@acme.test')).token;
    token.globex = (await signin(t.app, TENANT.globex, 'admin@globex.test')).token;
    token.noDataview = await userWith(t, ds, 'ENTITY_READER', ['read:entity']);
    token.noEntity = await userWith(t, ds, 'GRID_ONLY', ['read:dataview']);
    token.ordersOnly = await userWith(t, ds, 'ORDERS_GRID', ['read:dataview', 'read:orders']);
  });

  afterAll(async () => {
    await t?.close();
  });

  describe('permissions and features', () => {
    it('should let a VIEWER read configuration and data', async () => {
      expect(await status('customers_grid/config', 'viewer')).toEqual([200, 'OK']);
      const res = await get('customers_grid/data', 'viewer');
      expect(res.statusCode).toBe(200);
      expect(res.json().pagination.total).toBe(50);
      expect(res.json().data[0].phone).toBeUndefined();
    });

    it('should answer 403 to a role without read:dataview', async () => {
      expect(await status('customers_grid/config', 'noDataview')).toEqual([403, 'FORBIDDEN']);
      expect(await status('customers_grid/data', 'noDataview')).toEqual([403, 'FORBIDDEN']);
    });

    it('should need read on the source entity for the data (canPerform)', async () => {
      expect(await status('customers_grid/config', 'noEntity')).toEqual([200, 'OK']);
      expect(await status('customers_grid/data', 'noEntity')).toEqual([403, 'FORBIDDEN']);
      expect(await status('customers_grid/data', 'ordersOnly')).toEqual([403, 'FORBIDDEN']);
      expect(await status('orders_grid/data', 'ordersOnly')).toEqual([200, 'OK']);
    });

    it('should answer 403 when the source profile does not allow read', async () => {
      await copyEntityConfig(ds, 'customers', 'sealed_customers', {
        profile: {
          prf_mode_code: 'FULL',
          prf_policy: JSON.stringify({ tenantPolicy: { mode: 'STRICT' }, permissions: { read: false } }),
        },
      });
      await insertDataview(ds, 1, 'sealed_grid', 'sealed_customers', { columns: [{ fieldCode: 'name' }] });
      expect(await status('sealed_grid/data', 'admin')).toEqual([403, 'FORBIDDEN']);
    });

    it('should answer 404 when the source entity does not exist', async () => {
      await insertDataview(ds, 1, 'orphan_grid', 'no_such_entity', { columns: [{ fieldCode: 'name' }] });
      expect(await status('orphan_grid/config', 'admin')).toEqual([200, 'OK']);
      expect(await status('orphan_grid/data', 'admin')).toEqual([404, 'NOT_FOUND']);
    });

    it('should answer 403 FEATURE_DISABLED when the tenant’s dataviews feature is off (D10)', async () => {
      const cache = t.app.get(CacheService);
      const setFeatures = async (features: Rec) => {
        await ds
          .createQueryBuilder()
          .update('app_tenants')
          .set({ tnt_features: JSON.stringify(features) })
          .where('tnt_id = :id', { id: Number(TENANT.globex) })
          .execute();
        await cache.delete([cache.keys.tenant(TENANT.globex)]);
      };
      await setFeatures({ export: false, dataviews: false });
      try {
        expect(await status('customers_grid/config', 'globex', TENANT.globex)).toEqual([
          403,
          'FEATURE_DISABLED',
        ]);
        expect(await status('customers_grid/data', 'globex', TENANT.globex)).toEqual([
          403,
          'FEATURE_DISABLED',
        ]);
        expect(await status('customers_grid/data', 'admin')).toEqual([200, 'OK']);
      } finally {
        await setFeatures({ export: false });
      }
      expect(await status('customers_grid/data', 'globex', TENANT.globex)).toEqual([200, 'OK']);
    });

    it('should answer 401 without a token', async () => {
      const res = await t.app.inject({
        method: 'GET',
        url: '/api/v1/dataviews/customers_grid/data',
        headers: { 'x-tenant-id': authHeaders(TENANT.acme, '')['x-tenant-id'] },
      });
      expect([res.statusCode, res.json().error.code]).toEqual([401, 'UNAUTHORIZED']);
    });
  });

  describe('tenant isolation', () => {
    beforeAll(async () => {
      const customersGrid = DEMO_DATAVIEWS.find((d) => d.code === 'customers_grid')!.config;
      // acme's own dataview, and globex's own version of customers_grid (pageSize 5, name only).
      await insertDataview(ds, 1, 'acme_private', 'customers', customersGrid);
      await insertDataview(ds, 2, 'customers_grid', 'customers', {
        ...customersGrid,
        display: { pageSize: 5 },
        columns: [{ fieldCode: 'name', isFilterable: true }],
      });
      await insertDataview(ds, 2, 'globex_private', 'orders', { columns: [{ fieldCode: 'amount' }] });
      // globex's code lookup of customers_grid (cached for up to 5 minutes) names the system row.
      const cache = t.app.get(CacheService);
      await cache.deletePattern(`${cache.keys.prefix}:dataview-code:*`);
    });

    it('should never use another tenant’s dataview row: 404 for config and data', async () => {
      expect(await status('acme_private/config', 'globex', TENANT.globex)).toEqual([404, 'NOT_FOUND']);
      expect(await status('acme_private/data', 'globex', TENANT.globex)).toEqual([404, 'NOT_FOUND']);
      expect(await status('globex_private/config', 'admin')).toEqual([404, 'NOT_FOUND']);
      expect(await status('globex_private/data', 'admin')).toEqual([404, 'NOT_FOUND']);
      expect(await status('acme_private/data', 'admin')).toEqual([200, 'OK']);
    });

    it('should serve each tenant its own row over the system row, never the other’s', async () => {
      const acme = (await get('customers_grid/config', 'admin')).json().data;
      const globex = (await get('customers_grid/config', 'globex', TENANT.globex)).json().data;
      expect(acme.config).toEqual(DEMO_DATAVIEWS.find((d) => d.code === 'customers_grid')!.config);
      expect(globex.config.display).toEqual({ pageSize: 5 });
      const acmeData = (await get('customers_grid/data', 'admin')).json();
      expect(acmeData.pagination).toEqual({ page: 0, pageSize: 25, total: 50 });
      const globexData = (await get('customers_grid/data', 'globex', TENANT.globex)).json();
      expect(globexData.pagination).toEqual({ page: 0, pageSize: 5, total: 30 });
      expect(Object.keys(globexData.data[0])).toEqual(['id', 'name', 'lastModified']);
    });

    it('should read only the caller tenant’s rows through a system dataview', async () => {
      const body = (await get('acme_private/data?pageSize=500', 'admin')).json();
      expect(body.data.every((r: Rec) => String(r.email).endsWith('@acme.example'))).toBe(true);
      const globex = (await get('orders_grid/data?pageSize=500', 'globex', TENANT.globex)).json();
      const [db] = await ds.query(
        "SELECT COUNT(*) AS n, SUM(ord_amount) AS s FROM demo_orders WHERE ord_tenant_id = 2 AND (ord_is_deleted IS NULL OR NOT ord_is_deleted) AND (ord_order_status <> 'cancelled' OR ord_order_status IS NULL)",
      );
      expect(globex.data).toHaveLength(Number(db.n));
      expect(globex.aggregates.amount).toBeCloseTo(Number(db.s), 2);
      const acmeIds = new Set(
        (await ds.query<Rec[]>('SELECT ord_id AS id FROM demo_orders WHERE ord_tenant_id = 1')).map((r) =>
          Number(r.id),
        ),
      );
      expect(globex.data.filter((r: Rec) => acmeIds.has(r.id))).toEqual([]);
      // Filters and groups cannot reach across either: acme's ids find nothing for globex.
      const probe = [{ fieldCode: 'id', operator: 'in', value: [...acmeIds].slice(0, 100) }];
      const filtered = await get(
        `orders_grid/data?pageSize=500&filters=${encodeURIComponent(JSON.stringify(probe))}`,
        'globex',
        TENANT.globex,
      );
      expect([filtered.statusCode, filtered.json().data]).toEqual([200, []]);
      await insertDataview(ds, 2, 'globex_status', 'orders', {
        columns: [{ fieldCode: 'status' }, { fieldCode: 'amount', aggregateFunction: 'count' }],
        grouping: { groupableColumns: ['status'] },
      });
      const groups = (await get('globex_status/data?groupBy=status', 'globex', TENANT.globex)).json();
      expect(groups.data.reduce((n: number, g: Rec) => n + Number(g.count), 0)).toBe(60);
      expect(groups.aggregates).toEqual({ amount: 60 });
    });
  });
});
