import type { DataSource } from 'typeorm';
import { CacheService } from '../../src/cache/cache.service';
import { DatabaseService } from '../../src/database/database.service';
import { DEMO_DATAVIEWS } from '../../src/database/seed/demo-data';
import { authHeaders, signin, TENANT } from '../support/auth';
import { startTestApp, TestApp } from '../support/test-app';

type Rec = Record<string, any>;

/**
 * D31: `paginationType: cursor` (orders_grid) pages by keyset on (sort keys, primary key) with an
 * opaque, signed cursor: no row skipped or repeated when rows are inserted or deleted between pages,
 * `nextCursor: null` on the last page, and a tampered, foreign or stale cursor refused.
 */
describe('Dataview cursor pages (D31)', () => {
  let t: TestApp;
  let ds: DataSource;
  const token: Record<string, string> = {};

  const data = (code: string, params: Record<string, unknown> = {}, tenant: string = TENANT.acme) => {
    const qs = Object.entries(params)
      .map(([k, v]) => `${k}=${encodeURIComponent(typeof v === 'string' ? v : JSON.stringify(v))}`)
      .join('&');
    return t.app.inject({
      method: 'GET',
      url: `/api/v1/dataviews/${code}/data${qs ? `?${qs}` : ''}`,
      headers: authHeaders(tenant, tenant === TENANT.acme ? token.acme : token.globex),
    });
  };
  const invalid = async (code: string, params: Record<string, unknown>, tenant: string = TENANT.acme) => {
    const res = await data(code, params, tenant);
    expect({ status: res.statusCode, details: res.json().error?.details }).toEqual({
      status: 400,
      details: [{ field: 'cursor', error: 'invalid' }],
    });
  };
  /** Every page of a grid from the start, `between` run after each page. */
  const walk = async (
    code: string,
    params: Record<string, unknown>,
    between?: (page: number) => Promise<void>,
  ) => {
    const rows: Rec[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 100; page++) {
      const res = await data(code, { ...params, ...(cursor ? { cursor } : {}) });
      expect(res.statusCode).toBe(200);
      const body = res.json();
      expect(Object.keys(body.pagination)).toEqual(['pageSize', 'nextCursor']);
      rows.push(...body.data);
      if (between) await between(page);
      if (body.pagination.nextCursor === null) return rows;
      cursor = body.pagination.nextCursor;
    }
    throw new Error('no last page');
  };
  const order = (payload: Rec) =>
    t.app.inject({
      method: 'POST',
      url: '/api/v1/orders',
      headers: authHeaders(TENANT.acme, token.acme),
      payload,
    });

  beforeAll(async () => {
    t = await startTestApp({ label: 'dataview-cursor' });
    ds = t.app.get(DatabaseService).dataSource;
    token.acme = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
    token.globex = (await signin(t.app, TENANT.globex, 'admin@globex.test')).token;
    const ordersGrid = DEMO_DATAVIEWS.find((d) => d.code === 'orders_grid')!;
    await ds
      .createQueryBuilder()
      .insert()
      .into('app_dataview_configs')
      .values({
        dvc_tenant_id: 1,
        dvc_code: 'orders_copy',
        dvc_description: 'A copy of orders_grid',
        dvc_source_entity: 'orders',
        dvc_config: JSON.stringify(ordersGrid.config),
        dvc_is_default: false,
        dvc_status: 1,
        dvc_is_deleted: 0,
      })
      .execute();
  });

  afterAll(async () => {
    await t?.close();
  });

  it('should neither skip nor repeat rows when rows are inserted and deleted between pages', async () => {
    const before = (await data('orders_grid', { pageSize: '500' })).json().data as Rec[];
    const customer = before[0].customer_id;
    let early: number | undefined;
    let late: number | undefined;
    const deletedUnread = before[33].id;
    const deletedRead = before[3].id;
    const rows = await walk('orders_grid', { pageSize: '10' }, async (page) => {
      if (page !== 0) return;
      // One row that sorts before the position (never shown), one after it (shown at the end).
      early = (
        await order({ customer_id: customer, amount: 1, status: 'new', ordered_at: '2099-12-31' })
      ).json().data.id;
      late = (
        await order({ customer_id: customer, amount: 2, status: 'paid', ordered_at: '2000-01-01' })
      ).json().data.id;
      for (const id of [deletedUnread, deletedRead]) {
        const res = await t.app.inject({
          method: 'DELETE',
          url: `/api/v1/orders/${id}`,
          headers: authHeaders(TENANT.acme, token.acme),
        });
        expect(res.statusCode).toBe(200);
      }
    });
    const seen = rows.map((r) => Number(r.id));
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual([...before.map((r) => Number(r.id)).filter((id) => id !== deletedUnread), late]);
    expect(seen).not.toContain(early);
    const after = (await data('orders_grid', { pageSize: '500' })).json().data.map((r: Rec) => Number(r.id));
    expect(after).toEqual([early, ...seen.filter((id) => id !== deletedRead)]);
  });

  it('should answer nextCursor null on the last page, also when it is exactly full', async () => {
    const all = (await data('orders_grid', { pageSize: '500' })).json();
    const n = all.data.length;
    expect(all.pagination).toEqual({ pageSize: 500, nextCursor: null });
    expect((await data('orders_grid', { pageSize: String(n) })).json().pagination.nextCursor).toBeNull();
    const first = (await data('orders_grid', { pageSize: String(n - 1) })).json();
    expect(first.pagination.nextCursor).toEqual(expect.any(String));
    const last = (
      await data('orders_grid', { pageSize: String(n - 1), cursor: first.pagination.nextCursor })
    ).json();
    expect(last.data.map((r: Rec) => Number(r.id))).toEqual([all.data[n - 1].id]);
    expect(last.pagination.nextCursor).toBeNull();
    // The aggregates cover the whole filtered set on every page.
    expect(last.aggregates).toEqual(all.aggregates);
  });

  it('should page a filtered, re-sorted grid with the same cursor rules', async () => {
    const params = {
      pageSize: '7',
      filters: [{ fieldCode: 'amount', operator: 'greater_than', value: 300 }],
      sort: [{ fieldCode: 'amount', direction: 'asc' }],
    };
    const rows = await walk('orders_grid', params);
    const all = (await data('orders_grid', { ...params, pageSize: '500' })).json().data;
    expect(rows.map((r) => Number(r.id))).toEqual(all.map((r: Rec) => Number(r.id)));
    const amounts = rows.map((r) => Number(r.amount));
    expect(amounts).toEqual([...amounts].sort((a, b) => a - b));
    expect(amounts.every((a) => a > 300)).toBe(true);
  });

  it('should refuse a tampered cursor', async () => {
    const cursor = (await data('orders_grid', { pageSize: '5' })).json().pagination.nextCursor as string;
    const [payload, mac] = cursor.split('.');
    const decoded = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    expect(decoded).toMatchObject({ d: 'orders_grid', t: TENANT.acme });
    const forged = Buffer.from(JSON.stringify({ ...decoded, p: [decoded.p[0], 1] })).toString('base64url');
    await invalid('orders_grid', { cursor: `${forged}.${mac}` });
    await invalid('orders_grid', { cursor: `${payload}.${mac.slice(0, -2)}AA` });
    await invalid('orders_grid', { cursor: `${payload}` });
    await invalid('orders_grid', { cursor: 'not a cursor' });
    await invalid('orders_grid', { cursor: `${payload}.${mac}.${mac}` });
  });

  it('should refuse a cursor of another query, dataview or tenant', async () => {
    const cursor = (await data('orders_grid', { pageSize: '5' })).json().pagination.nextCursor as string;
    expect((await data('orders_grid', { pageSize: '9', cursor })).statusCode).toBe(200);
    await invalid('orders_grid', {
      cursor,
      filters: [{ fieldCode: 'status', operator: 'equals', value: 'paid' }],
    });
    await invalid('orders_grid', { cursor, sort: [{ fieldCode: 'amount', direction: 'desc' }] });
    await invalid('orders_copy', { cursor });
    const globex = (await data('orders_grid', { pageSize: '5' }, TENANT.globex)).json().pagination.nextCursor;
    await invalid('orders_grid', { cursor: globex });
    await invalid('orders_grid', { cursor }, TENANT.globex);
  });

  it('should refuse a cursor made before the dataview’s configuration changed (stale)', async () => {
    const cursor = (await data('orders_copy', { pageSize: '5' })).json().pagination.nextCursor as string;
    expect((await data('orders_copy', { pageSize: '5', cursor })).statusCode).toBe(200);
    const config = {
      ...DEMO_DATAVIEWS.find((d) => d.code === 'orders_grid')!.config,
      dataviewName: 'Orders (new)',
    };
    await ds
      .createQueryBuilder()
      .update('app_dataview_configs')
      .set({ dvc_config: JSON.stringify(config) })
      .where('dvc_code = :code', { code: 'orders_copy' })
      .execute();
    const cache = t.app.get(CacheService);
    await cache.deletePattern(`${cache.keys.prefix}:dataview*`);
    await invalid('orders_copy', { cursor });
  });

  it('should refuse page numbers on a cursor grid', async () => {
    const res = await data('orders_grid', { page: '1' });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.details).toEqual([{ field: 'page', error: 'this dataview pages by cursor' }]);
  });
});
