import { hashPassword } from '../../src/common/crypto/password';
import type { DataSource } from 'typeorm';
import { DatabaseService } from '../../src/database/database.service';
import { fromDbTimestamp } from '../../src/database/dialect/timestamps';
import { authHeaders, DEMO_PASSWORD, signin, TENANT } from '../support/auth';
import { startTestApp, TestApp } from '../support/test-app';

type Json = Record<string, any>;

/**
 * Writes of spec §4.3 (create, update, delete) on the demo entities: validation, mass assignment,
 * optimistic concurrency (D24), dependents and cascade (D25), audit (D29), the guard chain
 * (D21, D22), and every way a user of one tenant might change another tenant's rows.
 */
describe('Entity writes (spec §4.3, §3.1, D21-D25, D29)', () => {
  let t: TestApp;
  let ds: DataSource;
  const token: Record<string, string> = {};
  let acmeCustomerIds: number[];
  let globexCustomerIds: number[];

  beforeAll(async () => {
    t = await startTestApp({ label: 'entity-write' });
    ds = t.app.get(DatabaseService).dataSource;
    token.acmeAdmin = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
    token.acmeViewer = (await signin(t.app, TENANT.acme, 'viewer@acme.test')).token;
    token.acmeRoot = (await signin(t.app, TENANT.acme, 'root@acme.test')).token;
    token.globexAdmin = (await signin(t.app, TENANT.globex, 'admin@globex.test')).token;
    const ids = async (tenant: number) =>
      (
        await ds
          .createQueryBuilder()
          .select('c.cus_id', 'id')
          .from('demo_customers', 'c')
          .where('c.cus_tenant_id = :tenant', { tenant })
          .orderBy('c.cus_id')
          .getRawMany<{ id: unknown }>()
      ).map((r) => Number(r.id));
    acmeCustomerIds = await ids(1);
    globexCustomerIds = await ids(2);
  });

  afterAll(async () => {
    await t?.close();
  });

  const tenantOf: Record<string, string> = {
    acmeAdmin: TENANT.acme,
    acmeViewer: TENANT.acme,
    acmeRoot: TENANT.acme,
    globexAdmin: TENANT.globex,
  };
  const call = (
    method: 'GET' | 'POST' | 'PUT' | 'DELETE',
    url: string,
    who: string,
    payload?: unknown,
    headers: Record<string, string> = {},
  ) =>
    t.app.inject({
      method,
      url,
      headers: { ...authHeaders(tenantOf[who], token[who]), ...headers },
      ...(payload === undefined ? {} : { payload: payload as Json }),
    });

  /** BIT/BOOLEAN/TINYINT read back as a JS boolean (no boolean literals in SQL). */
  const bool = (v: unknown): boolean => v === true || v === 1 || v === '1' || v === 't';
  const json = (v: unknown): Json => (typeof v === 'string' ? (JSON.parse(v) as Json) : (v as Json));

  async function customerRow(id: number): Promise<Json | undefined> {
    return ds
      .createQueryBuilder()
      .select('c.*')
      .from('demo_customers', 'c')
      .where('c.cus_id = :id', { id })
      .getRawOne<Json>();
  }

  /** The stored last_modified of a customer as the ISO 8601 the API speaks. */
  async function lastModifiedOf(table: string, p: string, id: number): Promise<string> {
    const row = await ds
      .createQueryBuilder()
      .select(`r.${p}_last_modified`, 'lm')
      .from(table, 'r')
      .where(`r.${p}_id = :id`, { id })
      .getRawOne<{ lm: unknown }>();
    return new Date(fromDbTimestamp(row?.lm, ds.driver.options.type)!).toISOString();
  }

  /** Every row of a table as text, for "nothing changed" comparisons. */
  async function snapshot(table: string, p: string): Promise<string> {
    const rows = await ds
      .createQueryBuilder()
      .select('r.*')
      .from(table, 'r')
      .orderBy(`r.${p}_id`)
      .getRawMany<Json>();
    return JSON.stringify(rows);
  }

  async function count(table: string): Promise<number> {
    const r = await ds
      .createQueryBuilder()
      .select('COUNT(*)', 'n')
      .from(table, 'r')
      .getRawOne<{ n: unknown }>();
    return Number(r?.n);
  }

  async function auditRows(recordId: number, entityCode: string): Promise<Json[]> {
    return ds
      .createQueryBuilder()
      .select('a.*')
      .from('app_audit_logs', 'a')
      .where('a.aud_record_id = :id AND a.aud_entity_code = :code', {
        id: String(recordId),
        code: entityCode,
      })
      .orderBy('a.aud_id')
      .getRawMany<Json>();
  }

  let serial = 0;
  const newCustomer = (extra: Json = {}): Json => ({
    name: `Write Test ${++serial}`,
    email: `write-test-${serial}@acme.example`,
    tier: 'silver',
    credit_limit: 1500,
    ...extra,
  });

  async function createCustomer(who = 'acmeAdmin', extra: Json = {}): Promise<Json> {
    const res = await call('POST', '/api/v1/customers', who, newCustomer(extra));
    expect(res.statusCode).toBe(201);
    return res.json<{ data: Json }>().data;
  }

  describe('create', () => {
    it('should answer 201 with {id, ...payload, lastModified}', async () => {
      const payload = newCustomer();
      const res = await call('POST', '/api/v1/customers', 'acmeAdmin', payload);
      expect(res.statusCode).toBe(201);
      const data = res.json().data;
      expect(data).toMatchObject({ ...payload, id: expect.any(Number), lastModified: expect.any(String) });
      expect(new Date(data.lastModified).toISOString()).toBe(data.lastModified);
    });

    it('should store tenant, status, is_deleted, created_by/created_at and last_modified (create rule 4, D4)', async () => {
      const before = Date.now();
      const data = await createCustomer();
      const row = (await customerRow(data.id))!;
      expect(Number(row.cus_tenant_id)).toBe(1);
      expect(Number(row.cus_status)).toBe(1);
      expect(bool(row.cus_is_deleted)).toBe(false);
      const audit = json(row.cus_audit_data);
      expect(audit.created_by).toBe('admin@acme.test');
      expect(Date.parse(audit.created_at)).toBeGreaterThanOrEqual(before - 5);
      expect(audit.version).toBe(1);
      // D4: millisecond precision, round trip exact on every dialect.
      expect(await lastModifiedOf('demo_customers', 'cus', data.id)).toBe(data.lastModified);
      expect(row.cus_name).toBe(data.name);
    });

    it('should list every validation problem as [{field, error}] and store nothing (create rule 1)', async () => {
      const before = await count('demo_customers');
      const res = await call('POST', '/api/v1/customers', 'acmeAdmin', {
        name: 'x'.repeat(101),
        email: 'not-an-email',
        tier: 'platinum',
        credit_limit: -5,
        phone: 12,
      });
      expect(res.statusCode).toBe(400);
      expect(res.json().error.code).toBe('VALIDATION_ERROR');
      const fields = res
        .json()
        .error.details.map((d: { field: string }) => d.field)
        .sort();
      expect(fields).toEqual(['credit_limit', 'email', 'name', 'tier']);
      expect(await count('demo_customers')).toBe(before);
    });

    it('should refuse missing required fields and wrong types', async () => {
      const res = await call('POST', '/api/v1/customers', 'acmeAdmin', { credit_limit: 'lots' });
      expect(res.statusCode).toBe(400);
      expect(res.json().error.details).toEqual(
        expect.arrayContaining([
          { field: 'credit_limit', error: 'must be a number' },
          { field: 'name', error: 'is required' },
          { field: 'email', error: 'is required' },
        ]),
      );
      const order = await call('POST', '/api/v1/orders', 'acmeAdmin', {
        customer_id: acmeCustomerIds[0],
        amount: 10,
        ordered_at: '2025-13-45',
        status: 'lost',
      });
      expect(order.statusCode).toBe(400);
      expect(
        order
          .json()
          .error.details.map((d: { field: string }) => d.field)
          .sort(),
      ).toEqual(['ordered_at', 'status']);
    });

    it('should refuse a body that is not a JSON object', async () => {
      const res = await call('POST', '/api/v1/customers', 'acmeAdmin', [newCustomer()]);
      expect(res.statusCode).toBe(400);
      expect(res.json().error.details).toEqual([{ field: 'body', error: 'must be a JSON object' }]);
    });

    it('should enforce uniqueness among the tenant’s live rows only', async () => {
      const taken = await call(
        'POST',
        '/api/v1/customers',
        'acmeAdmin',
        newCustomer({ email: 'CUSTOMER1@acme.example' }),
      );
      expect(taken.statusCode).toBe(400);
      expect(taken.json().error.details).toEqual([
        { field: 'email', error: 'must be unique; the value is already used' },
      ]);
      // The same e-mail in another tenant is fine.
      const other = await call(
        'POST',
        '/api/v1/customers',
        'globexAdmin',
        newCustomer({ email: 'customer1@acme.example' }),
      );
      expect(other.statusCode).toBe(201);
    });

    it('should require references to an existing, live row of the same tenant', async () => {
      const missing = await call('POST', '/api/v1/orders', 'acmeAdmin', { customer_id: 999999, amount: 5 });
      expect(missing.statusCode).toBe(400);
      expect(missing.json().error.details).toEqual([
        { field: 'customer_id', error: 'must reference an existing customers record' },
      ]);
      const ok = await call('POST', '/api/v1/orders', 'acmeAdmin', {
        customer_id: acmeCustomerIds[1],
        amount: 12.5,
        status: 'new',
        ordered_at: '2025-06-01',
      });
      expect(ok.statusCode).toBe(201);
      expect(ok.json().data).toMatchObject({
        customer_id: acmeCustomerIds[1],
        amount: 12.5,
        ordered_at: '2025-06-01',
      });
    });

    it('should refuse mass assignment: id, tenant and system columns, column names, unknown fields', async () => {
      const before = await snapshot('demo_customers', 'cus');
      const res = await call('POST', '/api/v1/customers', 'acmeAdmin', {
        ...newCustomer(),
        id: 1,
        cus_tenant_id: 2,
        tenant_id: 2,
        cus_is_deleted: 1,
        cus_audit_data: '{}',
        cus_name: 'by column',
        lastModified: '2025-01-01T00:00:00.000Z',
        is_admin: true,
      });
      expect(res.statusCode).toBe(400);
      const fields = res
        .json()
        .error.details.map((d: { field: string }) => d.field)
        .sort();
      expect(fields).toEqual(
        [
          'cus_audit_data',
          'cus_is_deleted',
          'cus_name',
          'cus_tenant_id',
          'id',
          'is_admin',
          'lastModified',
          'tenant_id',
        ].sort(),
      );
      expect(await snapshot('demo_customers', 'cus')).toBe(before);
    });

    it('should refuse hidden fields (users.password_hash)', async () => {
      const res = await call('POST', '/api/v1/users', 'acmeRoot', {
        email_id: 'hash-writer@acme.test',
        password_hash: '$argon2id$forged',
      });
      expect(res.statusCode).toBe(400);
      expect(res.json().error.details).toEqual([{ field: 'password_hash', error: 'cannot be written' }]);
    });
  });

  describe('update', () => {
    it('should refuse a PUT without lastModified or If-Match with 400 (D24), changing nothing', async () => {
      const c = await createCustomer();
      const res = await call('PUT', `/api/v1/customers/${c.id}`, 'acmeAdmin', { name: 'No token' });
      expect(res.statusCode).toBe(400);
      expect(res.json().error.details[0].field).toBe('lastModified');
      expect((await customerRow(c.id))!.cus_name).toBe(c.name);
    });

    it('should refuse a stale lastModified with 409 CONFLICT, changing nothing', async () => {
      const c = await createCustomer();
      const stale = new Date(Date.parse(c.lastModified) - 1).toISOString();
      const res = await call('PUT', `/api/v1/customers/${c.id}`, 'acmeAdmin', {
        name: 'Stale',
        lastModified: stale,
      });
      expect(res.statusCode).toBe(409);
      expect(res.json().error.code).toBe('CONFLICT');
      expect((await customerRow(c.id))!.cus_name).toBe(c.name);
    });

    it('should update with lastModified, set updated_by/updated_at and a new lastModified', async () => {
      const c = await createCustomer();
      const res = await call('PUT', `/api/v1/customers/${c.id}`, 'acmeAdmin', {
        name: 'Renamed',
        credit_limit: 2000,
        lastModified: c.lastModified,
      });
      expect(res.statusCode).toBe(200);
      const data = res.json().data;
      expect(data).toMatchObject({ id: c.id, name: 'Renamed', credit_limit: 2000 });
      expect(Date.parse(data.lastModified)).toBeGreaterThan(Date.parse(c.lastModified));
      const row = (await customerRow(c.id))!;
      expect(row.cus_name).toBe('Renamed');
      expect(json(row.cus_audit_data)).toMatchObject({
        created_by: 'admin@acme.test',
        updated_by: 'admin@acme.test',
        version: 2,
      });
      expect(await lastModifiedOf('demo_customers', 'cus', c.id)).toBe(data.lastModified);
      // The new token works, the old one no longer does.
      const again = await call('PUT', `/api/v1/customers/${c.id}`, 'acmeAdmin', {
        name: 'Twice',
        lastModified: data.lastModified,
      });
      expect(again.statusCode).toBe(200);
      const old = await call('PUT', `/api/v1/customers/${c.id}`, 'acmeAdmin', {
        name: 'Old',
        lastModified: data.lastModified,
      });
      expect(old.statusCode).toBe(409);
    });

    it('should accept If-Match instead of the body token', async () => {
      const c = await createCustomer();
      const res = await call(
        'PUT',
        `/api/v1/customers/${c.id}`,
        'acmeAdmin',
        { tier: 'gold' },
        { 'if-match': `"${c.lastModified}"` },
      );
      expect(res.statusCode).toBe(200);
      expect((await customerRow(c.id))!.cus_tier).toBe('gold');
    });

    it('should update seeded rows with the lastModified they were stored with', async () => {
      const id = acmeCustomerIds[2];
      const lm = await lastModifiedOf('demo_customers', 'cus', id);
      const res = await call('PUT', `/api/v1/customers/${id}`, 'acmeAdmin', {
        phone: '+1 202 555 0199',
        lastModified: lm,
      });
      expect(res.statusCode).toBe(200);
      // The seed writes no audit version: such a row counts as version 1, so this update is 2.
      expect(json((await customerRow(id))!.cus_audit_data)).toMatchObject({ created_by: 'seed', version: 2 });
    });

    it('should let exactly one of two concurrent updates with the same lastModified win', async () => {
      const c = await createCustomer();
      const [a, b] = await Promise.all(
        ['Winner A', 'Winner B'].map((name) =>
          call('PUT', `/api/v1/customers/${c.id}`, 'acmeAdmin', { name, lastModified: c.lastModified }),
        ),
      );
      expect([a.statusCode, b.statusCode].sort()).toEqual([200, 409]);
      const winner = a.statusCode === 200 ? a : b;
      expect((await customerRow(c.id))!.cus_name).toBe(winner.json().data.name);
      expect(
        (await auditRows(c.id, 'customers')).filter((r) => r.aud_event === 'entity.updated'),
      ).toHaveLength(1);
    });

    it('should let exactly one of several concurrent creates with the same unique value win', async () => {
      const emails = ['Race@acme.example', 'race@acme.example', 'RACE@ACME.EXAMPLE', 'race@Acme.example'];
      const results = await Promise.all(
        emails.map((email) => call('POST', '/api/v1/customers', 'acmeAdmin', newCustomer({ email }))),
      );
      expect(results.map((r) => r.statusCode).sort()).toEqual([201, 400, 400, 400]);
      for (const r of results.filter((x) => x.statusCode === 400)) {
        expect(r.json().error.details).toEqual([
          { field: 'email', error: 'must be unique; the value is already used' },
        ]);
      }
      const rows = await ds
        .createQueryBuilder()
        .select('c.cus_id', 'id')
        .from('demo_customers', 'c')
        .where('LOWER(c.cus_email) = :email AND c.cus_tenant_id = 1', { email: 'race@acme.example' })
        .getRawMany();
      expect(rows).toHaveLength(1);
    });

    it('should let only one of two concurrent updates take the same unique value', async () => {
      const [a, b] = [await createCustomer(), await createCustomer()];
      const results = await Promise.all(
        [a, b].map((c) =>
          call('PUT', `/api/v1/customers/${c.id}`, 'acmeAdmin', {
            email: 'same-update@acme.example',
            lastModified: c.lastModified,
          }),
        ),
      );
      expect(results.map((r) => r.statusCode).sort()).toEqual([200, 400]);
      const rows = await ds
        .createQueryBuilder()
        .select('c.cus_id', 'id')
        .from('demo_customers', 'c')
        .where('c.cus_email = :email', { email: 'same-update@acme.example' })
        .getRawMany();
      expect(rows).toHaveLength(1);
    });

    it('should not hold up concurrent creates of different unique values', async () => {
      const results = await Promise.all(
        [1, 2, 3, 4].map(() => call('POST', '/api/v1/customers', 'acmeAdmin', newCustomer())),
      );
      expect(results.map((r) => r.statusCode)).toEqual([201, 201, 201, 201]);
    });

    it('should check uniqueness only when the value changes', async () => {
      const c = await createCustomer();
      const same = await call('PUT', `/api/v1/customers/${c.id}`, 'acmeAdmin', {
        email: c.email,
        lastModified: c.lastModified,
      });
      expect(same.statusCode).toBe(200);
      const taken = await call('PUT', `/api/v1/customers/${c.id}`, 'acmeAdmin', {
        email: 'customer2@acme.example',
        lastModified: same.json().data.lastModified,
      });
      expect(taken.statusCode).toBe(400);
      expect(taken.json().error.details).toEqual([
        { field: 'email', error: 'must be unique; the value is already used' },
      ]);
    });

    it('should refuse mass assignment on update', async () => {
      const c = await createCustomer();
      const res = await call('PUT', `/api/v1/customers/${c.id}`, 'acmeAdmin', {
        id: 1,
        cus_tenant_id: 2,
        name: 'ok',
        lastModified: c.lastModified,
      });
      expect(res.statusCode).toBe(400);
      expect(
        res
          .json()
          .error.details.map((d: { field: string }) => d.field)
          .sort(),
      ).toEqual(['cus_tenant_id', 'id']);
      expect(Number((await customerRow(c.id))!.cus_tenant_id)).toBe(1);
    });

    it('should answer 404 for a missing or deleted record', async () => {
      const res = await call('PUT', '/api/v1/customers/999999', 'acmeAdmin', {
        name: 'x',
        lastModified: new Date().toISOString(),
      });
      expect(res.statusCode).toBe(404);
    });
  });

  describe('delete', () => {
    it('should refuse a customer with orders with 409 and details.dependentEntities (D25)', async () => {
      const id = acmeCustomerIds[3];
      const before = await snapshot('demo_orders', 'ord');
      const res = await call('DELETE', `/api/v1/customers/${id}`, 'acmeAdmin');
      expect(res.statusCode).toBe(409);
      const orders = await ds
        .createQueryBuilder()
        .select('COUNT(*)', 'n')
        .from('demo_orders', 'o')
        .where('o.ord_customer_id = :id', { id })
        .getRawOne<{ n: unknown }>();
      expect(res.json().error).toMatchObject({
        code: 'CONFLICT',
        details: { dependentEntities: [{ entity: 'orders', count: Number(orders?.n) }] },
      });
      expect(bool((await customerRow(id))!.cus_is_deleted)).toBe(false);
      expect(await snapshot('demo_orders', 'ord')).toBe(before);
    });

    it('should soft-delete a record without dependents: {success, deletedAt}, gone from reads, kept in the DB', async () => {
      const c = await createCustomer();
      const res = await call('DELETE', `/api/v1/customers/${c.id}`, 'acmeAdmin');
      expect(res.statusCode).toBe(200);
      const body = res.json();
      expect(body).toMatchObject({
        success: true,
        data: { success: true, deletedAt: expect.any(String) },
        deletedAt: body.data.deletedAt,
      });
      const row = (await customerRow(c.id))!;
      expect(bool(row.cus_is_deleted)).toBe(true);
      expect(json(row.cus_audit_data)).toMatchObject({
        deleted_by: 'admin@acme.test',
        deleted_at: body.deletedAt,
        version: 2,
      });
      expect((await call('GET', `/api/v1/customers/${c.id}`, 'acmeAdmin')).statusCode).toBe(404);
      expect((await call('DELETE', `/api/v1/customers/${c.id}`, 'acmeAdmin')).statusCode).toBe(404);
      // The e-mail of a deleted customer is free again (unique among live rows).
      expect(
        (await call('POST', '/api/v1/customers', 'acmeAdmin', newCustomer({ email: c.email }))).statusCode,
      ).toBe(201);
    });

    it('should soft-delete the dependents too with cascade=true, in one transaction', async () => {
      const id = acmeCustomerIds[4];
      const total = (await call('GET', '/api/v1/orders?limit=500', 'acmeAdmin')).json().data.total;
      const res = await call('DELETE', `/api/v1/customers/${id}?cascade=true`, 'acmeAdmin');
      expect(res.statusCode).toBe(200);
      const orders = await ds
        .createQueryBuilder()
        .select('o.ord_is_deleted', 'deleted')
        .addSelect('o.ord_audit_data', 'audit')
        .from('demo_orders', 'o')
        .where('o.ord_customer_id = :id', { id })
        .getRawMany<Json>();
      expect(orders.length).toBeGreaterThan(0);
      expect(orders.every((o) => bool(o.deleted) && json(o.audit).deleted_by === 'admin@acme.test')).toBe(
        true,
      );
      expect((await call('GET', '/api/v1/orders?limit=500', 'acmeAdmin')).json().data.total).toBe(
        total - orders.length,
      );
      const [audit] = (await auditRows(id, 'customers')).filter((r) => r.aud_event === 'entity.deleted');
      expect(json(audit.aud_after).cascaded).toEqual([{ entity: 'orders', ids: expect.any(Array) }]);
      // Every cascaded order has an audit row of its own, pointing back at the customer.
      for (const orderId of json(audit.aud_after).cascaded[0].ids as number[]) {
        const [own] = (await auditRows(orderId, 'orders')).filter((r) => r.aud_event === 'entity.deleted');
        expect(json(own.aud_after).cascadedFrom).toEqual({ entity: 'customers', id });
      }
    });

    it('should refuse a cascade into an entity the role may not delete, and change nothing', async () => {
      // A role that may delete customers but not orders.
      await ds
        .createQueryBuilder()
        .insert()
        .into('app_roles')
        .values({
          rol_tenant_id: 1,
          rol_code: 'CUSTOMER_CLEANER',
          rol_permissions: JSON.stringify(['read:entity', 'delete:customers']),
          rol_status: 1,
          rol_is_deleted: 0,
        })
        .execute();
      const [role] = await ds
        .createQueryBuilder()
        .select('r.rol_id', 'id')
        .from('app_roles', 'r')
        .where("r.rol_code = 'CUSTOMER_CLEANER'")
        .getRawMany<{ id: number }>();
      await ds
        .createQueryBuilder()
        .insert()
        .into('app_users')
        .values({
          usr_tenant_id: 1,
          usr_email_id: 'cleaner@acme.test',
          usr_role_id: Number(role.id),
          usr_password_hash: await hashPassword(DEMO_PASSWORD),
          usr_status: 1,
          usr_is_deleted: 0,
        })
        .execute();
      token.acmeCleaner = (await signin(t.app, TENANT.acme, 'cleaner@acme.test')).token;
      tenantOf.acmeCleaner = TENANT.acme;
      const id = acmeCustomerIds[6];
      const before = await customerRow(id);
      const res = await call('DELETE', `/api/v1/customers/${id}?cascade=true`, 'acmeCleaner');
      expect(res.statusCode).toBe(403);
      expect(res.json().error.code).toBe('FORBIDDEN');
      expect(await customerRow(id)).toEqual(before);
    });

    it('should refuse a bad cascade value', async () => {
      expect(
        (await call('DELETE', `/api/v1/customers/${acmeCustomerIds[5]}?cascade=yes`, 'acmeAdmin')).statusCode,
      ).toBe(400);
    });
  });

  describe('audit (D29)', () => {
    it('should write entity.created, entity.updated and entity.deleted rows with before and after', async () => {
      const c = await createCustomer();
      const u = await call('PUT', `/api/v1/customers/${c.id}`, 'acmeAdmin', {
        name: 'Audited',
        lastModified: c.lastModified,
      });
      expect(u.statusCode).toBe(200);
      expect(
        (
          await call('DELETE', `/api/v1/customers/${c.id}`, 'acmeAdmin', undefined, {
            'x-request-id': 'req-audit-1',
          })
        ).statusCode,
      ).toBe(200);
      const rows = await auditRows(c.id, 'customers');
      expect(rows.map((r) => String(r.aud_event))).toEqual([
        'entity.created',
        'entity.updated',
        'entity.deleted',
      ]);
      expect(rows.every((r) => Number(r.aud_tenant_id) === 1 && Number(r.aud_user_id) > 0)).toBe(true);
      expect(rows[0].aud_before).toBeNull();
      expect(json(rows[0].aud_after)).toMatchObject({ id: c.id, name: c.name });
      expect(json(rows[1].aud_before)).toMatchObject({ name: c.name });
      expect(json(rows[1].aud_after)).toMatchObject({ name: 'Audited' });
      expect(rows[2].aud_request_id).toBe('req-audit-1');
    });

    it('should write no audit row for a failed write', async () => {
      const before = await count('app_audit_logs');
      await call('POST', '/api/v1/customers', 'acmeAdmin', { name: 'x' });
      expect(await count('app_audit_logs')).toBe(before);
    });
  });

  describe('users: write-only password (D12)', () => {
    it('should store a password as an argon2id hash and never return it', async () => {
      const res = await call('POST', '/api/v1/users', 'acmeRoot', {
        email_id: 'New.User@Acme.test',
        first_name: 'New',
        password: 'a-long-Passw0rd',
        role_id: 2,
      });
      expect(res.statusCode).toBe(201);
      const data = res.json().data;
      expect(JSON.stringify(res.json())).not.toMatch(/password|argon2/i);
      const row = await ds
        .createQueryBuilder()
        .select('u.usr_password_hash', 'hash')
        .addSelect('u.usr_tenant_id', 'tenant')
        .from('app_users', 'u')
        .where('u.usr_id = :id', { id: data.id })
        .getRawOne<Json>();
      expect(row!.hash).toMatch(/^\$argon2id\$/);
      expect(Number(row!.tenant)).toBe(1);
      expect((await signin(t.app, TENANT.acme, 'new.user@acme.test', 'a-long-Passw0rd')).status).toBe(200);
      const read = await call('GET', `/api/v1/users/${data.id}`, 'acmeRoot');
      expect(JSON.stringify(read.json())).not.toMatch(/argon2|password_hash/);
      const audit = await auditRows(data.id, 'users');
      expect(JSON.stringify(audit)).not.toMatch(/argon2|a-long-Passw0rd/);
    });

    it('should refuse a short password', async () => {
      const res = await call('POST', '/api/v1/users', 'acmeRoot', {
        email_id: 'short@acme.test',
        password: 'x',
      });
      expect(res.statusCode).toBe(400);
      expect(res.json().error.details[0].field).toBe('password');
    });
  });

  describe('access (D21, D22)', () => {
    it('should answer 403 to every write of the READ-mode roles entity', async () => {
      for (const [method, url] of [
        ['POST', '/api/v1/roles'],
        ['PUT', '/api/v1/roles/1'],
        ['DELETE', '/api/v1/roles/1'],
      ] as const) {
        const res = await call(method, url, 'acmeRoot', {
          code: 'X',
          lastModified: new Date().toISOString(),
        });
        expect({ url, method, status: res.statusCode }).toEqual({ url, method, status: 403 });
      }
    });

    it('should answer 403 to a VIEWER’s writes and change nothing', async () => {
      const before = await snapshot('demo_customers', 'cus');
      const id = acmeCustomerIds[0];
      const lm = await lastModifiedOf('demo_customers', 'cus', id);
      expect((await call('POST', '/api/v1/customers', 'acmeViewer', newCustomer())).statusCode).toBe(403);
      expect(
        (await call('PUT', `/api/v1/customers/${id}`, 'acmeViewer', { name: 'v', lastModified: lm }))
          .statusCode,
      ).toBe(403);
      expect((await call('DELETE', `/api/v1/customers/${id}`, 'acmeViewer')).statusCode).toBe(403);
      expect(await snapshot('demo_customers', 'cus')).toBe(before);
    });

    it('should let only a system admin write the system-maintained users entity', async () => {
      const res = await call('POST', '/api/v1/users', 'acmeAdmin', {
        email_id: 'tenant-admin-made@acme.test',
      });
      expect(res.statusCode).toBe(403);
      const lm = await lastModifiedOf('app_users', 'usr', 2);
      const put = await call('PUT', '/api/v1/users/2', 'acmeAdmin', {
        first_name: 'Hacked',
        lastModified: lm,
      });
      expect(put.statusCode).toBe(403);
      const root = await call('PUT', '/api/v1/users/2', 'acmeRoot', {
        first_name: 'Victoria',
        lastModified: lm,
      });
      expect(root.statusCode).toBe(200);
      // The users profile forbids deletion (permissions.delete false).
      expect((await call('DELETE', '/api/v1/users/2', 'acmeRoot')).statusCode).toBe(403);
    });
  });

  describe('tenant isolation (writes)', () => {
    it('should answer 404 to a globex update of every acme customer and change nothing', async () => {
      const before = await snapshot('demo_customers', 'cus');
      for (const id of acmeCustomerIds) {
        const lm = await lastModifiedOf('demo_customers', 'cus', id);
        const res = await call('PUT', `/api/v1/customers/${id}`, 'globexAdmin', {
          name: 'Pwned',
          lastModified: lm,
        });
        expect({ id, status: res.statusCode }).toEqual({ id, status: 404 });
      }
      expect(await snapshot('demo_customers', 'cus')).toBe(before);
    });

    it('should answer 404 to a globex delete of every acme customer, with or without cascade, and change nothing', async () => {
      const customers = await snapshot('demo_customers', 'cus');
      const orders = await snapshot('demo_orders', 'ord');
      for (const id of acmeCustomerIds) {
        for (const q of ['', '?cascade=true']) {
          const res = await call('DELETE', `/api/v1/customers/${id}${q}`, 'globexAdmin');
          expect({ id, q, status: res.statusCode }).toEqual({ id, q, status: 404 });
        }
      }
      expect(await snapshot('demo_customers', 'cus')).toBe(customers);
      expect(await snapshot('demo_orders', 'ord')).toBe(orders);
    });

    it('should refuse a globex order that references an acme customer', async () => {
      const before = await count('demo_orders');
      const res = await call('POST', '/api/v1/orders', 'globexAdmin', {
        customer_id: acmeCustomerIds[0],
        amount: 1,
      });
      expect(res.statusCode).toBe(400);
      expect(res.json().error.details).toEqual([
        { field: 'customer_id', error: 'must reference an existing customers record' },
      ]);
      expect(await count('demo_orders')).toBe(before);
    });

    it('should refuse a tenant column in the body on create and update', async () => {
      const before = await snapshot('demo_customers', 'cus');
      const created = await call(
        'POST',
        '/api/v1/customers',
        'globexAdmin',
        newCustomer({ cus_tenant_id: 1 }),
      );
      expect(created.statusCode).toBe(400);
      const id = globexCustomerIds[0];
      const lm = await lastModifiedOf('demo_customers', 'cus', id);
      const updated = await call('PUT', `/api/v1/customers/${id}`, 'globexAdmin', {
        cus_tenant_id: 1,
        lastModified: lm,
      });
      expect(updated.statusCode).toBe(400);
      expect(await snapshot('demo_customers', 'cus')).toBe(before);
    });

    it('should store a globex create under globex whatever the body says', async () => {
      const res = await call('POST', '/api/v1/customers', 'globexAdmin', newCustomer());
      expect(res.statusCode).toBe(201);
      expect(Number((await customerRow(res.json().data.id))!.cus_tenant_id)).toBe(2);
    });

    it('should not let an acme token write with the globex header', async () => {
      const res = await t.app.inject({
        method: 'POST',
        url: '/api/v1/customers',
        headers: authHeaders(TENANT.globex, token.acmeAdmin),
        payload: newCustomer(),
      });
      expect([401, 403]).toContain(res.statusCode);
    });
  });
});
