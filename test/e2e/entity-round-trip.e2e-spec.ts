import type { DataSource } from 'typeorm';
import { DatabaseService } from '../../src/database/database.service';
import { authHeaders, signin, TENANT } from '../support/auth';
import { startTestApp, TestApp } from '../support/test-app';

type Json = Record<string, any>;

/**
 * The ordinary client flow (issue 8, D42-D45): read a record, change a field, save it — with the
 * concurrency token the read gave and nothing else. The round trips speak HTTP only; the database
 * is read only to prove what a masked read cannot show (that the stored value survived).
 */
describe('Read-edit-save round trip (D42-D45)', () => {
  let t: TestApp;
  let ds: DataSource;
  const token: Record<string, string> = {};
  const tenantOf: Record<string, string> = {
    acmeAdmin: TENANT.acme,
    acmeRoot: TENANT.acme,
    globexAdmin: TENANT.globex,
  };

  beforeAll(async () => {
    t = await startTestApp({ label: 'round-trip' });
    ds = t.app.get(DatabaseService).dataSource;
    token.acmeAdmin = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
    token.acmeRoot = (await signin(t.app, TENANT.acme, 'root@acme.test')).token;
    token.globexAdmin = (await signin(t.app, TENANT.globex, 'admin@globex.test')).token;
  });

  afterAll(async () => {
    await t?.close();
  });

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

  const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

  async function storedPhone(id: number): Promise<unknown> {
    const row = await ds
      .createQueryBuilder()
      .select('c.cus_phone', 'phone')
      .from('demo_customers', 'c')
      .where('c.cus_id = :id', { id })
      .getRawOne<{ phone: unknown }>();
    return row?.phone;
  }

  describe('customers (masked phone, hidden notes)', () => {
    it('should give every listed record a lastModified token', async () => {
      const res = await call('GET', '/api/v1/customers?limit=5', 'acmeAdmin');
      expect(res.statusCode).toBe(200);
      const records = res.json().data.records as Json[];
      expect(records).toHaveLength(5);
      for (const r of records) expect(r.lastModified).toMatch(ISO);
    });

    it('should save a record read from the list, unchanged but for one field, and keep the masked phone', async () => {
      const list = (await call('GET', '/api/v1/customers?limit=10&skip=3', 'acmeAdmin')).json().data
        .records as Json[];
      const picked = list[0];
      const phoneBefore = await storedPhone(picked.id);
      expect(picked.phone).toMatch(/^\*+\d{4}$/);

      const got = await call('GET', `/api/v1/customers/${picked.id}`, 'acmeAdmin');
      expect(got.statusCode).toBe(200);
      const record = got.json().data as Json;
      expect(record).toEqual(picked);
      expect(got.headers.etag).toBe(`"${record.lastModified}"`);

      const edited = { ...record, credit_limit: record.credit_limit + 250 };
      const saved = await call('PUT', `/api/v1/customers/${record.id}`, 'acmeAdmin', edited);
      expect(saved.statusCode).toBe(200);
      const answer = saved.json().data as Json;
      // D43: the answer is the whole record as a read shows it.
      expect(Object.keys(answer).sort()).toEqual(Object.keys(record).sort());
      expect(answer).toEqual({
        ...record,
        credit_limit: edited.credit_limit,
        lastModified: answer.lastModified,
      });
      expect(answer.lastModified).toMatch(ISO);
      expect(Date.parse(answer.lastModified)).toBeGreaterThan(Date.parse(record.lastModified));
      expect(saved.headers.etag).toBe(`"${answer.lastModified}"`);

      const again = (await call('GET', `/api/v1/customers/${record.id}`, 'acmeAdmin')).json().data as Json;
      expect(again).toEqual(answer);
      // The masked form sent back was ignored: the real phone is still stored.
      expect(await storedPhone(record.id)).toBe(phoneBefore);
    });

    it('should save with If-Match taken from the ETag instead of a body token', async () => {
      const got = await call('GET', '/api/v1/customers/7', 'acmeAdmin');
      const { lastModified, ...fields } = got.json().data as Json;
      expect(lastModified).toMatch(ISO);
      const res = await call(
        'PUT',
        '/api/v1/customers/7',
        'acmeAdmin',
        { ...fields, name: `${fields.name} (edited)` },
        { 'if-match': got.headers.etag as string },
      );
      expect(res.statusCode).toBe(200);
      expect(res.json().data.name).toBe(`${fields.name} (edited)`);
      expect(res.json().data.phone).toBe(fields.phone);
    });

    it("should refuse a second client's save made with a stale token (409 with the current token)", async () => {
      const first = (await call('GET', '/api/v1/customers/8', 'acmeAdmin')).json().data as Json;
      const second = { ...first };
      const ok = await call('PUT', '/api/v1/customers/8', 'acmeAdmin', { ...first, tier: 'gold' });
      expect(ok.statusCode).toBe(200);
      const stale = await call('PUT', '/api/v1/customers/8', 'acmeAdmin', { ...second, tier: 'silver' });
      expect(stale.statusCode).toBe(409);
      expect(stale.json().error.code).toBe('CONFLICT');
      expect(stale.json().error.details.lastModified).toBe(ok.json().data.lastModified);
      const now = (await call('GET', '/api/v1/customers/8', 'acmeAdmin')).json().data as Json;
      expect(now.tier).toBe('gold');
    });

    it('should answer 304 to If-None-Match with the current ETag, and 200 after a change', async () => {
      const got = await call('GET', '/api/v1/customers/9', 'acmeAdmin');
      const etag = got.headers.etag as string;
      const cached = await call('GET', '/api/v1/customers/9', 'acmeAdmin', undefined, {
        'if-none-match': etag,
      });
      expect(cached.statusCode).toBe(304);
      expect(cached.body).toBe('');
      expect(cached.headers.etag).toBe(etag);
      const weak = await call('GET', '/api/v1/customers/9', 'acmeAdmin', undefined, {
        'if-none-match': `"x", W/${etag}`,
      });
      expect(weak.statusCode).toBe(304);
      const record = got.json().data as Json;
      await call('PUT', '/api/v1/customers/9', 'acmeAdmin', { ...record, credit_limit: 1 });
      const fresh = await call('GET', '/api/v1/customers/9', 'acmeAdmin', undefined, {
        'if-none-match': etag,
      });
      expect(fresh.statusCode).toBe(200);
      expect(fresh.json().data.credit_limit).toBe(1);
    });

    it('should write a new clear value of a masked field, and refuse a changed read-only id', async () => {
      const record = (await call('GET', '/api/v1/customers/10', 'acmeAdmin')).json().data as Json;
      const res = await call('PUT', '/api/v1/customers/10', 'acmeAdmin', {
        ...record,
        phone: '+1 555 777 1234',
      });
      expect(res.statusCode).toBe(200);
      expect(res.json().data.phone).toMatch(/^\*+1234$/);
      expect(await storedPhone(10)).toBe('+1 555 777 1234');
      const moved = await call('PUT', '/api/v1/customers/10', 'acmeAdmin', {
        ...res.json().data,
        id: 11,
      });
      expect(moved.statusCode).toBe(400);
      expect(moved.json().error.details).toEqual([{ field: 'id', error: 'is read-only' }]);
    });

    it('should create and answer the whole record as a read shows it', async () => {
      const res = await call('POST', '/api/v1/customers', 'acmeAdmin', {
        name: 'Round Trip',
        email: 'Round.Trip@Acme.Example',
        phone: '+44 20 7946 0999',
        tier: 'silver',
        credit_limit: 10,
        internal_notes: 'never shown',
      });
      expect(res.statusCode).toBe(201);
      const created = res.json().data as Json;
      const read = (await call('GET', `/api/v1/customers/${created.id}`, 'acmeAdmin')).json().data as Json;
      expect(created).toEqual(read);
      expect(created.email).toBe('round.trip@acme.example');
      expect(created).not.toHaveProperty('internal_notes');
    });
  });

  describe('orders and users', () => {
    it('should round-trip an order read through /records', async () => {
      const res = await call('GET', '/api/v1/records?entity=orders&limit=3&skip=2', 'acmeAdmin');
      expect(res.statusCode).toBe(200);
      const body = res.json();
      expect(body.count).toBe(3);
      expect(body.total).toBe(120);
      const order = body.data[0] as Json;
      expect(order.lastModified).toMatch(ISO);
      const saved = await call('PUT', `/api/v1/orders/${order.id}`, 'acmeAdmin', { ...order, amount: 42.5 });
      expect(saved.statusCode).toBe(200);
      expect(saved.json().data).toMatchObject({ ...order, amount: 42.5, lastModified: expect.any(String) });
    });

    it('should round-trip a user read through style 1 (system admin)', async () => {
      const res = await call('GET', '/api/entity/users/get?ten_id=1&limit=2', 'acmeRoot');
      expect(res.statusCode).toBe(200);
      expect(res.json().count).toBe(2);
      const user = res.json().data[0] as Json;
      expect(user).not.toHaveProperty('password_hash');
      const saved = await call('PUT', `/api/v1/users/${user.id}`, 'acmeRoot', {
        ...user,
        last_name: 'Saved',
      });
      expect(saved.statusCode).toBe(200);
      expect(saved.json().data).toEqual({ ...user, last_name: 'Saved', lastModified: expect.any(String) });
    });
  });

  describe('a password change through the users entity (D46)', () => {
    it("should revoke the user's older tokens, keep newer ones, and audit the change without the value", async () => {
      const viewer = await signin(t.app, TENANT.acme, 'viewer@acme.test');
      const old = viewer.token;
      const profile = (token: string) =>
        t.app.inject({
          method: 'GET',
          url: '/api/v1/auth/profile',
          headers: authHeaders(TENANT.acme, token),
        });
      expect((await profile(old)).statusCode).toBe(200);
      const user = (await call('GET', `/api/v1/users/${viewer.body.data.user_id}`, 'acmeRoot')).json()
        .data as Json;
      const res = await call('PUT', `/api/v1/users/${user.id}`, 'acmeRoot', {
        ...user,
        password: 'a-brand-new-Passw0rd',
      });
      expect(res.statusCode).toBe(200);
      expect(res.json().data).not.toHaveProperty('password');
      expect(res.json().data).not.toHaveProperty('password_hash');
      const refused = await profile(old);
      expect(refused.statusCode).toBe(401);
      expect(refused.json().error.code).toBe('TOKEN_REVOKED');
      // A sign-in right after the change (the same second included) is not affected.
      const fresh = await signin(t.app, TENANT.acme, 'viewer@acme.test', 'a-brand-new-Passw0rd');
      expect(fresh.status).toBe(200);
      expect((await profile(fresh.token)).statusCode).toBe(200);
      // The admin's own token was not touched.
      expect((await call('GET', '/api/v1/customers/1', 'acmeRoot')).statusCode).toBe(200);

      const audit = await ds
        .createQueryBuilder()
        .select('a.aud_before', 'before')
        .addSelect('a.aud_after', 'after')
        .from('app_audit_logs', 'a')
        .where('a.aud_entity_code = :e AND a.aud_record_id = :id AND a.aud_event = :ev', {
          e: 'users',
          id: String(user.id),
          ev: 'entity.updated',
        })
        .orderBy('a.aud_id', 'DESC')
        .getRawOne<{ before: string; after: string }>();
      const before = JSON.parse(audit!.before) as Json;
      const after = JSON.parse(audit!.after) as Json;
      expect(after).toMatchObject({ password: '[changed]' });
      expect(before).not.toHaveProperty('password');
      expect(JSON.stringify([before, after])).not.toMatch(/a-brand-new|argon2/);
    });

    it("should revoke the user's older tokens when the user's role changes", async () => {
      const viewer = await signin(t.app, TENANT.acme, 'viewer@acme.test', 'a-brand-new-Passw0rd');
      const user = (await call('GET', `/api/v1/users/${viewer.body.data.user_id}`, 'acmeRoot')).json()
        .data as Json;
      const roles = (await call('GET', '/api/v1/roles?limit=50', 'acmeRoot')).json().data.records as Json[];
      const admin = roles.find((r) => r.code === 'ADMIN')!;
      const profile = (token: string) =>
        t.app.inject({
          method: 'GET',
          url: '/api/v1/auth/profile',
          headers: authHeaders(TENANT.acme, token),
        });
      const moved = await call('PUT', `/api/v1/users/${user.id}`, 'acmeRoot', { ...user, role_id: admin.id });
      expect(moved.statusCode).toBe(200);
      const refused = await profile(viewer.token);
      expect(refused.statusCode).toBe(401);
      expect(refused.json().error.code).toBe('TOKEN_REVOKED');
      const again = await signin(t.app, TENANT.acme, 'viewer@acme.test', 'a-brand-new-Passw0rd');
      expect((await profile(again.token)).json().data.role_code).toBe('ADMIN');
      // Back to VIEWER for the other tests.
      const current = (await call('GET', `/api/v1/users/${user.id}`, 'acmeRoot')).json().data as Json;
      expect(
        (await call('PUT', `/api/v1/users/${user.id}`, 'acmeRoot', { ...current, role_id: user.role_id }))
          .statusCode,
      ).toBe(200);
    });

    it('should revoke nothing when a users write carries no password', async () => {
      const viewer = await signin(t.app, TENANT.acme, 'viewer@acme.test', 'a-brand-new-Passw0rd');
      const user = (await call('GET', `/api/v1/users/${viewer.body.data.user_id}`, 'acmeRoot')).json()
        .data as Json;
      const res = await call('PUT', `/api/v1/users/${user.id}`, 'acmeRoot', { ...user, first_name: 'Vi' });
      expect(res.statusCode).toBe(200);
      const profile = await t.app.inject({
        method: 'GET',
        url: '/api/v1/auth/profile',
        headers: authHeaders(TENANT.acme, viewer.token),
      });
      expect(profile.statusCode).toBe(200);
    });
  });

  describe('/records and style 1 (D28)', () => {
    it('should refuse another tenant in /records ten_id as style 1 does (403)', async () => {
      for (const url of ['/api/v1/records?entity=customers&ten_id=2', '/api/entity/customers/get?ten_id=2']) {
        const res = await call('GET', url, 'acmeAdmin');
        expect({ url, status: res.statusCode, code: res.json().error?.code }).toEqual({
          url,
          status: 403,
          code: 'FORBIDDEN',
        });
      }
      const own = await call('GET', '/api/v1/records?entity=customers&ten_id=1&limit=1', 'acmeAdmin');
      expect(own.statusCode).toBe(200);
    });

    it('should page with limit and skip and answer count and total', async () => {
      for (const url of ['/api/v1/records?entity=customers', '/api/entity/customers/get?ten_id=1']) {
        const all = (await call('GET', `${url}&limit=500`, 'acmeAdmin')).json();
        expect(all.total).toBeGreaterThanOrEqual(50);
        expect(all.count).toBe(all.total);
        expect(all.data).toHaveLength(all.total);
        const page = (await call('GET', `${url}&limit=10&skip=5&sortBy=id`, 'acmeAdmin')).json();
        expect(page.count).toBe(10);
        expect(page.total).toBe(all.total);
        expect(page.data.map((r: Json) => r.id as number)).toEqual(
          [...all.data.map((r: Json) => r.id as number)].sort((a, b) => a - b).slice(5, 15),
        );
      }
    });
  });

  describe('query parameters', () => {
    it('should accept sortOrder in any case', async () => {
      const lower = (
        await call('GET', '/api/v1/customers?sortBy=id&sortOrder=desc&limit=3', 'acmeAdmin')
      ).json();
      for (const order of ['DESC', 'Desc']) {
        const res = await call('GET', `/api/v1/customers?sortBy=id&sortOrder=${order}&limit=3`, 'acmeAdmin');
        expect(res.statusCode).toBe(200);
        expect(res.json().data.records).toEqual(lower.data.records);
      }
      expect((await call('GET', '/api/v1/customers?sortOrder=ASC', 'acmeAdmin')).statusCode).toBe(200);
      expect((await call('GET', '/api/v1/customers?sortOrder=up', 'acmeAdmin')).statusCode).toBe(400);
    });

    it('should compare e-mail filters case-blind on every dialect', async () => {
      const res = await call(
        'GET',
        '/api/v1/customers?filters%5Bemail%5D=CUSTOMER2%40Acme.Example',
        'acmeAdmin',
      );
      expect(res.statusCode).toBe(200);
      expect(res.json().data.records.map((r: Json) => r.email as string)).toEqual(['customer2@acme.example']);
    });
  });

  describe('out-of-range ids and integers (D45)', () => {
    it.each(['2147483648', '9999999999', '0', '-1', '99999999999999999999'])(
      'should answer 404 for id %s on GET, PUT and DELETE',
      async (id) => {
        for (const method of ['GET', 'PUT', 'DELETE'] as const) {
          const res = await call(
            method,
            `/api/v1/customers/${id}`,
            'acmeAdmin',
            method === 'PUT'
              ? {
                  name: 'x',
                  lastModified: '2026-01-01T00:00:00.000Z',
                }
              : undefined,
          );
          expect({ method, status: res.statusCode, code: res.json().error.code }).toEqual({
            method,
            status: 404,
            code: 'NOT_FOUND',
          });
        }
      },
    );

    it.each(['2147483648', '9999999999', '-2147483649', '1000000000000000'])(
      'should answer 400 naming the field for integer filter value %s',
      async (value) => {
        const res = await call('GET', `/api/v1/orders?filters%5Bcustomer_id%5D=${value}`, 'acmeAdmin');
        expect(res.statusCode).toBe(400);
        expect(res.json().error.details).toEqual([
          { field: 'filters[customer_id]', error: expect.stringMatching(/out of range|must be an integer/) },
        ]);
      },
    );

    it('should accept the largest INT as a filter and find nothing', async () => {
      const res = await call('GET', '/api/v1/orders?filters%5Bcustomer_id%5D=2147483647', 'acmeAdmin');
      expect(res.statusCode).toBe(200);
      expect(res.json().data.total).toBe(0);
    });

    it.each([2147483648, 9999999999, -2147483649])(
      'should answer 400 naming the field for a body integer %s',
      async (value) => {
        const res = await call('POST', '/api/v1/orders', 'acmeAdmin', { customer_id: value, amount: 1 });
        expect(res.statusCode).toBe(400);
        expect(res.json().error.details).toContainEqual({
          field: 'customer_id',
          error: expect.stringMatching(/out of range/),
        });
      },
    );
  });

  describe('a row never written by the service (last_modified NULL)', () => {
    it('should show lastModified null and demand exactly that token, never skip the check', async () => {
      await ds
        .createQueryBuilder()
        .update('demo_customers')
        .set({ cus_last_modified: null })
        .where('cus_id = :id', { id: 12 })
        .execute();
      const got = await call('GET', '/api/v1/customers/12', 'acmeAdmin');
      expect(got.statusCode).toBe(200);
      const record = got.json().data as Json;
      expect(record.lastModified).toBeNull();
      expect(got.headers.etag).toBeUndefined();
      const guessed = await call('PUT', '/api/v1/customers/12', 'acmeAdmin', {
        name: 'Guess',
        lastModified: '2026-01-01T00:00:00.000Z',
      });
      expect(guessed.statusCode).toBe(409);
      const saved = await call('PUT', '/api/v1/customers/12', 'acmeAdmin', { ...record, name: 'Known' });
      expect(saved.statusCode).toBe(200);
      expect(saved.json().data.lastModified).toMatch(ISO);
    });
  });
});
