import { Logger } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { CacheService } from '../../src/cache/cache.service';
import { DatabaseService } from '../../src/database/database.service';
import { authHeaders, signin, TENANT } from '../support/auth';
import { startTestApp, TestApp } from '../support/test-app';

type Json = Record<string, any>;
interface RowResult {
  index: number;
  id: number | null;
  status: number;
  error?: Json;
  instanceId?: number;
}

/**
 * D52: `POST /api/v1/dataviews/{dvc_code}/actions/{actionId}` (update, delete, workflow on ids or on
 * the filtered set; confirmation; the operation's permission; isolation) and
 * `PATCH /api/v1/dataviews/{dvc_code}/rows/{id}` (inline edits inside editableColumns ∩ writable
 * fields, answered as the grid shows the row), and bulkActions checked when a configuration loads.
 */
describe('Dataview actions and inline editing (D52)', () => {
  let t: TestApp;
  let ds: DataSource;
  const token: Record<string, string> = {};
  let globexCustomerIds: number[];

  beforeAll(async () => {
    t = await startTestApp({
      label: 'dataview-actions',
      env: { BULK_MAX_ROWS: '30', WORKFLOW_WORKER: 'off' },
    });
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
  const call = (
    method: 'GET' | 'POST' | 'PATCH',
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
  const action = (id: string, payload: unknown, who = 'acmeAdmin', grid = 'customers_grid') =>
    call('POST', `/api/v1/dataviews/${grid}/actions/${id}`, who, payload);
  const statuses = (res: { json: () => any }): number[] =>
    (res.json().data.results as RowResult[]).map((r) => r.status);

  let serial = 0;
  async function customers(count: number, extra: Json = {}): Promise<Json[]> {
    const out: Json[] = [];
    for (let i = 0; i < count; i++) {
      const res = await call('POST', '/api/v1/customers', 'acmeAdmin', {
        name: `Action Test ${++serial}`,
        email: `action-test-${serial}@acme.example`,
        tier: 'gold',
        ...extra,
      });
      expect(res.statusCode).toBe(201);
      out.push(res.json().data as Json);
    }
    return out;
  }
  const read = async (entity: string, id: number): Promise<Json> =>
    (await call('GET', `/api/v1/${entity}/${id}`, 'acmeAdmin')).json().data as Json;

  async function snapshot(): Promise<string> {
    return JSON.stringify(
      await ds
        .createQueryBuilder()
        .select('c.*')
        .from('demo_customers', 'c')
        .orderBy('c.cus_id')
        .getRawMany(),
    );
  }

  describe('actions', () => {
    it('should run an update action on the ids: each row gets its set values (make_silver)', async () => {
      const [a, b] = await customers(2);
      const res = await action('make_silver', { ids: [a.id, String(b.id)] });
      expect(res.statusCode).toBe(200);
      expect(statuses(res)).toEqual([200, 200]);
      expect(res.json().data).toMatchObject({ succeeded: 2, failed: 0 });
      expect((await read('customers', a.id as number)).tier).toBe('silver');
      expect((await read('customers', b.id as number)).tier).toBe('silver');
    });

    it('should ask for confirm where requireConfirm (400 {confirm: required}), then delete', async () => {
      const [a, b] = await customers(2);
      const unconfirmed = await action('delete_selected', { ids: [a.id, b.id] });
      expect(unconfirmed.statusCode).toBe(400);
      expect(unconfirmed.json().error.details).toEqual({ confirm: 'required' });
      expect((await call('GET', `/api/v1/customers/${a.id}`, 'acmeAdmin')).statusCode).toBe(200);
      const res = await action('delete_selected', { ids: [a.id, b.id], confirm: true });
      expect(res.statusCode).toBe(200);
      expect(statuses(res)).toEqual([200, 200]);
      expect((await call('GET', `/api/v1/customers/${a.id}`, 'acmeAdmin')).statusCode).toBe(404);
    });

    it('should start one workflow instance per row with input {recordId} (onboard)', async () => {
      const [a, b] = await customers(2);
      const res = await action('onboard', { ids: [a.id, b.id] });
      expect(res.statusCode).toBe(200);
      const results = res.json().data.results as RowResult[];
      expect(results.map((r) => r.status)).toEqual([202, 202]);
      for (const [i, r] of results.entries()) {
        const instance = await call('GET', `/api/v1/workflows/instances/${r.instanceId}`, 'acmeAdmin');
        expect(instance.statusCode).toBe(200);
        expect(instance.json().data).toMatchObject({
          workflowCode: 'customer_onboarding',
          input: { recordId: [a, b][i].id as number },
        });
      }
    });

    it('should run on the filtered set with all: true, and refuse a set above the limit (413)', async () => {
      const mine = await customers(3, { tier: 'bronze', credit_limit: 777 });
      const res = await action('make_silver', {
        all: true,
        filters: [{ fieldCode: 'name', operator: 'starts_with', value: 'Action Test' }],
      });
      expect(res.statusCode).toBe(200);
      const touched = (res.json().data.results as RowResult[]).map((r) => r.id);
      for (const c of mine) expect(touched).toContain(c.id);
      for (const c of mine) expect((await read('customers', c.id as number)).tier).toBe('silver');
      const before = await snapshot();
      const all = await action('make_silver', { all: true });
      expect(all.statusCode).toBe(413);
      expect(all.json().error.code).toBe('PAYLOAD_TOO_LARGE');
      expect(await snapshot()).toBe(before);
    });

    it('should answer 404 for an unknown action, a client-side one and a grid without bulk actions', async () => {
      expect((await action('nope', { ids: [1] })).statusCode).toBe(404);
      expect((await action('export_selected', { ids: [1] })).statusCode).toBe(404);
      expect((await action('make_silver', { ids: [1] }, 'acmeAdmin', 'orders_grid')).statusCode).toBe(404);
    });

    it.each([
      ['neither ids nor all', {}],
      ['both', { ids: [1], all: true }],
      ['filters without all', { ids: [1], filters: [] }],
      ['the same id twice', { ids: [1, '1'] }],
      ['a bad filter', { all: true, filters: [{ fieldCode: 'tier', operator: 'nope', value: 1 }] }],
      ['an unknown option', { ids: [1], force: true }],
      ['an id that is an operator object', { ids: [{ $gt: 0 }] }],
      ['an id that is a float', { ids: [1.5] }],
      ['an id of non-digits', { ids: ['1 OR 1=1'] }],
    ])('should answer 400 for %s', async (_name, payload) => {
      const before = await snapshot();
      const res = await action('make_silver', payload);
      expect(res.statusCode).toBe(400);
      expect(res.json().error.code).toBe('VALIDATION_ERROR');
      if (_name.startsWith('an id '))
        expect(res.json().error.details).toEqual(
          expect.arrayContaining([expect.objectContaining({ field: 'ids[0]' })]),
        );
      expect(await snapshot()).toBe(before);
    });

    it('should refuse a viewer the update and delete actions (403) and change nothing', async () => {
      const [a] = await customers(1);
      const before = await snapshot();
      expect((await action('make_silver', { ids: [a.id] }, 'acmeViewer')).statusCode).toBe(403);
      expect((await action('delete_selected', { ids: [a.id], confirm: true }, 'acmeViewer')).statusCode).toBe(
        403,
      );
      expect(await snapshot()).toBe(before);
    });

    it("should answer 404 per row for another tenant's ids and change none of them", async () => {
      const [a] = await customers(1);
      const before = await snapshot();
      const theirs = globexCustomerIds.slice(0, 2);
      const upd = await action('make_silver', { ids: [...theirs, a.id] });
      expect(statuses(upd)).toEqual([404, 404, 200]);
      const del = await action('delete_selected', { ids: theirs, confirm: true });
      expect(statuses(del)).toEqual([404, 404]);
      const wf = await action('onboard', { ids: theirs });
      expect(statuses(wf)).toEqual([404, 404]);
      const globex = (text: string) =>
        JSON.stringify((JSON.parse(text) as Json[]).filter((r) => Number(r.cus_tenant_id) === 2));
      expect(globex(await snapshot())).toBe(globex(before));
    });
  });

  describe('inline editing', () => {
    async function anOrder(): Promise<Json> {
      const [c] = await customers(1);
      const res = await call('POST', '/api/v1/orders', 'acmeAdmin', {
        customer_id: c.id,
        amount: 25,
        status: 'new',
        ordered_at: '2026-11-02',
      });
      expect(res.statusCode).toBe(201);
      return res.json().data as Json;
    }
    const patch = (id: number | string, payload: unknown, who = 'acmeAdmin', grid = 'orders_grid') =>
      call('PATCH', `/api/v1/dataviews/${grid}/rows/${id}`, who, payload);

    it('should save an editable column and answer the row as the grid shows it', async () => {
      const o = await anOrder();
      const res = await patch(o.id as number, { lastModified: o.lastModified, status: 'paid' });
      expect(res.statusCode).toBe(200);
      const row = res.json().data as Json;
      expect(Object.keys(row).sort()).toEqual([
        'amount',
        'customer_id',
        'id',
        'lastModified',
        'ordered_at',
        'status',
      ]);
      expect(row.status).toBe('paid');
      expect(res.headers.etag).toBe(`"${row.lastModified}"`);
      expect((await read('orders', o.id as number)).status).toBe('paid');
      // The token of the answer saves again; the old one is stale (409).
      expect(
        (await patch(o.id as number, { lastModified: o.lastModified, status: 'shipped' })).statusCode,
      ).toBe(409);
      expect(
        (await patch(o.id as number, { lastModified: row.lastModified, status: 'shipped' })).statusCode,
      ).toBe(200);
    });

    it('should refuse a column that is shown but not editable (400 naming it) and change nothing', async () => {
      const o = await anOrder();
      const res = await patch(o.id as number, { lastModified: o.lastModified, amount: 1, status: 'paid' });
      expect(res.statusCode).toBe(400);
      expect(res.json().error.details).toEqual([{ field: 'amount', error: 'is not editable in this grid' }]);
      expect(await read('orders', o.id as number)).toMatchObject({ amount: 25, status: 'new' });
    });

    it('should answer 404 where inline editing is off, for an unknown row and for another tenant’s row', async () => {
      const o = await anOrder();
      expect(
        (
          await patch(
            o.id as number,
            { lastModified: o.lastModified, name: 'x' },
            'acmeAdmin',
            'customers_grid',
          )
        ).statusCode,
      ).toBe(404);
      expect((await patch(999999, { lastModified: o.lastModified, status: 'paid' })).statusCode).toBe(404);
      const theirs = await ds
        .createQueryBuilder()
        .select('o.ord_id', 'id')
        .from('demo_orders', 'o')
        .where('o.ord_tenant_id = :t', { t: 2 })
        .getRawOne<{ id: unknown }>();
      const res = await patch(Number(theirs?.id), { lastModified: o.lastModified, status: 'paid' });
      expect(res.statusCode).toBe(404);
    });

    it('should refuse a viewer (403)', async () => {
      const o = await anOrder();
      const res = await patch(o.id as number, { lastModified: o.lastModified, status: 'paid' }, 'acmeViewer');
      expect(res.statusCode).toBe(403);
      expect((await read('orders', o.id as number)).status).toBe('new');
    });
  });

  describe('configuration', () => {
    it('should refuse a dataview whose bulk actions are invalid, with a log line naming the problem', async () => {
      const config = (bulkActions: unknown[]) =>
        JSON.stringify({
          columns: [{ fieldCode: 'name' }],
          actions: { enableBulkActions: true, bulkActions },
        });
      const insert = (code: string, bulkActions: unknown[]) =>
        ds
          .createQueryBuilder()
          .insert()
          .into('app_dataview_configs')
          .values({
            dvc_tenant_id: 1,
            dvc_code: code,
            dvc_description: code,
            dvc_is_default: false,
            dvc_status: 1,
            dvc_is_deleted: 0,
            dvc_source_entity: 'customers',
            dvc_config: config(bulkActions),
          })
          .execute();
      await insert('bad_op_grid', [{ actionId: 'x', operation: 'explode' }]);
      await insert('bad_set_grid', [{ actionId: 'x', operation: 'update', set: { colour: 'red' } }]);
      await insert('good_grid', [{ actionId: 'x', operation: 'update', set: { tier: 'gold' } }]);
      await t.app.get(CacheService).deletePattern(`${t.app.get(CacheService).keys.prefix}:dataview*`);
      const errors = jest.spyOn(Logger.prototype, 'error');
      try {
        for (const code of ['bad_op_grid', 'bad_set_grid'])
          expect((await call('GET', `/api/v1/dataviews/${code}/config`, 'acmeAdmin')).statusCode).toBe(404);
        expect((await call('GET', '/api/v1/dataviews/good_grid/config', 'acmeAdmin')).statusCode).toBe(200);
        const lines = errors.mock.calls.map((c) => JSON.stringify(c));
        expect(lines.some((l) => l.includes('operation must be update, delete or workflow'))).toBe(true);
        expect(lines.some((l) => l.includes('set names colour, which the entity does not have'))).toBe(true);
      } finally {
        errors.mockRestore();
      }
    });
  });
});
