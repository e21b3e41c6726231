import type { DataSource } from 'typeorm';
import { CacheService } from '../../src/cache/cache.service';
import { CollectionEventsService } from '../../src/cache/collection-events';
import { DatabaseService } from '../../src/database/database.service';
import { authHeaders, signin, TENANT } from '../support/auth';
import { startTestApp, TestApp } from '../support/test-app';

type Json = Record<string, any>;
interface RowResult {
  index: number;
  id: number | null;
  status: number;
  error?: Json;
  lastModified?: string;
}

/**
 * D51: `POST /api/v1/{entity_code}/bulk` — a result per row that is exactly the single route's status
 * and error, all-or-none in one transaction, one invalidation and one batch of events per request,
 * the row limit, bad bodies, tenant isolation, the access decision and masked echoes (D43).
 */
describe('Bulk writes (D51)', () => {
  let t: TestApp;
  let ds: DataSource;
  const token: Record<string, string> = {};
  let globexCustomerIds: number[];

  beforeAll(async () => {
    t = await startTestApp({ label: 'entity-bulk', env: { BULK_MAX_ROWS: '25' } });
    ds = t.app.get(DatabaseService).dataSource;
    token.acmeAdmin = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
    token.acmeViewer = (await signin(t.app, TENANT.acme, 'viewer@acme.test')).token;
    token.globexAdmin = (await signin(t.app, TENANT.globex, 'admin@globex.test')).token;
    globexCustomerIds = (
      await ds
        .createQueryBuilder()
        .select('c.cus_id', 'id')
        .from('demo_customers', 'c')
        .where('c.cus_tenant_id = :tenant', { tenant: 2 })
        .orderBy('c.cus_id')
        .getRawMany<{ id: unknown }>()
    ).map((r) => Number(r.id));
  });

  afterAll(async () => {
    await t?.close();
  });

  const tenantOf: Record<string, string> = {
    acmeAdmin: TENANT.acme,
    acmeViewer: TENANT.acme,
    globexAdmin: TENANT.globex,
  };
  const call = (method: 'GET' | 'POST' | 'PUT', url: string, who: string, payload?: unknown) =>
    t.app.inject({
      method,
      url,
      headers: authHeaders(tenantOf[who], token[who]),
      ...(payload === undefined ? {} : { payload: payload as Json }),
    });
  const bulk = (payload: unknown, who = 'acmeAdmin', entity = 'customers') =>
    call('POST', `/api/v1/${entity}/bulk`, who, payload);

  async function snapshot(table: string, p: string): Promise<string> {
    const rows = await ds
      .createQueryBuilder()
      .select('r.*')
      .from(table, 'r')
      .orderBy(`r.${p}_id`)
      .getRawMany();
    return JSON.stringify(rows);
  }
  async function auditCount(): Promise<number> {
    const r = await ds
      .createQueryBuilder()
      .select('COUNT(*)', 'n')
      .from('app_audit_logs', 'a')
      .getRawOne<{ n: unknown }>();
    return Number(r?.n);
  }
  const read = async (id: number, who = 'acmeAdmin'): Promise<Json> => {
    const res = await call('GET', `/api/v1/customers/${id}`, who);
    expect(res.statusCode).toBe(200);
    return res.json().data as Json;
  };

  let serial = 0;
  const newCustomer = (extra: Json = {}): Json => ({
    name: `Bulk Test ${++serial}`,
    email: `bulk-test-${serial}@acme.example`,
    tier: 'silver',
    credit_limit: 1000,
    ...extra,
  });
  async function created(count: number): Promise<Json[]> {
    const res = await bulk({
      operation: 'create',
      records: Array.from({ length: count }, () => newCustomer()),
    });
    expect(res.statusCode).toBe(200);
    return Promise.all((res.json().data.results as Json[]).map((r) => read(r.id as number)));
  }

  describe('create', () => {
    it('should create every row and answer 201 per row with its id and lastModified', async () => {
      const records = [newCustomer(), newCustomer(), newCustomer()];
      const res = await bulk({ operation: 'create', records });
      expect(res.statusCode).toBe(200);
      const data = res.json().data as Json;
      expect(data).toMatchObject({ succeeded: 3, failed: 0 });
      expect(data.results.map((r: RowResult) => [r.index, r.status])).toEqual([
        [0, 201],
        [1, 201],
        [2, 201],
      ]);
      for (const [i, r] of (data.results as Json[]).entries()) {
        const record = await read(r.id as number);
        expect(record).toMatchObject({ name: records[i].name, email: records[i].email });
        expect(record.lastModified).toBe(r.lastModified);
      }
    });

    it('should let exactly one of two concurrent bulk creates take a unique value both carry', async () => {
      const shared = newCustomer();
      const first = [shared, newCustomer(), newCustomer()];
      const second = [newCustomer(), { ...newCustomer(), email: shared.email.toUpperCase() }, newCustomer()];
      const [a, b] = await Promise.all([
        bulk({ operation: 'create', records: first }),
        bulk({ operation: 'create', records: second }),
      ]);
      expect([a.statusCode, b.statusCode]).toEqual([200, 200]);
      const statuses = [a, b].map((r) => (r.json().data.results as RowResult[]).map((x) => x.status));
      // Every other row stands; of the two rows with the shared address (compared case-blind), one
      // is created and the other refused as a single create would be: 400, the e-mail is taken.
      expect([statuses[0][0], statuses[1][1]].sort()).toEqual([201, 400]);
      expect([statuses[0][1], statuses[0][2], statuses[1][0], statuses[1][2]]).toEqual([201, 201, 201, 201]);
    });

    it("should give each failing row the single route's status and error and write the others", async () => {
      const taken = newCustomer();
      const single = await call('POST', '/api/v1/customers', 'acmeAdmin', { ...taken, tier: 'platinum' });
      const res = await bulk({
        operation: 'create',
        records: [
          taken,
          { ...newCustomer(), tier: 'platinum' },
          { ...newCustomer(), email: taken.email },
          newCustomer(),
        ],
      });
      expect(res.statusCode).toBe(200);
      const data = res.json().data as Json;
      expect(data).toMatchObject({ succeeded: 2, failed: 2 });
      expect(data.results.map((r: RowResult) => r.status)).toEqual([201, 400, 400, 201]);
      // Exactly the single route's answer for the same mistake.
      expect(single.statusCode).toBe(400);
      expect(data.results[1].error).toEqual({
        code: single.json().error.code,
        message: single.json().error.message,
        details: single.json().error.details,
      });
      // The row reusing the e-mail of an earlier row of the same request sees that row.
      expect(data.results[2].error.details).toEqual([
        { field: 'email', error: 'must be unique; the value is already used' },
      ]);
      expect(data.results[2].id).toBeNull();
    });
  });

  describe('update', () => {
    it('should update each row with its own token and answer 404, 409 and 400 for the rows that fail', async () => {
      const [a, b, c, d] = await created(4);
      // b is changed by someone else first: its token is stale.
      const other = await call('PUT', `/api/v1/customers/${b.id}`, 'acmeAdmin', {
        lastModified: b.lastModified,
        credit_limit: 1,
      });
      expect(other.statusCode).toBe(200);
      const audits = await auditCount();
      const res = await bulk({
        operation: 'update',
        records: [
          { id: a.id, lastModified: a.lastModified, tier: 'gold' },
          { id: b.id, lastModified: b.lastModified, tier: 'gold' },
          { id: c.id, lastModified: c.lastModified, credit_limit: -5 },
          { id: 999999, lastModified: d.lastModified, tier: 'gold' },
          { id: d.id, tier: 'gold' },
        ],
      });
      expect(res.statusCode).toBe(200);
      const data = res.json().data as Json;
      expect(data.results.map((r: RowResult) => r.status)).toEqual([200, 409, 400, 404, 400]);
      // An id that is not an integer ('abc') fails the whole request: bulk-row-ids.e2e-spec.ts.
      expect(data).toMatchObject({ succeeded: 1, failed: 4 });
      expect(data.results[1].error).toMatchObject({
        code: 'CONFLICT',
        details: { lastModified: other.json().data.lastModified },
      });
      expect(data.results[4].error.details).toEqual([
        { field: 'lastModified', error: 'is required (body lastModified or If-Match header)' },
      ]);
      expect((await read(a.id)).tier).toBe('gold');
      expect((await read(a.id)).lastModified).toBe(data.results[0].lastModified);
      expect((await read(b.id)).tier).toBe('silver');
      expect((await read(c.id)).credit_limit).toBe(1000);
      expect((await read(d.id)).tier).toBe('silver');
      // The audit rows are written together at the commit: the row that stood has its one.
      expect(await auditCount()).toBe(audits + 1);
      const last = await ds
        .createQueryBuilder()
        .select('a.aud_record_id', 'record')
        .addSelect('a.aud_event', 'event')
        .from('app_audit_logs', 'a')
        .orderBy('a.aud_id', 'DESC')
        .limit(1)
        .getRawOne<{ record: unknown; event: string }>();
      expect(last).toEqual({ record: String(a.id), event: 'entity.updated' });
    });

    it('should ignore masked values sent back as read (D43) and keep the stored phone', async () => {
      const [a] = await created(1);
      const stored = async () =>
        (
          await ds
            .createQueryBuilder()
            .select('c.cus_phone', 'phone')
            .from('demo_customers', 'c')
            .where('c.cus_id = :id', { id: a.id })
            .getRawOne<{ phone: string }>()
        )?.phone;
      await call('PUT', `/api/v1/customers/${a.id}`, 'acmeAdmin', {
        lastModified: a.lastModified,
        phone: '+1 555 0100 4242',
      });
      const record = await read(a.id);
      expect(record.phone).toMatch(/^\*+4242$/);
      const res = await bulk({ operation: 'update', records: [{ ...record, tier: 'gold' }] });
      expect(res.statusCode).toBe(200);
      expect(res.json().data.results[0].status).toBe(200);
      expect(await stored()).toBe('+1 555 0100 4242');
      expect((await read(a.id)).tier).toBe('gold');
    });

    it('should refuse the same id twice in one request (400) and change nothing', async () => {
      const [a] = await created(1);
      const before = await snapshot('demo_customers', 'cus');
      const res = await bulk({
        operation: 'update',
        records: [
          { id: a.id, lastModified: a.lastModified, tier: 'gold' },
          { id: a.id, lastModified: a.lastModified, tier: 'bronze' },
        ],
      });
      expect(res.statusCode).toBe(400);
      expect(res.json().error.details).toEqual([
        { field: 'records[1].id', error: 'names a record an earlier row names' },
      ]);
      expect(await snapshot('demo_customers', 'cus')).toBe(before);
    });
  });

  describe('delete', () => {
    it('should delete, answer 409 for a row with dependents and 404 for a missing one', async () => {
      const [a] = await created(1);
      const orders = await call('GET', '/api/v1/orders?limit=1', 'acmeAdmin');
      const parent = Number(orders.json().data.records[0].customer_id);
      const res = await bulk({ operation: 'delete', ids: [a.id, parent, 999999] });
      expect(res.statusCode).toBe(200);
      const data = res.json().data as Json;
      expect(data.results.map((r: RowResult) => r.status)).toEqual([200, 409, 404]);
      expect(data.results[1].error.details.dependentEntities[0].entity).toBe('orders');
      expect((await call('GET', `/api/v1/customers/${a.id}`, 'acmeAdmin')).statusCode).toBe(404);
      expect((await call('GET', `/api/v1/customers/${parent}`, 'acmeAdmin')).statusCode).toBe(200);
    });

    it('should cascade to the dependents with cascade: true', async () => {
      const [a] = await created(1);
      const order = await call('POST', '/api/v1/orders', 'acmeAdmin', {
        customer_id: a.id,
        amount: 10,
        status: 'new',
        ordered_at: '2026-11-01',
      });
      expect(order.statusCode).toBe(201);
      const res = await bulk({ operation: 'delete', ids: [String(a.id)], cascade: true });
      expect(res.statusCode).toBe(200);
      expect(res.json().data.results[0].status).toBe(200);
      expect((await call('GET', `/api/v1/orders/${order.json().data.id}`, 'acmeAdmin')).statusCode).toBe(404);
    });
  });

  describe('allOrNone', () => {
    it("should write nothing when a row fails and answer that row's 4xx with every row's result", async () => {
      const [a, b] = await created(2);
      const before = await snapshot('demo_customers', 'cus');
      const audits = await auditCount();
      const res = await bulk({
        operation: 'update',
        allOrNone: true,
        records: [
          { id: a.id, lastModified: a.lastModified, tier: 'gold' },
          { id: b.id, lastModified: '2020-01-01T00:00:00.000Z', tier: 'gold' },
        ],
      });
      expect(res.statusCode).toBe(409);
      const body = res.json();
      expect(body.success).toBe(false);
      expect(body.error.code).toBe('CONFLICT');
      expect(body.error.details.results.map((r: RowResult) => r.status)).toEqual([200, 409]);
      expect(body.error.details.results[0].lastModified).toBeUndefined();
      expect(await snapshot('demo_customers', 'cus')).toBe(before);
      expect(await auditCount()).toBe(audits);
    });

    it('should roll back creates too, and commit when every row succeeds', async () => {
      const before = await snapshot('demo_customers', 'cus');
      const bad = await bulk({
        operation: 'create',
        allOrNone: true,
        records: [newCustomer(), newCustomer({ credit_limit: -1 })],
      });
      expect(bad.statusCode).toBe(400);
      expect(bad.json().error.details.results.map((r: RowResult) => [r.status, r.id])).toEqual([
        [201, null],
        [400, null],
      ]);
      expect(await snapshot('demo_customers', 'cus')).toBe(before);
      const good = await bulk({
        operation: 'create',
        allOrNone: true,
        records: [newCustomer(), newCustomer()],
      });
      expect(good.statusCode).toBe(200);
      expect(good.json().data).toMatchObject({ succeeded: 2, failed: 0 });
    });
  });

  describe('one invalidation and one batch of events per request', () => {
    it('should drop the list keys once and publish the rows’ events in one batch', async () => {
      const rows = await created(5);
      const cache = t.app.get(CacheService);
      const events = t.app.get(CollectionEventsService);
      const drops = jest.spyOn(cache, 'deletePattern');
      const batches = jest.spyOn(events, 'publishAll');
      try {
        const res = await bulk({
          operation: 'update',
          records: rows.map((r) => ({ id: r.id, lastModified: r.lastModified, tier: 'gold' })),
        });
        expect(res.json().data.succeeded).toBe(5);
        expect(drops).toHaveBeenCalledTimes(1);
        expect(batches).toHaveBeenCalledTimes(1);
        const published = batches.mock.calls[0][0];
        expect(published.map((e) => e.id).sort()).toEqual(rows.map((r) => r.id as number).sort());
        expect(published.every((e) => e.type === 'updated' && e.entityCode === 'customers')).toBe(true);
      } finally {
        drops.mockRestore();
        batches.mockRestore();
      }
    });
  });

  describe('limits and bad bodies', () => {
    it('should answer 413 above BULK_MAX_ROWS and change nothing', async () => {
      const before = await snapshot('demo_customers', 'cus');
      const res = await bulk({
        operation: 'create',
        records: Array.from({ length: 26 }, () => newCustomer()),
      });
      expect(res.statusCode).toBe(413);
      expect(res.json().error.code).toBe('PAYLOAD_TOO_LARGE');
      expect(res.json().error.details).toEqual({ maxRows: 25, rows: 26 });
      expect(await snapshot('demo_customers', 'cus')).toBe(before);
    });

    it.each([
      ['an array', [newCustomer()], [{ field: 'body', error: 'must be an object' }]],
      [
        'no operation',
        { records: [{}] },
        [{ field: 'operation', error: 'must be create, update or delete' }],
      ],
      [
        'records not an array',
        { operation: 'create', records: {} },
        [{ field: 'records', error: 'must be an array' }],
      ],
      ['no rows', { operation: 'delete', ids: [] }, [{ field: 'ids', error: 'must name at least one row' }]],
      [
        'mixed operations',
        { operation: 'delete', ids: [1], records: [{ id: 2 }] },
        [{ field: 'records', error: 'is not taken by delete (it takes ids)' }],
      ],
      [
        'an unknown option',
        { operation: 'delete', ids: [1], force: true },
        [{ field: 'force', error: 'is not a bulk request option' }],
      ],
      [
        'an update without id',
        { operation: 'update', records: [{ tier: 'gold' }] },
        [{ field: 'records[0].id', error: 'is required' }],
      ],
      [
        'a record not an object',
        { operation: 'create', records: [1] },
        [{ field: 'records[0]', error: 'must be an object' }],
      ],
      [
        'allOrNone not a boolean',
        { operation: 'delete', ids: [1], allOrNone: 'yes' },
        [{ field: 'allOrNone', error: 'must be true or false' }],
      ],
    ])('should answer 400 for %s and change nothing', async (_name, payload, details) => {
      const before = await snapshot('demo_customers', 'cus');
      const res = await bulk(payload);
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toMatchObject({ code: 'VALIDATION_ERROR', details });
      expect(await snapshot('demo_customers', 'cus')).toBe(before);
    });
  });

  describe('access and isolation', () => {
    it('should refuse a viewer (403) and change nothing', async () => {
      const [a] = await created(1);
      const before = await snapshot('demo_customers', 'cus');
      for (const payload of [
        { operation: 'update', records: [{ id: a.id, lastModified: a.lastModified, tier: 'gold' }] },
        { operation: 'delete', ids: [a.id] },
        { operation: 'create', records: [newCustomer()] },
      ]) {
        const res = await bulk(payload, 'acmeViewer');
        expect(res.statusCode).toBe(403);
        expect(res.json().error.code).toBe('FORBIDDEN');
      }
      expect(await snapshot('demo_customers', 'cus')).toBe(before);
    });

    it("should answer 404 per row for another tenant's ids and change none of them", async () => {
      const [a] = await created(1);
      const globexBefore = await snapshot('demo_customers', 'cus');
      const theirs = globexCustomerIds.slice(0, 2);
      const upd = await bulk({
        operation: 'update',
        records: [
          ...theirs.map((id) => ({ id, lastModified: a.lastModified, tier: 'gold' })),
          { id: a.id, lastModified: a.lastModified, tier: 'gold' },
        ],
      });
      expect(upd.statusCode).toBe(200);
      expect(upd.json().data.results.map((r: RowResult) => r.status)).toEqual([404, 404, 200]);
      const del = await bulk({ operation: 'delete', ids: theirs, cascade: true });
      expect(del.json().data.results.map((r: RowResult) => r.status)).toEqual([404, 404]);
      const all = await bulk({ operation: 'delete', ids: theirs, allOrNone: true });
      expect(all.statusCode).toBe(404);
      const after = JSON.parse(await snapshot('demo_customers', 'cus')) as Json[];
      const before = JSON.parse(globexBefore) as Json[];
      // Only acme's own row changed; every globex row is as it was.
      const globex = (rows: Json[]) => JSON.stringify(rows.filter((r) => Number(r.cus_tenant_id) === 2));
      expect(globex(after)).toBe(globex(before));
      // And globex still reads its rows.
      const res = await call('GET', `/api/v1/customers/${theirs[0]}`, 'globexAdmin');
      expect(res.statusCode).toBe(200);
    });

    it('should answer 404 for an unknown entity', async () => {
      const res = await bulk({ operation: 'delete', ids: [1] }, 'acmeAdmin', 'nope');
      expect(res.statusCode).toBe(404);
    });
  });
});
