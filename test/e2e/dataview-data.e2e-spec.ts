import type { DataSource } from 'typeorm';
import { DatabaseService } from '../../src/database/database.service';
import { authHeaders, signin, TENANT } from '../support/auth';
import { copyEntityConfig } from '../support/entity-fixtures';
import { startTestApp, TestApp } from '../support/test-app';

type Rec = Record<string, any>;
interface Filter {
  fieldCode: string;
  operator: string;
  value?: unknown;
}

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

/** The rows a filter keeps, as the records core defines the operators (case-blind LIKE, NULLs kept by not_*). */
function keeps(rec: Rec, f: Filter): boolean {
  const v = rec[f.fieldCode] ?? null;
  const x = f.value as any;
  const lower = (s: unknown) => String(s).toLowerCase();
  switch (f.operator) {
    case 'equals':
      return f.fieldCode === 'email' ? v !== null && lower(v) === lower(x) : v === x;
    case 'not_equals':
      return v === null || v !== x;
    case 'in':
      return v !== null && (x as unknown[]).includes(v);
    case 'not_in':
      return v === null || !(x as unknown[]).includes(v);
    case 'contains':
      return v !== null && lower(v).includes(lower(x));
    case 'starts_with':
      return v !== null && lower(v).startsWith(lower(x));
    case 'ends_with':
      return v !== null && lower(v).endsWith(lower(x));
    case 'greater_than':
      return v !== null && v > x;
    case 'less_than':
      return v !== null && v < x;
    case 'between':
      return v !== null && v >= x[0] && v <= x[1];
    case 'is_null':
      return v === null;
    case 'is_not_null':
      return v !== null;
  }
  throw new Error(`operator ${f.operator}`);
}

const ids = (rows: Rec[]) => rows.map((r) => Number(r.id)).sort((a, b) => a - b);
const sum = (values: number[]) => Math.round(values.reduce((a, b) => a + b, 0) * 100) / 100;
/** SQL's SUM: NULLs skipped, null when nothing is left. */
const sqlSum = (values: Array<number | null>) => {
  const present = values.filter((v): v is number => v !== null);
  return present.length === 0 ? null : sum(present);
};

/** Spec §4.4 data retrieval (rules 1-7, D30, D31) on the demo grids and grids added per test. */
describe('Dataview data (spec §4.4, D30, D31)', () => {
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
    t = await startTestApp({ label: 'dataview-data' });
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

    await insertDataview(ds, 'customers_contact', 'customers', {
      columns: [
        col('name', { isFilterable: false, isSortable: false, searchable: true }),
        col('phone', { renderType: 'phone' }),
        col('internal_notes'),
        col(null, { columnType: 'actions' }),
      ],
      grouping: { groupableColumns: ['phone', 'tier'] },
      sorting: { defaultSort: [{ fieldCode: 'name', direction: 'ASC' }], allowMultiSort: false },
    });
  });

  afterAll(async () => {
    await t?.close();
  });

  describe('rows (rule 1, D42)', () => {
    it('should answer {success, data, pagination: {page, pageSize, total}, aggregates, meta} for an offset grid', async () => {
      const res = await data('customers_grid');
      expect(res.statusCode).toBe(200);
      const body = res.json();
      expect(Object.keys(body)).toEqual(['success', 'data', 'pagination', 'aggregates', 'meta']);
      expect(body.pagination).toEqual({ page: 0, pageSize: 25, total: 50 });
      expect(body.data).toHaveLength(25);
      // Only the columns with a fieldCode, the key and the concurrency token; no synthetic column.
      for (const row of body.data)
        expect(Object.keys(row)).toEqual(['id', 'name', 'email', 'tier', 'credit_limit', 'lastModified']);
      // The default sort (name asc, then the key), as the entity list sorts it on this database.
      const list = (
        await t.app.inject({
          method: 'GET',
          url: '/api/v1/customers?sortBy=name&limit=25',
          headers: authHeaders(TENANT.acme, token),
        })
      ).json().data.records;
      expect(body.data.map((r: Rec) => Number(r.id))).toEqual(list.map((r: Rec) => Number(r.id)));
    });

    it('should give rows an inline-editing grid can save with PUT /api/v1/{entity}/{id}', async () => {
      const [row] = (await data('customers_grid', { pageSize: '1' })).json().data;
      const put = await t.app.inject({
        method: 'PUT',
        url: `/api/v1/customers/${row.id}`,
        headers: authHeaders(TENANT.acme, token),
        payload: { ...row, credit_limit: row.credit_limit + 1 },
      });
      expect(put.statusCode).toBe(200);
      const again = (await data('customers_grid', { pageSize: '1' })).json();
      expect(again.data[0]).toEqual({
        ...row,
        credit_limit: row.credit_limit + 1,
        lastModified: put.json().data.lastModified,
      });
      expect(again.aggregates.credit_limit).toBe(
        sqlSum(customers.map((c) => c.credit_limit as number | null))! + 1,
      );
      customers.find((c) => c.id === row.id)!.credit_limit += 1;
    });

    it('should omit hidden fields and mask masked ones as entity reads do', async () => {
      const res = await data('customers_contact', { pageSize: '500' });
      expect(res.statusCode).toBe(200);
      const byId = new Map(customers.map((c) => [c.id, c]));
      for (const row of res.json().data) {
        expect(Object.keys(row)).toEqual(['id', 'name', 'phone', 'lastModified']);
        expect(row.phone).toBe(byId.get(row.id)!.phone);
        expect(row.phone).toMatch(/^\*+\d{4}$/);
      }
    });

    it('should apply the source profile’s row filter', async () => {
      await copyEntityConfig(ds, 'customers', 'gold_customers', {
        profile: {
          prf_mode_code: 'READ',
          prf_policy: JSON.stringify({
            tenantPolicy: { mode: 'STRICT' },
            rowFilters: { where: "tier = 'gold'" },
          }),
        },
      });
      await insertDataview(ds, 'gold_grid', 'gold_customers', {
        columns: [col('name'), col('credit_limit', { aggregateFunction: 'sum' })],
      });
      const body = (await data('gold_grid', { pageSize: '100' })).json();
      const gold = customers.filter((c) => c.tier === 'gold');
      expect(body.pagination.total).toBe(gold.length);
      expect(ids(body.data)).toEqual(ids(gold));
      expect(body.aggregates.credit_limit).toBe(sqlSum(gold.map((c) => c.credit_limit as number | null)));
    });
  });

  describe('filters (rule 2, D30): every operator on each column type it applies to', () => {
    const c = () => customers;
    const cases: Array<[string, Filter[]]> = [
      ['text equals', [{ fieldCode: 'name', operator: 'equals', value: 'Alice Anderson' }]],
      ['text not_equals', [{ fieldCode: 'name', operator: 'not_equals', value: 'Alice Anderson' }]],
      ['text in', [{ fieldCode: 'name', operator: 'in', value: ['Alice Anderson', 'Bruno Hoffmann'] }]],
      ['text not_in', [{ fieldCode: 'name', operator: 'not_in', value: ['Alice Anderson'] }]],
      ['text contains (case-blind)', [{ fieldCode: 'name', operator: 'contains', value: 'ANDER' }]],
      ['text starts_with', [{ fieldCode: 'name', operator: 'starts_with', value: 'el' }]],
      ['text ends_with', [{ fieldCode: 'email', operator: 'ends_with', value: '9@ACME.example' }]],
      [
        'e-mail equals (case-blind)',
        [{ fieldCode: 'email', operator: 'equals', value: 'Customer2@ACME.example' }],
      ],
      ['text is_null', [{ fieldCode: 'name', operator: 'is_null' }]],
      ['text is_not_null', [{ fieldCode: 'email', operator: 'is_not_null' }]],
      ['select equals', [{ fieldCode: 'tier', operator: 'equals', value: 'gold' }]],
      ['select not_equals keeps NULL', [{ fieldCode: 'tier', operator: 'not_equals', value: 'gold' }]],
      ['select in', [{ fieldCode: 'tier', operator: 'in', value: ['gold', 'silver'] }]],
      ['select not_in keeps NULL', [{ fieldCode: 'tier', operator: 'not_in', value: ['bronze'] }]],
      ['select is_null', [{ fieldCode: 'tier', operator: 'is_null' }]],
      ['select is_not_null', [{ fieldCode: 'tier', operator: 'is_not_null' }]],
      ['numeric equals', [{ fieldCode: 'credit_limit', operator: 'equals', value: 3000 }]],
      ['numeric not_equals', [{ fieldCode: 'credit_limit', operator: 'not_equals', value: 3000 }]],
      ['numeric in', [{ fieldCode: 'credit_limit', operator: 'in', value: [3000, 4000] }]],
      ['numeric not_in', [{ fieldCode: 'credit_limit', operator: 'not_in', value: [3000, 4000] }]],
      ['numeric greater_than', [{ fieldCode: 'credit_limit', operator: 'greater_than', value: 10000 }]],
      [
        'numeric less_than (text value)',
        [{ fieldCode: 'credit_limit', operator: 'less_than', value: '3500' }],
      ],
      ['numeric between', [{ fieldCode: 'credit_limit', operator: 'between', value: [3000, 12000] }]],
      ['numeric is_null', [{ fieldCode: 'credit_limit', operator: 'is_null' }]],
      ['numeric is_not_null', [{ fieldCode: 'credit_limit', operator: 'is_not_null' }]],
      [
        'several, ANDed',
        [
          { fieldCode: 'tier', operator: 'in', value: ['silver', 'bronze'] },
          { fieldCode: 'credit_limit', operator: 'greater_than', value: 3000 },
        ],
      ],
    ];
    it.each(cases)('customers_grid: %s', async (_, filters) => {
      const expected = c().filter((r) => filters.every((f) => keeps(r, f)));
      const body = (await data('customers_grid', { filters, pageSize: '500' })).json();
      expect(body.pagination?.total).toBe(expected.length);
      expect(ids(body.data)).toEqual(ids(expected));
      expect(body.aggregates.credit_limit).toBe(sqlSum(expected.map((r) => r.credit_limit as number | null)));
    });

    const day = (i: number) => orders[i].ordered_at as string;
    const orderCases: Array<[string, () => Filter[]]> = [
      ['numeric key greater_than', () => [{ fieldCode: 'id', operator: 'greater_than', value: 100 }]],
      ['numeric key in', () => [{ fieldCode: 'id', operator: 'in', value: [1, 2, 3, 7] }]],
      ['integer equals', () => [{ fieldCode: 'customer_id', operator: 'equals', value: 5 }]],
      ['decimal between', () => [{ fieldCode: 'amount', operator: 'between', value: [100, 500.5] }]],
      ['decimal less_than', () => [{ fieldCode: 'amount', operator: 'less_than', value: 200 }]],
      ['select equals', () => [{ fieldCode: 'status', operator: 'equals', value: 'paid' }]],
      ['select not_equals', () => [{ fieldCode: 'status', operator: 'not_equals', value: 'paid' }]],
      ['select in', () => [{ fieldCode: 'status', operator: 'in', value: ['new', 'cancelled'] }]],
      ['select not_in', () => [{ fieldCode: 'status', operator: 'not_in', value: ['new'] }]],
      ['select is_null', () => [{ fieldCode: 'status', operator: 'is_null' }]],
      ['date equals', () => [{ fieldCode: 'ordered_at', operator: 'equals', value: day(20) }]],
      ['date not_equals', () => [{ fieldCode: 'ordered_at', operator: 'not_equals', value: day(20) }]],
      ['date in', () => [{ fieldCode: 'ordered_at', operator: 'in', value: [day(20), day(21)] }]],
      ['date not_in', () => [{ fieldCode: 'ordered_at', operator: 'not_in', value: [day(20)] }]],
      ['date greater_than', () => [{ fieldCode: 'ordered_at', operator: 'greater_than', value: day(90) }]],
      ['date less_than', () => [{ fieldCode: 'ordered_at', operator: 'less_than', value: day(30) }]],
      ['date between', () => [{ fieldCode: 'ordered_at', operator: 'between', value: [day(10), day(40)] }]],
      ['date is_null', () => [{ fieldCode: 'ordered_at', operator: 'is_null' }]],
      ['date is_not_null', () => [{ fieldCode: 'ordered_at', operator: 'is_not_null' }]],
    ];
    it.each(orderCases)('orders_grid (after its default filter): %s', async (_, make) => {
      const filters = make();
      const defaults: Filter = { fieldCode: 'status', operator: 'not_equals', value: 'cancelled' };
      const expected = orders.filter((r) => keeps(r, defaults) && filters.every((f) => keeps(r, f)));
      const res = await data('orders_grid', { filters, pageSize: '500' });
      expect(res.statusCode).toBe(200);
      expect(ids(res.json().data)).toEqual(ids(expected));
      expect(res.json().pagination.nextCursor).toBeNull();
      expect(res.json().aggregates.amount).toBe(sum(expected.map((r) => Number(r.amount))));
    });

    it('should append request filters after the default ones: cancelled orders stay hidden', async () => {
      const res = await data('orders_grid', {
        filters: [{ fieldCode: 'status', operator: 'equals', value: 'cancelled' }],
      });
      expect(res.json().data).toEqual([]);
      expect(orders.some((o) => o.status === 'cancelled')).toBe(true);
    });
  });

  describe('bad requests (D30): 400 VALIDATION_ERROR with [{field, error}]', () => {
    it.each([
      ['bad JSON', { filters: '[{"fieldCode":' }, [{ field: 'filters', error: 'must be a JSON array' }]],
      [
        'not an array',
        { filters: { fieldCode: 'name' } },
        [{ field: 'filters', error: 'must be a JSON array' }],
      ],
      [
        'unknown operator',
        {
          filters: [
            { fieldCode: 'name', operator: 'equals', value: 'x' },
            { fieldCode: 'name', operator: 'like', value: 'x' },
          ],
        },
        [{ field: 'filters[1].operator', error: expect.stringContaining('must be one of') }],
      ],
      [
        'operator of another type',
        {
          filters: [
            { fieldCode: 'tier', operator: 'contains', value: 'go' },
            { fieldCode: 'credit_limit', operator: 'starts_with', value: '1' },
            { fieldCode: 'name', operator: 'between', value: ['a', 'b'] },
          ],
        },
        [
          { field: 'filters[0].operator', error: 'contains does not apply to a select column' },
          { field: 'filters[1].operator', error: 'starts_with does not apply to a numeric column' },
          { field: 'filters[2].operator', error: 'between does not apply to a text column' },
        ],
      ],
      [
        'value of the wrong type',
        { filters: [{ fieldCode: 'credit_limit', operator: 'greater_than', value: 'a lot' }] },
        [{ field: 'filters[0].value', error: 'must be a number' }],
      ],
      [
        'between without two values',
        { filters: [{ fieldCode: 'credit_limit', operator: 'between', value: [1] }] },
        [{ field: 'filters[0].value', error: 'must be a list [from, to]' }],
      ],
      [
        'missing value',
        { filters: [{ fieldCode: 'name', operator: 'equals' }] },
        [{ field: 'filters[0].value', error: 'is required' }],
      ],
      [
        'unknown and hidden fields',
        {
          filters: [
            { fieldCode: 'nope', operator: 'equals', value: 1 },
            { fieldCode: 'internal_notes', operator: 'is_null' },
          ],
        },
        [
          { field: 'filters[0].fieldCode', error: 'unknown column' },
          { field: 'filters[1].fieldCode', error: 'unknown column' },
        ],
      ],
      [
        'a registry field that is not a column of the grid',
        { filters: [{ fieldCode: 'phone', operator: 'is_null' }] },
        [{ field: 'filters[0].fieldCode', error: 'unknown column' }],
      ],
      [
        'unknown sort field',
        { sort: [{ fieldCode: 'phone' }] },
        [{ field: 'sort[0].fieldCode', error: 'unknown column' }],
      ],
      [
        'bad sort direction',
        { sort: [{ fieldCode: 'name', direction: 'up' }] },
        [{ field: 'sort[0].direction', error: 'must be asc or desc' }],
      ],
      ['unknown parameter', { limit: '5' }, [{ field: 'limit', error: 'unknown query parameter' }]],
      ['negative page', { page: '-1' }, [{ field: 'page', error: expect.stringContaining('integer') }]],
      ['non-numeric page', { page: 'two' }, [{ field: 'page', error: expect.stringContaining('integer') }]],
      [
        'zero pageSize',
        { pageSize: '0' },
        [{ field: 'pageSize', error: expect.stringContaining('integer') }],
      ],
      [
        'negative pageSize',
        { pageSize: '-5' },
        [{ field: 'pageSize', error: expect.stringContaining('integer') }],
      ],
      [
        'a cursor on an offset grid',
        { cursor: 'abc' },
        [{ field: 'cursor', error: 'this dataview pages by page number' }],
      ],
      [
        'groupBy of a column that is not groupable',
        { groupBy: 'name' },
        [{ field: 'groupBy', error: 'is not a groupable column of this dataview' }],
      ],
      ['groupKey without groupBy', { groupKey: 'gold' }, [{ field: 'groupKey', error: 'needs groupBy' }]],
    ] as const)('customers_grid: %s', async (_, params, expected) => {
      expect(await details('customers_grid', params as Record<string, unknown>)).toEqual(expected);
    });

    it('should refuse filters and sort on columns that are not filterable or sortable, and on masked ones', async () => {
      expect(
        await details('customers_contact', {
          filters: [
            { fieldCode: 'name', operator: 'equals', value: 'x' },
            { fieldCode: 'phone', operator: 'equals', value: '+1 202 555 0104' },
          ],
        }),
      ).toEqual([
        { field: 'filters[0].fieldCode', error: 'column is not filterable' },
        { field: 'filters[1].fieldCode', error: 'column is not filterable' },
      ]);
      expect(await details('customers_contact', { sort: [{ fieldCode: 'name' }] })).toEqual([
        { field: 'sort[0].fieldCode', error: 'column is not sortable' },
      ]);
      expect(await details('customers_contact', { sort: [{ fieldCode: 'phone' }] })).toEqual([
        { field: 'sort[0].fieldCode', error: 'column is not sortable' },
      ]);
      expect(await details('customers_contact', { groupBy: 'phone' })).toEqual([
        { field: 'groupBy', error: 'a masked or hidden field cannot be grouped' },
      ]);
      expect(
        await details('customers_contact', { sort: [{ fieldCode: 'id' }, { fieldCode: 'id' }] }),
      ).toEqual([{ field: 'sort', error: 'this dataview sorts by one column only' }]);
    });

    it('should refuse aggregates the configuration asks of masked fields or of the wrong type', async () => {
      await insertDataview(ds, 'bad_aggregates', 'customers', {
        columns: [
          col('phone', { aggregateFunction: 'count' }),
          col('name', { aggregateFunction: 'sum' }),
          col('credit_limit', { aggregateFunction: 'median' }),
        ],
      });
      expect(await details('bad_aggregates', {})).toEqual([
        {
          field: 'config.columns[0].aggregateFunction',
          error: 'a masked or hidden field cannot be aggregated',
        },
        { field: 'config.columns[1].aggregateFunction', error: 'sum does not apply to a text column' },
        { field: 'config.columns[2].aggregateFunction', error: expect.stringContaining('must be one of') },
      ]);
    });
  });
});
