/**
 * Dataview grids (spec §4.4, D30, D31) through the client: a page keeps its rows, its pagination and
 * its aggregates together (unwrap() answers the envelope's `data` alone), groups are a call of their
 * own, and rows are typed by the entity the dataview shows when the document has its schema:
 * `client.dataviews.page<'customers'>('customers_grid')` has rows of the Customer schema.
 */
import type { Client } from 'openapi-fetch';
import type { ChangeEvent, LiveChangesOptions } from './live';
import { answered, bodyOf } from './outcome';
import type { paths } from './schema';
import type { EntityRecord, JsonSuccess, QueryOf } from './types';

type DataOp = paths['/api/v1/dataviews/{dvc_code}/data']['get'];
type DataBody = JsonSuccess<DataOp>;
type Items = DataBody['data'];

/** A row as the document describes every dataview's: its fields, and lastModified (D42). */
export type DataviewRow = Extract<Items, Array<{ lastModified: unknown }>>[number];
/** A group of a grouped read: {key, count, aggregates}. */
export type DataviewGroup = Extract<Items, Array<{ count: unknown }>>[number];
/** Offset dataviews: {page, pageSize, total}; cursor dataviews: {pageSize, nextCursor} (null on the last page). */
export type GridPagination = NonNullable<DataBody['pagination']>;
/** The columns' aggregates over the whole filtered set. */
export type GridAggregates = NonNullable<DataBody['aggregates']>;

/** A grid row of a dataview over entity `E`: the entity's schema (when the document has one) and the row's own fields. */
export type GridRow<E extends string = string> = EntityRecord<E> & DataviewRow;

export type GridOperator =
  | 'equals'
  | 'not_equals'
  | 'in'
  | 'not_in'
  | 'is_null'
  | 'is_not_null'
  | 'contains'
  | 'starts_with'
  | 'ends_with'
  | 'greater_than'
  | 'less_than'
  | 'between';

export interface GridFilter {
  fieldCode: string;
  operator: GridOperator;
  /** An array for in and not_in, [from, to] for between, none for is_null and is_not_null. */
  value?: unknown;
}

export interface GridSortKey {
  fieldCode: string;
  direction: 'asc' | 'desc';
}

/** A group's key as groups() answers it: null for the rows where the field is NULL. */
export type GroupKey = string | number | boolean | null;

/** The data route's query, with filters and sort as arrays (sent as the JSON the route takes). */
export type GridQuery = Omit<QueryOf<DataOp>, 'filters' | 'sort' | 'groupBy' | 'groupKey'> & {
  filters?: GridFilter[];
  sort?: GridSortKey[];
};

/** A page's query: the rows of the whole grid, or of one group (groupBy with its groupKey). */
export type GridPageQuery = GridQuery &
  ({ groupBy?: undefined; groupKey?: undefined } | { groupBy: string; groupKey: GroupKey });

export interface GridPage<R> {
  rows: R[];
  pagination: GridPagination;
  aggregates: GridAggregates;
}

export interface GridGroups {
  groups: DataviewGroup[];
  aggregates: GridAggregates;
}

export type ChangesOptions = Omit<LiveChangesOptions, 'path' | 'baseUrl' | 'headers' | 'fetch'>;

export interface DataviewsApi {
  /** GET /api/v1/dataviews/{code}/data: one page of rows with its pagination and aggregates; throws ApiError. */
  page<E extends string = string>(code: string, query?: GridPageQuery): Promise<GridPage<GridRow<E>>>;
  /** The same route with groupBy: the groups {key, count, aggregates}, ordered by key. */
  groups(code: string, groupBy: string, query?: GridQuery): Promise<GridGroups>;
  /** The dataview's live changes (D55), rows shaped as the grid's. */
  changes<E extends string = string>(
    code: string,
    options?: ChangesOptions,
  ): AsyncGenerator<ChangeEvent<GridRow<E>>>;
}

/** The query string's values: filters and sort as JSON, a group key as a JSON scalar (the route parses it so). */
function toQuery(query: GridQuery & { groupBy?: string; groupKey?: GroupKey }): QueryOf<DataOp> {
  const { filters, sort, groupKey, ...rest } = query;
  return {
    ...rest,
    ...(filters !== undefined && filters.length > 0 ? { filters: JSON.stringify(filters) } : {}),
    ...(sort !== undefined && sort.length > 0 ? { sort: JSON.stringify(sort) } : {}),
    ...(groupKey !== undefined ? { groupKey: JSON.stringify(groupKey) } : {}),
  };
}

export function dataviewsApi(
  api: Client<paths>,
  changes: (source: string, options?: ChangesOptions) => AsyncGenerator<ChangeEvent<Record<string, unknown>>>,
): DataviewsApi {
  const read = async (code: string, query: QueryOf<DataOp>) =>
    bodyOf(
      await answered(
        api.GET('/api/v1/dataviews/{dvc_code}/data', { params: { path: { dvc_code: code }, query } }),
      ),
    );
  return {
    async page<E extends string = string>(code: string, query: GridPageQuery = {}) {
      const body = await read(code, toQuery(query));
      const rows = body.data as GridRow<E>[];
      return {
        rows,
        // Always there for rows; a last page (no next cursor) if a future answer left it out.
        pagination: body.pagination ?? { pageSize: rows.length, nextCursor: null },
        aggregates: body.aggregates ?? {},
      };
    },
    async groups(code, groupBy, query = {}) {
      const body = await read(code, toQuery({ ...query, groupBy }));
      return { groups: body.data as DataviewGroup[], aggregates: body.aggregates ?? {} };
    },
    changes<E extends string = string>(code: string, options?: ChangesOptions) {
      return changes(`dataviews/${code}`, options) as AsyncGenerator<ChangeEvent<GridRow<E>>>;
    },
  };
}
