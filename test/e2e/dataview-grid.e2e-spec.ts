import type { DataSource } from 'typeorm';
import { DatabaseService } from '../../src/database/database.service';
import { authHeaders, signin, TENANT } from '../support/auth';
import { startTestApp, TestApp } from '../support/test-app';

type Rec = Record<string, any>;

/** A dataview row of tenant 1 (or another) added for one test. */
async function insertDataview(
  ds: DataSource,
  code: string,
  source: string,
  config: Rec,
  tenantId: number | null = 1,
): Promise<void> {
  await ds
    .createQueryBuilder()
    .insert()
    .into('app_dataview_configs')
    .values({
      dvc_tenant_id: tenantId,
      dvc_code: code,
      dvc_description: code,
      dvc_source_entity: source,
      dvc_config: JSON.stringify(config),
      dvc_is_default: false,
      dvc_status: 1,
      dvc_is_deleted: 0,
    })
    .execute();
}

const col = (fieldCode: string | null, extra: Rec = {}): Rec => ({
  columnId: `col_${fieldCode ?? 'x'}`,
  fieldCode,
  columnType: 'text',
  isFilterable: true,
  isSortable: true,
  searchable: false,
  ...extra,
});

const ids = (rows: Rec[]) => rows.map((r) => Number(r.id)).sort((a, b) => a - b);
const sum = (values: number[]) => Math.round(values.reduce((a, b) => a + b, 0) * 100) / 100;
/** SQL's SUM: NULLs skipped, null when nothing is left. */
const sqlSum = (values: Array<number | null>) => {
  const present = values.filter((v): v is number => v !== null);
  return present.length === 0 ? null : sum(present);
};

/** Spec §4.4 data retrieval (rules 1-7, D30, D31) on the demo grids and grids added per test. */
describe('Dataview data: sort, search, pages, aggregates and groups (spec §4.4)', () => {
  let t: TestApp;
  let ds: DataSource;
  let token: string;
  let customers: Rec[];
  let orders: Rec[];

  const data = (
    code: string,
    params: Record<string, unknown> = {},
    who = token,
    tenant: string = TENANT.acme,
  ) => {
    const qs = Object.entries(params)
      .map(([k, v]) => `${k}=${encodeURIComponent(typeof v === 'string' ? v : JSON.stringify(v))}`)
      .join('&');
    return t.app.inject({
      method: 'GET',
      url: `/api/v1/dataviews/${code}/data${qs ? `?${qs}` : ''}`,
      headers: authHeaders(tenant, who),
    });
  };
  const details = async (code: string, params: Record<string, unknown>) => {
    const res = await data(code, params);
    expect({ status: res.statusCode, code: res.json().error?.code }).toEqual({
      status: 400,
      code: 'VALIDATION_ERROR',
    });
    return res.json().error.details as Array<{ field: string; error: string }>;
  };
  const entityRows = async (entity: string) =>
    (
      await t.app.inject({
        method: 'GET',
        url: `/api/v1/${entity}?limit=500`,
        headers: authHeaders(TENANT.acme, token),
      })
    ).json().data.records as Rec[];

  beforeAll(async () => {
    t = await startTestApp({ label: 'dataview-grid' });
    ds = t.app.get(DatabaseService).dataSource;
    // A few NULLs, so that is_null and the NULL-keeping not_* operators have rows to find.
    await ds.query('UPDATE demo_customers SET cus_tier = NULL WHERE cus_id IN (3, 4)');
    await ds.query('UPDATE demo_customers SET cus_credit_limit = NULL WHERE cus_id = 6');
    await ds.query('UPDATE demo_orders SET ord_order_status = NULL WHERE ord_id = 8');
    await ds.query('UPDATE demo_orders SET ord_ordered_at = NULL WHERE ord_id IN (9, 10)');
    token = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
    customers = await entityRows('customers');
    orders = await entityRows('orders');
    expect([customers.length, orders.length]).toEqual([50, 120]);

    await insertDataview(ds, 'orders_stats', 'orders', {
      columns: [
        col('id', { columnType: 'numeric', aggregateFunction: 'min' }),
        col('amount', { columnType: 'numeric', aggregateFunction: 'avg' }),
        col('ordered_at', { columnType: 'date', aggregateFunction: 'max' }),
        col('customer_id', { columnType: 'numeric', aggregateFunction: 'count' }),
        col('status', { columnType: 'select' }),
      ],
      grouping: { groupableColumns: ['status', 'customer_id'] },
      display: { pageSize: 10, paginationType: 'offset' },
    });
  });

  afterAll(async () => {
    await t?.close();
  });

  describe('sort (rule 3) and search', () => {
    it('should sort by the default sort (orders: ordered_at desc, NULLs last, then the key)', async () => {
      const body = (await data('orders_grid', { pageSize: '500' })).json();
      const expected = orders
        .filter((o) => o.status !== 'cancelled')
        .sort((a, b) =>
          a.ordered_at === b.ordered_at
            ? b.id - a.id
            : a.ordered_at === null
              ? 1
              : b.ordered_at === null
                ? -1
                : a.ordered_at < b.ordered_at
                  ? 1
                  : -1,
        );
      expect(body.data.map((r: Rec) => Number(r.id))).toEqual(expected.map((o) => Number(o.id)));
    });

    it('should sort by the request’s sort, ending with the key', async () => {
      const sort = [
        { fieldCode: 'tier', direction: 'desc' },
        { fieldCode: 'credit_limit', direction: 'ASC' },
      ];
      const body = (
        await data('customers_grid', {
          sort,
          pageSize: '500',
          filters: [{ fieldCode: 'tier', operator: 'is_not_null' }],
        })
      ).json();
      const rank = (r: Rec): number[] => [
        r.tier === 'silver' ? 0 : r.tier === 'gold' ? 1 : 2,
        Number(r.credit_limit ?? Infinity),
        -Number(r.id),
      ];
      const expected = customers
        .filter((r) => r.tier !== null)
        .sort((a, b) => {
          const [x, y] = [rank(a), rank(b)];
          return x[0] - y[0] || x[1] - y[1] || y[2] - x[2];
        });
      // NULL credit limits: where the dialect puts them differs in offset pages; compare the others.
      const present = (rows: Rec[]) => rows.filter((r) => r.credit_limit !== null).map((r) => Number(r.id));
      expect(present(body.data)).toEqual(present(expected));
    });

    it('should search case-blind in the searchable columns only', async () => {
      const body = (await data('customers_grid', { search: 'CUSTOMER1', pageSize: '500' })).json();
      const expected = customers.filter((c) => `${c.name} ${c.email}`.toLowerCase().includes('customer1'));
      expect(ids(body.data)).toEqual(ids(expected));
      expect(body.pagination.total).toBe(11);
      const gold = (await data('customers_grid', { search: 'gold' })).json();
      expect(gold.pagination.total).toBe(0); // tier is not searchable
      expect(await details('orders_grid', { search: 'x' })).toEqual([
        { field: 'search', error: 'this dataview has no searchable column' },
      ]);
    });
  });

  describe('pagination (rule 4)', () => {
    it('should page with offset = page * pageSize, and answer an empty page past the end', async () => {
      const page = (await data('customers_grid', { page: '1', pageSize: '20' })).json();
      const list = (
        await t.app.inject({
          method: 'GET',
          url: '/api/v1/customers?sortBy=name&limit=20&skip=20',
          headers: authHeaders(TENANT.acme, token),
        })
      ).json().data.records;
      expect(page.data.map((r: Rec) => Number(r.id))).toEqual(list.map((r: Rec) => Number(r.id)));
      expect(page.pagination).toEqual({ page: 1, pageSize: 20, total: 50 });
      const past = (await data('customers_grid', { page: '9', pageSize: '20' })).json();
      expect(past.data).toEqual([]);
      expect(past.pagination).toEqual({ page: 9, pageSize: 20, total: 50 });
    });

    it('should cap pageSize at the profile’s maxPageSize and source.maxRows', async () => {
      expect((await data('customers_grid', { pageSize: '100000' })).json().pagination).toEqual({
        page: 0,
        pageSize: 500,
        total: 50,
      });
      await insertDataview(ds, 'tiny_grid', 'customers', { columns: [col('name')], source: { maxRows: 7 } });
      const tiny = (await data('tiny_grid', { pageSize: '50' })).json();
      expect([tiny.data.length, tiny.pagination.pageSize]).toEqual([7, 7]);
    });
  });

  describe('aggregates and groups', () => {
    const scope = 'cus_tenant_id = 1 AND (cus_is_deleted IS NULL OR NOT cus_is_deleted)';

    it('should aggregate over the whole filtered set, as the database does', async () => {
      const [db] = await ds.query(
        `SELECT SUM(cus_credit_limit) AS s FROM demo_customers WHERE ${scope} AND cus_tier = 'silver'`,
      );
      const body = (
        await data('customers_grid', {
          pageSize: '2',
          filters: [{ fieldCode: 'tier', operator: 'equals', value: 'silver' }],
        })
      ).json();
      expect(body.data).toHaveLength(2);
      expect(body.aggregates).toEqual({ credit_limit: Number(db.s) });
    });

    it('should compute sum, avg, min, max and count as numbers (and dates)', async () => {
      const body = (await data('orders_stats')).json();
      const amounts = orders.map((o) => o.amount as number);
      const days = orders
        .map((o) => o.ordered_at as string | null)
        .filter((d): d is string => d !== null)
        .sort();
      expect(body.aggregates).toEqual({
        id: Math.min(...orders.map((o) => Number(o.id))),
        amount: expect.any(Number),
        ordered_at: days[days.length - 1],
        customer_id: orders.length,
      });
      expect(body.aggregates.amount).toBeCloseTo(amounts.reduce((a, b) => a + b, 0) / amounts.length, 5);
    });

    it('should group the filtered set by key, NULL last, with counts and aggregates, as the database does', async () => {
      const rows: Rec[] = await ds.query(
        `SELECT cus_tier AS k, COUNT(*) AS c, SUM(cus_credit_limit) AS s FROM demo_customers WHERE ${scope} GROUP BY cus_tier`,
      );
      const expected = rows
        .map((r) => ({
          key: r.k ?? null,
          count: Number(r.c),
          aggregates: { credit_limit: r.s === null ? null : Number(r.s) },
        }))
        .sort((a, b) => (a.key === null ? 1 : b.key === null ? -1 : a.key < b.key ? -1 : 1));
      const res = await data('customers_grid', { groupBy: 'tier' });
      expect(res.statusCode).toBe(200);
      expect(res.json().data).toEqual(expected);
      expect(res.json().pagination).toBeUndefined();
      expect(res.json().aggregates.credit_limit).toBe(
        sqlSum(customers.map((c) => c.credit_limit as number | null)),
      );
      const filtered = (
        await data('customers_grid', {
          groupBy: 'tier',
          filters: [{ fieldCode: 'credit_limit', operator: 'greater_than', value: 12000 }],
        })
      ).json().data;
      expect(filtered.map((g: Rec): unknown[] => [g.key as unknown, Number(g.count)])).toEqual(
        ['gold', 'silver', null]
          .map((k) => [k, customers.filter((c) => c.tier === k && c.credit_limit > 12000).length])
          .filter(([, n]) => n !== 0),
      );
    });

    it('should answer the rows of one group with groupKey, paged, and the NULL group with groupKey=null', async () => {
      const gold = (
        await data('customers_grid', { groupBy: 'tier', groupKey: 'gold', pageSize: '4', page: '2' })
      ).json();
      expect(gold.pagination).toEqual({ page: 2, pageSize: 4, total: 10 });
      expect(gold.data.every((r: Rec) => r.tier === 'gold')).toBe(true);
      expect(gold.data).toHaveLength(2);
      const none = (await data('customers_grid', { groupBy: 'tier', groupKey: 'null' })).json();
      expect(ids(none.data)).toEqual([3, 4]);
      const byCustomer = (await data('orders_stats', { groupBy: 'customer_id', groupKey: '5' })).json();
      expect(ids(byCustomer.data)).toEqual(ids(orders.filter((o) => o.customer_id === 5)));
      expect(await details('orders_stats', { groupBy: 'customer_id', groupKey: 'five' })).toEqual([
        { field: 'groupKey', error: 'must be an integer' },
      ]);
    });
  });
});
