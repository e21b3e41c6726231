import * as argon2 from 'argon2';
import { DataSource } from 'typeorm';
import { seedDemo } from '../../src/database/seed/demo-seed';
import { createTestDatabase, migratedDataSource, TestDatabase } from '../support/test-database';

type Raw = Record<string, unknown>;

const PASSWORD = 'Seed-Test-Passw0rd!';

describe('seedDemo', () => {
  let db: TestDatabase;
  let ds: DataSource;
  let firstRun: Record<string, number>;
  const messages: string[] = [];

  const rows = (sql: string): Promise<Raw[]> => ds.query(sql);
  const count = async (table: string, where = '1 = 1'): Promise<number> =>
    Number((await rows(`SELECT COUNT(*) AS n FROM ${table} WHERE ${where}`))[0].n);

  beforeAll(async () => {
    db = await createTestDatabase('demo_seed');
    ds = await migratedDataSource(db);
    firstRun = (await seedDemo(ds, { password: PASSWORD, log: (m) => messages.push(m) })).inserted;
  });

  afterAll(async () => {
    await ds?.destroy();
    await db?.drop();
  });

  it('should create the tenants with the ids, codes and statuses of docs/demo-data.md', async () => {
    const tenants = await rows(
      'SELECT tnt_id, tnt_tenant_code, tnt_status, tnt_features, tnt_add_dtls FROM app_tenants ORDER BY tnt_id',
    );
    expect(tenants.map((t) => [Number(t.tnt_id), t.tnt_tenant_code, Number(t.tnt_status)])).toEqual([
      [1, 'acme', 1],
      [2, 'globex', 1],
      [3, 'initech', 0],
    ]);
    const acmeBranding = JSON.parse(String(tenants[0].tnt_add_dtls));
    expect(acmeBranding).toMatchObject({ settings: { locale: 'en-US' } });
    expect(Object.keys(acmeBranding.colors).sort()).toEqual(['background', 'primary', 'secondary']);
    expect(typeof acmeBranding.logo_url).toBe('string');
    expect(JSON.parse(String(tenants[1].tnt_features))).toEqual({ export: false });
    expect(tenants[2].tnt_add_dtls).toBeNull();
  });

  it('should create the roles per tenant with their permissions', async () => {
    const roles = await rows(
      'SELECT rol_id, rol_tenant_id, rol_code, rol_permissions FROM app_roles ORDER BY rol_id',
    );
    expect(roles.map((r) => [Number(r.rol_id), Number(r.rol_tenant_id), r.rol_code])).toEqual([
      [1, 1, 'ADMIN'],
      [2, 1, 'VIEWER'],
      [3, 1, 'SYSTEM_ADMIN'],
      [4, 2, 'ADMIN'],
      [5, 2, 'VIEWER'],
      [6, 3, 'ADMIN'],
    ]);
    const permissions = roles.map((r) => JSON.parse(String(r.rol_permissions)) as string[]);
    expect(permissions[0]).toEqual(['*:*']);
    expect(permissions[1]).toEqual(['read:entity', 'read:dataview', 'export:dataview', 'read:workflow']);
    expect(permissions[2]).toEqual(['admin:system', '*:*']);
  });

  it('should create the users with their tenant and role, and a password that verifies with argon2', async () => {
    const users = await rows(
      'SELECT usr_id, usr_tenant_id, usr_email_id, usr_role_id, usr_password_hash FROM app_users ORDER BY usr_id',
    );
    expect(
      users.map((u) => [Number(u.usr_id), Number(u.usr_tenant_id), u.usr_email_id, Number(u.usr_role_id)]),
    ).toEqual([
      [1, 1, 'admin@acme.test', 1],
      [2, 1, 'viewer@acme.test', 2],
      [3, 1, 'root@acme.test', 3],
      [4, 2, 'admin@globex.test', 4],
      [5, 3, 'staff@initech.test', 6],
    ]);
    // One hash, computed once, shared by every demo user.
    const hashes = new Set(users.map((u) => String(u.usr_password_hash)));
    expect(hashes.size).toBe(1);
    const [hash] = [...hashes];
    expect(hash.startsWith('$argon2id$')).toBe(true);
    await expect(argon2.verify(hash, PASSWORD)).resolves.toBe(true);
    await expect(argon2.verify(hash, 'wrong')).resolves.toBe(false);
  });

  it('should create 50 customers and 120 orders for acme, 30 and 60 for globex, none for initech', async () => {
    expect(await count('demo_customers', 'cus_tenant_id = 1')).toBe(50);
    expect(await count('demo_orders', 'ord_tenant_id = 1')).toBe(120);
    expect(await count('demo_customers', 'cus_tenant_id = 2')).toBe(30);
    expect(await count('demo_orders', 'ord_tenant_id = 2')).toBe(60);
    expect(await count('demo_customers', 'cus_tenant_id = 3')).toBe(0);
    expect(firstRun).toMatchObject({
      app_tenants: 3,
      app_roles: 6,
      app_users: 5,
      demo_customers: 80,
      demo_orders: 180,
    });
    expect(messages).toContain('demo_orders: 180 inserted');
  });

  it.each([
    ['acme', 1, 50, 120],
    ['globex', 2, 30, 60],
  ])(
    'should number the customers of %s by e-mail, tier them b s b s g and give order N to customer ((N-1) mod C)+1',
    async (code, tenant, customerCount, orderCount) => {
      const customers = await rows(
        `SELECT cus_id, cus_email, cus_tier, cus_name FROM demo_customers WHERE cus_tenant_id = ${tenant} ORDER BY cus_id`,
      );
      expect(customers.map((c) => c.cus_email)).toEqual(
        Array.from({ length: customerCount }, (_, i) => `customer${i + 1}@${code}.example`),
      );
      const pattern = ['bronze', 'silver', 'bronze', 'silver', 'gold'];
      expect(customers.map((c) => c.cus_tier)).toEqual(customers.map((_, i) => pattern[i % 5]));
      expect(new Set(customers.map((c) => c.cus_name)).size).toBe(customerCount);

      const customerIdOfNumber = customers.map((c) => Number(c.cus_id));
      const orders = await rows(
        `SELECT ord_customer_id, ord_amount, ord_order_status FROM demo_orders WHERE ord_tenant_id = ${tenant} ORDER BY ord_id`,
      );
      expect(orders).toHaveLength(orderCount);
      orders.forEach((o, i) => {
        expect(Number(o.ord_customer_id)).toBe(customerIdOfNumber[i % customerCount]);
        expect(Number(o.ord_amount)).toBeGreaterThan(0);
        expect(['new', 'paid', 'shipped', 'cancelled']).toContain(o.ord_order_status);
      });
    },
  );

  it('should create the system-wide registry, profiles, dataviews, workflows, navigation and value sets', async () => {
    const registry = await rows(
      'SELECT obj_code, obj_tenant_id, obj_payload, obj_payload_table FROM app_object_registries ORDER BY obj_id',
    );
    expect(registry.map((r) => [r.obj_code, r.obj_tenant_id, r.obj_payload_table])).toEqual([
      ['customers', null, 'demo_customers'],
      ['orders', null, 'demo_orders'],
      ['users', null, 'app_users'],
      ['roles', null, 'app_roles'],
    ]);
    const orders = JSON.parse(String(registry[1].obj_payload));
    expect(orders.fields).toContainEqual({
      name: 'status',
      column: 'ord_order_status',
      type: 'select',
      valueSet: 'order_status',
    });

    const profiles = await rows(
      'SELECT prf_code, prf_mode_code, prf_policy FROM app_object_profiles ORDER BY prf_id',
    );
    expect(profiles.map((p) => [p.prf_code, p.prf_mode_code])).toEqual([
      ['customers', 'FULL'],
      ['orders', 'FULL'],
      ['users', 'FULL'],
      ['roles', 'READ'],
    ]);
    expect(JSON.parse(String(profiles[2].prf_policy)).projection.excludeFields).toEqual(['password_hash']);

    const dataviews = await rows(
      'SELECT dvc_code, dvc_is_default, dvc_tenant_id FROM app_dataview_configs ORDER BY dvc_id',
    );
    expect(dataviews.map((d) => [d.dvc_code, Boolean(Number(d.dvc_is_default)), d.dvc_tenant_id])).toEqual([
      ['customers_grid', true, null],
      ['orders_grid', true, null],
    ]);

    const workflows = await rows(
      'SELECT wft_code, wft_version, wft_schema FROM app_workflow_configs ORDER BY wft_id',
    );
    expect(workflows.map((w) => [w.wft_code, Number(w.wft_version)])).toEqual([
      ['customer_onboarding', 1],
      ['customer_onboarding', 2],
    ]);
    const stepTypes = JSON.parse(String(workflows[0].wft_schema)).steps.map((s: { type: string }) => s.type);
    expect(stepTypes).toEqual(
      expect.arrayContaining(['log', 'set', 'condition', 'approval', 'entity.update']),
    );

    expect(await count('app_navigation_configs', "nav_code = 'main'")).toBe(1);
    const tiers = await rows("SELECT vs_values FROM app_value_sets WHERE vs_code = 'customer_tiers'");
    expect(JSON.parse(String(tiers[0].vs_values)).map((v: { code: string }) => v.code)).toEqual([
      'bronze',
      'silver',
      'gold',
    ]);
  });

  it('should insert nothing and change no count when run a second time', async () => {
    const tables = Object.keys(firstRun);
    const before = await Promise.all(tables.map((t) => count(t)));
    const second = await seedDemo(ds, { password: 'another-password' });
    expect(Object.values(second.inserted).every((n) => n === 0)).toBe(true);
    expect(Object.keys(second.inserted).sort()).toEqual([...tables].sort());
    expect(await Promise.all(tables.map((t) => count(t)))).toEqual(before);
    const admin = await rows(
      "SELECT usr_password_hash FROM app_users WHERE usr_email_id = 'admin@acme.test'",
    );
    await expect(argon2.verify(String(admin[0].usr_password_hash), PASSWORD)).resolves.toBe(true);
  });
});
