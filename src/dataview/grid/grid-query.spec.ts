import { ValidationError } from '../../common/errors/app-error';
import { DEMO_DATAVIEWS, DEMO_PROFILES, JsonObject } from '../../database/seed/demo-data';
import { EntityPolicy, normalisePolicy } from '../../profile/policy/policy.model';
import { FILTER_OPERATORS } from '../../records/query/record-query';
import type { EntityInfo } from '../../registry/registry.types';
import { gridConfigOf } from './grid-config';
import { ColumnKind, gridRow, kindOf, operatorFits, planGrid } from './grid-query';
import { GridRequest, parseGridRequest } from './grid-request';
import { demoEntityInfo } from '../../../test/support/demo-registry';

/** The demo entity as the registry builds it from the seed's system row. */
function entity(code: string): EntityInfo {
  return demoEntityInfo(code);
}

function policy(code: string, overrides: JsonObject = {}): EntityPolicy {
  const p = DEMO_PROFILES.find((x) => x.objectCode === code)!;
  return normalisePolicy({ modeCode: p.mode, policy: JSON.stringify({ ...p.policy, ...overrides }) });
}

const demo = (code: string) => gridConfigOf(DEMO_DATAVIEWS.find((d) => d.code === code)!.config);
const CUSTOMERS = entity('customers');
const ORDERS = entity('orders');
const request = (params: Record<string, unknown> = {}): GridRequest =>
  parseGridRequest(
    Object.fromEntries(
      Object.entries(params).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]),
    ),
  );

/** The details of the 400 a plan answers. */
function problems(run: () => unknown): unknown {
  try {
    run();
  } catch (err) {
    expect(err).toBeInstanceOf(ValidationError);
    return (err as ValidationError).details;
  }
  throw new Error('expected a ValidationError');
}

describe('dataview grid → records query (spec §4.4, D30)', () => {
  describe('column kinds and operators (§2.9.1)', () => {
    it('should take the kind from the registry type, whatever the column says', () => {
      expect(
        ['text', 'email', 'select', 'integer', 'numeric', 'date', 'boolean', 'json'].map((t) =>
          kindOf(t as never),
        ),
      ).toEqual(['text', 'text', 'select', 'numeric', 'numeric', 'date', 'boolean', undefined]);
    });

    it('should allow each operator on the kinds of the spec table', () => {
      const table = Object.fromEntries(
        (['text', 'numeric', 'date', 'boolean', 'select'] as ColumnKind[]).map((k) => [
          k,
          FILTER_OPERATORS.filter((op) => operatorFits(op, k)),
        ]),
      );
      const all = ['equals', 'not_equals', 'in', 'not_in', 'is_null', 'is_not_null'];
      expect(table).toEqual({
        text: [...all.slice(0, 4), 'contains', 'starts_with', 'ends_with', ...all.slice(4)],
        numeric: [...all.slice(0, 4), 'greater_than', 'less_than', 'between', ...all.slice(4)],
        date: [...all.slice(0, 4), 'greater_than', 'less_than', 'between', ...all.slice(4)],
        boolean: all,
        select: all,
      });
    });
  });

  describe('customers_grid', () => {
    const plan = (params: Record<string, unknown> = {}, p = policy('customers')) =>
      planGrid(demo('customers_grid'), CUSTOMERS, p, request(params));

    it('should translate the defaults: no filter, sort name asc, the sum of credit_limit, offset pages of 25', () => {
      const p = plan();
      expect(p).toEqual({
        query: { filters: [], sort: [{ field: 'name', direction: 'asc' }] },
        permissions: {
          filterable: new Set(['name', 'email', 'tier', 'credit_limit']),
          sortable: new Set(['name', 'email', 'tier', 'credit_limit']),
        },
        rowFields: ['id', 'name', 'email', 'tier', 'credit_limit'],
        aggregates: [
          {
            field: 'credit_limit',
            fn: 'sum',
            name: 'credit_limit',
            label: 'config.columns[3].aggregateFunction',
          },
        ],
        pagination: 'offset',
        pageSize: 25,
        page: 0,
      });
    });

    it('should translate request filters, sort, search and pages', () => {
      const p = plan({
        filters: [
          { fieldCode: 'tier', operator: 'in', value: ['gold'] },
          { fieldCode: 'email', operator: 'contains', value: 'x' },
          { fieldCode: 'name', operator: 'is_null' },
        ],
        sort: [{ fieldCode: 'credit_limit', direction: 'DESC' }, { fieldCode: 'name' }],
        search: '  ann ',
        page: '3',
        pageSize: '10',
      });
      expect(p.query).toEqual({
        filters: [
          { field: 'tier', operator: 'in', value: ['gold'], label: 'filters[0].value' },
          { field: 'email', operator: 'contains', value: 'x', label: 'filters[1].value' },
          { field: 'name', operator: 'is_null', value: undefined, label: 'filters[2].value' },
        ],
        sort: [
          { field: 'credit_limit', direction: 'desc' },
          { field: 'name', direction: 'asc' },
        ],
        search: { text: 'ann', fields: ['name', 'email'] },
      });
      expect([p.page, p.pageSize]).toEqual([3, 10]);
    });

    it('should cap the page size at the profile’s maxPageSize and source.maxRows', () => {
      expect(plan({ pageSize: '100000' }).pageSize).toBe(500);
      expect(
        plan({ pageSize: '100000' }, policy('customers', { queryPolicy: { maxPageSize: 40 } })).pageSize,
      ).toBe(40);
      const small = gridConfigOf({ ...DEMO_DATAVIEWS[0].config, source: { maxRows: 12 } });
      expect(planGrid(small, CUSTOMERS, policy('customers'), request()).pageSize).toBe(12);
      expect(problems(() => plan({ page: '100000000', pageSize: '500' }))).toEqual([
        { field: 'page', error: 'is too large' },
      ]);
    });

    it('should name every problem of the request', () => {
      expect(
        problems(() =>
          plan({
            filters: [
              { fieldCode: 'phone', operator: 'equals', value: '1' },
              { fieldCode: 'internal_notes', operator: 'equals', value: '1' },
              { fieldCode: 'tier', operator: 'greater_than', value: 'gold' },
              { fieldCode: 'credit_limit', operator: 'contains', value: '1' },
            ],
            sort: [{ fieldCode: 'phone' }],
            groupBy: 'name',
            cursor: 'x',
          }),
        ),
      ).toEqual([
        { field: 'filters[0].fieldCode', error: 'unknown column' },
        { field: 'filters[1].fieldCode', error: 'unknown column' },
        { field: 'filters[2].operator', error: 'greater_than does not apply to a select column' },
        { field: 'filters[3].operator', error: 'contains does not apply to a numeric column' },
        { field: 'groupBy', error: 'is not a groupable column of this dataview' },
        { field: 'sort[0].fieldCode', error: 'unknown column' },
        { field: 'cursor', error: 'this dataview pages by page number' },
      ]);
    });

    it('should refuse ad-hoc filters when the profile does not allow them', () => {
      const strict = policy('customers', { queryPolicy: { allowAdhocFilters: false } });
      expect(
        problems(() => plan({ filters: [{ fieldCode: 'tier', operator: 'equals', value: 'gold' }] }, strict)),
      ).toEqual([{ field: 'filters', error: 'ad-hoc filters are not allowed for this entity' }]);
    });

    it('should answer groups for a groupable column, and a group’s rows for a group key', () => {
      const groups = plan({ groupBy: 'tier' });
      expect([groups.groupBy, groups.query.filters]).toEqual(['tier', []]);
      const rows = plan({ groupBy: 'tier', groupKey: 'null', page: '1' });
      expect(rows.groupBy).toBeUndefined();
      expect(rows.query.filters).toEqual([
        { field: 'tier', operator: 'equals', value: null, label: 'groupKey' },
      ]);
      expect(problems(() => plan({ groupBy: 'tier', page: '1' }))).toEqual([
        { field: 'page', error: 'groups are answered whole' },
      ]);
    });
  });

  describe('orders_grid', () => {
    it('should put the default filters first and keep the cursor pagination', () => {
      const p = planGrid(
        demo('orders_grid'),
        ORDERS,
        policy('orders'),
        request({ filters: [{ fieldCode: 'status', operator: 'equals', value: 'paid' }] }),
      );
      expect(p.query.filters).toEqual([
        {
          field: 'status',
          operator: 'not_equals',
          value: 'cancelled',
          label: 'config.filters.defaultFilters[0].value',
        },
        { field: 'status', operator: 'equals', value: 'paid', label: 'filters[0].value' },
      ]);
      expect(p.query.sort).toEqual([{ field: 'ordered_at', direction: 'desc' }]);
      expect([p.pagination, p.rowFields]).toEqual([
        'cursor',
        ['id', 'customer_id', 'amount', 'status', 'ordered_at'],
      ]);
      expect(
        problems(() => planGrid(demo('orders_grid'), ORDERS, policy('orders'), request({ page: '0' }))),
      ).toEqual([{ field: 'page', error: 'this dataview pages by cursor' }]);
      expect(
        problems(() =>
          planGrid(
            demo('orders_grid'),
            ORDERS,
            policy('orders'),
            request({ sort: [{ fieldCode: 'id' }, { fieldCode: 'amount' }] }),
          ),
        ),
      ).toEqual([{ field: 'sort', error: 'this dataview sorts by one column only' }]);
    });
  });

  describe('configurations the profile cannot serve', () => {
    const config = (extra: JsonObject) =>
      gridConfigOf({
        columns: [
          { fieldCode: 'name', isFilterable: false, isSortable: false, searchable: true },
          { fieldCode: 'phone', isFilterable: true, isSortable: true, searchable: true },
          { fieldCode: 'internal_notes', isFilterable: true },
          { fieldCode: null, columnType: 'actions' },
        ],
        ...extra,
      });

    it('should omit hidden and projected-out fields from rows and search masked fields nowhere', () => {
      const p = planGrid(config({}), CUSTOMERS, policy('customers'), request({ search: 'x' }));
      expect(p.rowFields).toEqual(['id', 'name', 'phone']);
      expect(p.query.search).toEqual({ text: 'x', fields: ['name'] });
      expect([...p.permissions.filterable]).toEqual(['name']);
    });

    it('should refuse filters, sort and groups on masked or not filterable columns', () => {
      const grid = config({ grouping: { groupableColumns: ['phone'] } });
      const run = (params: Record<string, unknown>) => () =>
        planGrid(grid, CUSTOMERS, policy('customers'), request(params));
      expect(
        problems(
          run({
            filters: [
              { fieldCode: 'name', operator: 'equals', value: 'x' },
              { fieldCode: 'phone', operator: 'equals', value: 'x' },
            ],
            sort: [{ fieldCode: 'name' }, { fieldCode: 'phone' }],
          }),
        ),
      ).toEqual([
        { field: 'filters[0].fieldCode', error: 'column is not filterable' },
        { field: 'filters[1].fieldCode', error: 'column is not filterable' },
        { field: 'sort[0].fieldCode', error: 'column is not sortable' },
        { field: 'sort[1].fieldCode', error: 'column is not sortable' },
      ]);
      expect(problems(run({ groupBy: 'phone' }))).toEqual([
        { field: 'groupBy', error: 'a masked or hidden field cannot be grouped' },
      ]);
    });

    it('should refuse default filters, default sort and aggregates it cannot apply', () => {
      const grid = gridConfigOf({
        columns: [
          { fieldCode: 'phone', aggregateFunction: 'max' },
          { fieldCode: 'name', aggregateFunction: 'avg' },
          { fieldCode: 'credit_limit', aggregateFunction: 'Median' },
          { fieldCode: 'tier', aggregateFunction: 'COUNT' },
        ],
        filters: {
          defaultFilters: [
            { fieldCode: 'internal_notes', operator: 'is_null' },
            { fieldCode: 'tier', operator: 'starts_with', value: 'g' },
            { fieldCode: 'tier', operator: 'like', value: 'g' },
          ],
        },
        sorting: { defaultSort: [{ fieldCode: 'phone', direction: 'asc' }] },
      });
      expect(problems(() => planGrid(grid, CUSTOMERS, policy('customers'), request()))).toEqual([
        {
          field: 'config.filters.defaultFilters[0].fieldCode',
          error: 'names no field the caller may filter on',
        },
        {
          field: 'config.filters.defaultFilters[1].operator',
          error: 'starts_with does not apply to a select column',
        },
        {
          field: 'config.filters.defaultFilters[2].operator',
          error: expect.stringContaining('must be one of'),
        },
        { field: 'config.sorting.defaultSort[0].fieldCode', error: 'names no field the caller may sort on' },
        {
          field: 'config.columns[0].aggregateFunction',
          error: 'a masked or hidden field cannot be aggregated',
        },
        { field: 'config.columns[1].aggregateFunction', error: 'avg does not apply to a text column' },
        { field: 'config.columns[2].aggregateFunction', error: expect.stringContaining('must be one of') },
      ]);
    });

    it('should honour enableFiltering and enableSorting', () => {
      const grid = config({ filters: { enableFiltering: false }, sorting: { enableSorting: false } });
      expect(
        problems(() =>
          planGrid(
            grid,
            CUSTOMERS,
            policy('customers'),
            request({ filters: [{ fieldCode: 'name', operator: 'is_null' }], sort: [{ fieldCode: 'name' }] }),
          ),
        ),
      ).toEqual([
        { field: 'filters', error: 'filtering is disabled for this dataview' },
        { field: 'sort', error: 'sorting is disabled for this dataview' },
      ]);
    });
  });

  it('should make a row of the row fields and lastModified only', () => {
    expect(gridRow({ id: 1, name: 'a', email: 'b', lastModified: 'T' }, ['id', 'name', 'tier'])).toEqual({
      id: 1,
      name: 'a',
      lastModified: 'T',
    });
  });
});
