import type { DataSource } from 'typeorm';
import { DatabaseService } from '../../src/database/database.service';
import { DEMO_PROFILES } from '../../src/database/seed/demo-data';
import { authHeaders, signin, TENANT } from '../support/auth';
import { copyEntityConfig } from '../support/entity-fixtures';
import { startTestApp, TestApp } from '../support/test-app';

type Json = Record<string, any>;

/**
 * D56 on the demo entities: a record's history (field-level changes, newest first, shaped by the
 * reader's profile), the record as of a version, restore as an update (token, skipped fields, its
 * own entry), undelete with the cascade it undoes, the unique clash that refuses it, and every way
 * another tenant's user might reach a record's history.
 */
describe('Record history, restore and undelete (D56)', () => {
  let t: TestApp;
  let ds: DataSource;
  const token: Record<string, string> = {};
  const tenantOf: Record<string, string> = {
    acmeAdmin: TENANT.acme,
    acmeViewer: TENANT.acme,
    acmeRoot: TENANT.acme,
    globexAdmin: TENANT.globex,
  };
  let seq = 0;

  beforeAll(async () => {
    t = await startTestApp({ label: 'record-history' });
    ds = t.app.get(DatabaseService).dataSource;
    token.acmeAdmin = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
    token.acmeViewer = (await signin(t.app, TENANT.acme, 'viewer@acme.test')).token;
    token.globexAdmin = (await signin(t.app, TENANT.globex, 'admin@globex.test')).token;
    token.acmeRoot = (await signin(t.app, TENANT.acme, 'root@acme.test')).token;
  });

  afterAll(async () => {
    await t?.close();
  });

  const call = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, who: string, payload?: unknown) =>
    t.app.inject({
      method,
      url,
      headers: authHeaders(tenantOf[who], token[who]),
      ...(payload === undefined ? {} : { payload: payload as Json }),
    });

  async function newCustomer(extra: Json = {}): Promise<Json> {
    seq += 1;
    const res = await call('POST', '/api/v1/customers', 'acmeAdmin', {
      name: `History ${seq}`,
      email: `history${seq}-${Date.now()}@acme.example`,
      phone: '+44 20 7946 0101',
      tier: 'bronze',
      credit_limit: 1000,
      internal_notes: 'first note',
      ...extra,
    });
    expect(res.statusCode).toBe(201);
    return res.json().data as Json;
  }

  async function update(id: number, values: Json): Promise<Json> {
    const current = (await call('GET', `/api/v1/customers/${id}`, 'acmeAdmin')).json().data as Json;
    const res = await call('PUT', `/api/v1/customers/${id}`, 'acmeAdmin', {
      ...values,
      lastModified: current.lastModified,
    });
    expect(res.statusCode).toBe(200);
    return res.json().data as Json;
  }

  async function newOrder(customerId: number): Promise<number> {
    const res = await call('POST', '/api/v1/orders', 'acmeAdmin', {
      customer_id: customerId,
      amount: 10,
      ordered_at: '2026-11-01',
    });
    expect(res.statusCode).toBe(201);
    return Number(res.json().data.id);
  }

  describe('GET …/{id}/history', () => {
    it('should list field-level changes newest first, masked and projected as a read shows them', async () => {
      const c = await newCustomer();
      await update(c.id, { credit_limit: 2500, phone: '+44 20 7946 0999', internal_notes: 'second' });
      const res = await call('GET', `/api/v1/customers/${c.id}/history`, 'acmeAdmin');
      expect(res.statusCode).toBe(200);
      const page = res.json().data as Json;
      expect(page.total).toBe(2);
      expect(page.entries.map((e: Json): unknown[] => [Number(e.version), String(e.action)])).toEqual([
        [2, 'updated'],
        [1, 'created'],
      ]);
      const [updated, created] = page.entries as Json[];
      expect(updated.by).toEqual({ id: expect.any(Number), email: 'admin@acme.test' });
      expect(new Date(updated.at).getTime()).toBeGreaterThan(0);
      const byField = Object.fromEntries(
        updated.changes.map((ch: Json): [string, Json] => [String(ch.field), ch]),
      );
      expect(Object.keys(byField).sort()).toEqual(['credit_limit', 'phone']);
      expect(byField.credit_limit).toEqual({ field: 'credit_limit', before: 1000, after: 2500 });
      // Masked stays masked (phone: partial), on both sides; the excluded field never appears.
      expect(byField.phone.before).not.toContain('7946');
      expect(byField.phone.after).not.toContain('7946');
      expect(byField.phone.after).toMatch(/\*+0999$/);
      expect(JSON.stringify(page)).not.toContain('note');
      expect(created.changes.map((ch: Json) => String(ch.field))).toEqual(
        expect.arrayContaining(['name', 'email', 'phone', 'tier', 'credit_limit']),
      );
      expect(created.changes.every((ch: Json) => ch.before === null)).toBe(true);
    });

    it('should page with limit and skip and refuse a bad page with 400', async () => {
      const c = await newCustomer();
      await update(c.id, { credit_limit: 1 });
      await update(c.id, { credit_limit: 2 });
      const res = await call('GET', `/api/v1/customers/${c.id}/history?limit=1&skip=1`, 'acmeAdmin');
      expect(res.json().data).toMatchObject({ total: 3, limit: 1, skip: 1 });
      expect(res.json().data.entries.map((e: Json) => Number(e.version))).toEqual([2]);
      for (const q of ['limit=0', 'limit=201', 'skip=-1', 'sortBy=version'])
        expect(
          (await call('GET', `/api/v1/customers/${c.id}/history?${q}`, 'acmeAdmin')).json().error.code,
        ).toBe('VALIDATION_ERROR');
    });

    it('should answer the record as of a version, shaped by the profile', async () => {
      const c = await newCustomer({ credit_limit: 700 });
      await update(c.id, { credit_limit: 900 });
      const v1 = await call('GET', `/api/v1/customers/${c.id}/history/1`, 'acmeAdmin');
      expect(v1.statusCode).toBe(200);
      expect(v1.json().data).toMatchObject({ version: 1, action: 'created', deleted: false });
      expect(v1.json().data.record).toMatchObject({ id: c.id, credit_limit: 700, name: c.name });
      expect(v1.json().data.record.phone).not.toContain('7946');
      expect(v1.json().data.record).not.toHaveProperty('internal_notes');
      expect(
        (await call('GET', `/api/v1/customers/${c.id}/history/2`, 'acmeAdmin')).json().data.record
          .credit_limit,
      ).toBe(900);
      for (const v of ['3', '0', 'abc', '99999999999'])
        expect((await call('GET', `/api/v1/customers/${c.id}/history/${v}`, 'acmeAdmin')).statusCode).toBe(
          404,
        );
    });
  });

  describe('tenant isolation', () => {
    it("should answer 404 for another tenant's record on every history route, and change nothing", async () => {
      const c = await newCustomer();
      const before = (await call('GET', `/api/v1/customers/${c.id}`, 'acmeAdmin')).json().data as Json;
      const attempts = [
        await call('GET', `/api/v1/customers/${c.id}/history`, 'globexAdmin'),
        await call('GET', `/api/v1/customers/${c.id}/history/1`, 'globexAdmin'),
        await call('POST', `/api/v1/customers/${c.id}/restore`, 'globexAdmin', {
          version: 1,
          lastModified: before.lastModified,
        }),
        await call('POST', `/api/v1/customers/${c.id}/restore`, 'globexAdmin', { undelete: true }),
      ];
      for (const res of attempts) {
        expect(res.statusCode).toBe(404);
        expect(res.json().error.code).toBe('NOT_FOUND');
      }
      const after = (await call('GET', `/api/v1/customers/${c.id}`, 'acmeAdmin')).json().data as Json;
      expect(after).toEqual(before);
      // A deleted record of the other tenant: its history and its undelete are 404 too.
      expect((await call('DELETE', `/api/v1/customers/${c.id}`, 'acmeAdmin')).statusCode).toBe(200);
      for (const res of [
        await call('GET', `/api/v1/customers/${c.id}/history`, 'globexAdmin'),
        await call('POST', `/api/v1/customers/${c.id}/restore`, 'globexAdmin', { undelete: true }),
      ])
        expect(res.statusCode).toBe(404);
      expect((await call('GET', `/api/v1/customers/${c.id}`, 'acmeAdmin')).statusCode).toBe(404);
      expect((await call('GET', `/api/v1/customers/${c.id}/history`, 'acmeAdmin')).json().data.total).toBe(2);
    });
  });

  describe('the read scope decides', () => {
    it("should answer 404 once the profile's row filter no longer shows the record", async () => {
      // A copy of customers whose profile shows gold customers only.
      const customers = DEMO_PROFILES.find((p) => p.code === 'customers')!;
      await copyEntityConfig(ds, 'customers', 'gold_customers', {
        profile: {
          prf_mode_code: 'FULL',
          prf_policy: JSON.stringify({ ...customers.policy, rowFilters: { where: "tier = 'gold'" } }),
        },
      });
      seq += 1;
      const created = await call('POST', '/api/v1/gold_customers', 'acmeAdmin', {
        name: `Gold ${seq}`,
        email: `gold${seq}-${Date.now()}@acme.example`,
        tier: 'gold',
      });
      expect(created.statusCode).toBe(201);
      const c = created.json().data as Json;
      expect((await call('GET', `/api/v1/gold_customers/${c.id}/history`, 'acmeAdmin')).statusCode).toBe(200);
      const moved = await call('PUT', `/api/v1/gold_customers/${c.id}`, 'acmeAdmin', {
        tier: 'silver',
        lastModified: c.lastModified,
      });
      expect(moved.statusCode).toBe(200);
      for (const url of [
        `/api/v1/gold_customers/${c.id}/history`,
        `/api/v1/gold_customers/${c.id}/history/1`,
      ])
        expect((await call('GET', url, 'acmeAdmin')).statusCode).toBe(404);
      const restore = await call('POST', `/api/v1/gold_customers/${c.id}/restore`, 'acmeAdmin', {
        version: 1,
        lastModified: moved.json().data.lastModified,
      });
      expect(restore.statusCode).toBe(404);
    });

    it('should never show a secret: a new password leaves no trace in the history', async () => {
      const created = await call('POST', '/api/v1/users', 'acmeRoot', {
        email_id: `history.user${Date.now()}@acme.test`,
        first_name: 'H',
        role_id: 2,
        password: 'a-long-Passw0rd',
      });
      expect(created.statusCode).toBe(201);
      const u = created.json().data as Json;
      const changed = await call('PUT', `/api/v1/users/${u.id}`, 'acmeRoot', {
        password: 'another-long-Passw0rd',
        first_name: 'Hh',
        lastModified: u.lastModified,
      });
      expect(changed.statusCode).toBe(200);
      const history = await call('GET', `/api/v1/users/${u.id}/history`, 'acmeRoot');
      expect(history.statusCode).toBe(200);
      const text = JSON.stringify(history.json().data);
      expect(text).not.toMatch(/password|argon|\[changed\]/i);
      expect(history.json().data.entries[0].changes).toEqual([
        { field: 'first_name', before: 'H', after: 'Hh' },
      ]);
      const v1 = await call('GET', `/api/v1/users/${u.id}/history/1`, 'acmeRoot');
      expect(JSON.stringify(v1.json().data)).not.toMatch(/password|argon/i);
    });
  });

  describe('POST …/{id}/restore {version, lastModified}', () => {
    it('should write the version back as an update with its own restored entry; masked fields skipped', async () => {
      const c = await newCustomer({ credit_limit: 100, tier: 'bronze' });
      const changed = await update(c.id, { credit_limit: 5000, tier: 'gold', phone: '+1 555 0000' });
      const res = await call('POST', `/api/v1/customers/${c.id}/restore`, 'acmeAdmin', {
        version: 1,
        lastModified: changed.lastModified,
      });
      expect(res.statusCode).toBe(200);
      const data = res.json().data as Json;
      expect(data.restoredVersion).toBe(1);
      expect(data.skipped).toEqual(['phone']);
      expect(data.record).toMatchObject({ id: c.id, credit_limit: 100, tier: 'bronze' });
      expect(res.headers.etag).toBe(`"${data.record.lastModified}"`);
      const read = (await call('GET', `/api/v1/customers/${c.id}`, 'acmeAdmin')).json().data as Json;
      expect(read).toEqual(data.record);
      const history = (await call('GET', `/api/v1/customers/${c.id}/history`, 'acmeAdmin')).json()
        .data as Json;
      expect(history.entries[0]).toMatchObject({ version: 3, action: 'restored' });
      expect(history.entries[0].changes.map((ch: Json) => String(ch.field)).sort()).toEqual([
        'credit_limit',
        'tier',
      ]);
    });

    it('should refuse a stale token with 409 and change nothing', async () => {
      const c = await newCustomer({ credit_limit: 100 });
      await update(c.id, { credit_limit: 200 });
      const res = await call('POST', `/api/v1/customers/${c.id}/restore`, 'acmeAdmin', {
        version: 1,
        lastModified: c.lastModified,
      });
      expect(res.statusCode).toBe(409);
      expect(res.json().error.code).toBe('CONFLICT');
      expect((await call('GET', `/api/v1/customers/${c.id}`, 'acmeAdmin')).json().data.credit_limit).toBe(
        200,
      );
      expect((await call('GET', `/api/v1/customers/${c.id}/history`, 'acmeAdmin')).json().data.total).toBe(2);
    });

    it('should refuse a reader without update (403) and bad bodies (400)', async () => {
      const c = await newCustomer();
      const viewer = await call('POST', `/api/v1/customers/${c.id}/restore`, 'acmeViewer', {
        version: 1,
        lastModified: c.lastModified,
      });
      expect(viewer.statusCode).toBe(403);
      for (const body of [
        { version: 'one', lastModified: c.lastModified },
        { version: 1 },
        { undelete: false },
        { undelete: true, version: 1 },
        { version: 1, lastModified: c.lastModified, extra: 1 },
        [1],
      ]) {
        const res = await call('POST', `/api/v1/customers/${c.id}/restore`, 'acmeAdmin', body);
        expect(res.statusCode).toBe(400);
        expect(res.json().error.code).toBe('VALIDATION_ERROR');
      }
    });
  });

  describe('POST …/{id}/restore {undelete: true}', () => {
    it('should bring back the record and what its cascade deleted in the same delete', async () => {
      const c = await newCustomer();
      const orders = [await newOrder(c.id), await newOrder(c.id)];
      const otherCustomer = await newCustomer();
      const unrelated = await newOrder(otherCustomer.id);
      expect((await call('DELETE', `/api/v1/customers/${c.id}?cascade=true`, 'acmeAdmin')).statusCode).toBe(
        200,
      );
      expect((await call('DELETE', `/api/v1/orders/${unrelated}`, 'acmeAdmin')).statusCode).toBe(200);
      expect((await call('GET', `/api/v1/customers/${c.id}`, 'acmeAdmin')).statusCode).toBe(404);
      // A deleted record's history stays readable.
      const history = (await call('GET', `/api/v1/customers/${c.id}/history`, 'acmeAdmin')).json()
        .data as Json;
      expect(history.entries[0]).toMatchObject({ action: 'deleted', changes: [] });
      const asDeleted = await call(
        'GET',
        `/api/v1/customers/${c.id}/history/${history.entries[0].version}`,
        'acmeAdmin',
      );
      expect(asDeleted.json().data).toMatchObject({ deleted: true, record: { id: c.id, name: c.name } });
      // A version restore of a deleted record is refused: undelete first.
      const early = await call('POST', `/api/v1/customers/${c.id}/restore`, 'acmeAdmin', {
        version: 1,
        lastModified: null,
      });
      expect(early.statusCode).toBe(409);

      const res = await call('POST', `/api/v1/customers/${c.id}/restore`, 'acmeAdmin', { undelete: true });
      expect(res.statusCode).toBe(200);
      const data = res.json().data as Json;
      expect(data.undeleted).toEqual([
        { entity: 'customers', id: c.id },
        ...orders.map((id) => ({ entity: 'orders', id })),
      ]);
      expect(data.record).toMatchObject({ id: c.id, name: c.name });
      expect((await call('GET', `/api/v1/customers/${c.id}`, 'acmeAdmin')).statusCode).toBe(200);
      for (const id of orders)
        expect((await call('GET', `/api/v1/orders/${id}`, 'acmeAdmin')).statusCode).toBe(200);
      // Deleted in another delete: stays deleted.
      expect((await call('GET', `/api/v1/orders/${unrelated}`, 'acmeAdmin')).statusCode).toBe(404);
      const after = (await call('GET', `/api/v1/customers/${c.id}/history`, 'acmeAdmin')).json().data as Json;
      expect(after.entries[0]).toMatchObject({ action: 'restored', version: history.entries[0].version + 1 });
      const orderHistory = (await call('GET', `/api/v1/orders/${orders[0]}/history`, 'acmeAdmin')).json()
        .data as Json;
      expect(orderHistory.entries.map((e: Json) => String(e.action))).toEqual([
        'restored',
        'deleted',
        'created',
      ]);
      // A live record cannot be undeleted.
      expect(
        (await call('POST', `/api/v1/customers/${c.id}/restore`, 'acmeAdmin', { undelete: true })).statusCode,
      ).toBe(409);
    });

    it('should refuse with 409 naming the clash when a live record has taken a unique value', async () => {
      const c = await newCustomer();
      expect((await call('DELETE', `/api/v1/customers/${c.id}`, 'acmeAdmin')).statusCode).toBe(200);
      const taker = await newCustomer({ email: c.email });
      const res = await call('POST', `/api/v1/customers/${c.id}/restore`, 'acmeAdmin', { undelete: true });
      expect(res.statusCode).toBe(409);
      expect(res.json().error).toMatchObject({
        code: 'CONFLICT',
        details: { clashes: [{ entity: 'customers', id: c.id, field: 'email' }] },
      });
      expect((await call('GET', `/api/v1/customers/${c.id}`, 'acmeAdmin')).statusCode).toBe(404);
      expect((await call('GET', `/api/v1/customers/${taker.id}`, 'acmeAdmin')).statusCode).toBe(200);
      const stored = await ds
        .createQueryBuilder()
        .select('COUNT(*)', 'n')
        .from('app_audit_logs', 'a')
        .where('a.aud_record_id = :id AND a.aud_entity_code = :code', { id: String(c.id), code: 'customers' })
        .getRawOne<{ n: unknown }>();
      expect(Number(stored?.n)).toBe(2);
    });

    it('should refuse with 409 an order whose customer is still deleted, and bring it back after', async () => {
      const c = await newCustomer();
      const order = await newOrder(c.id);
      expect((await call('DELETE', `/api/v1/orders/${order}`, 'acmeAdmin')).statusCode).toBe(200);
      expect((await call('DELETE', `/api/v1/customers/${c.id}`, 'acmeAdmin')).statusCode).toBe(200);
      const orphan = await call('POST', `/api/v1/orders/${order}/restore`, 'acmeAdmin', { undelete: true });
      expect(orphan.statusCode).toBe(409);
      expect(orphan.json().error.details).toEqual({
        missingReferences: [{ entity: 'orders', id: order, field: 'customer_id', references: 'customers' }],
      });
      expect((await call('GET', `/api/v1/orders/${order}`, 'acmeAdmin')).statusCode).toBe(404);
      const customer = await call('POST', `/api/v1/customers/${c.id}/restore`, 'acmeAdmin', {
        undelete: true,
      });
      expect(customer.json().data.undeleted).toEqual([{ entity: 'customers', id: c.id }]);
      const back = await call('POST', `/api/v1/orders/${order}/restore`, 'acmeAdmin', { undelete: true });
      expect(back.statusCode).toBe(200);
      expect((await call('GET', `/api/v1/orders/${order}`, 'acmeAdmin')).statusCode).toBe(200);
    });

    it('should need delete permission', async () => {
      const c = await newCustomer();
      expect((await call('DELETE', `/api/v1/customers/${c.id}`, 'acmeAdmin')).statusCode).toBe(200);
      const res = await call('POST', `/api/v1/customers/${c.id}/restore`, 'acmeViewer', { undelete: true });
      expect(res.statusCode).toBe(403);
    });
  });
});
