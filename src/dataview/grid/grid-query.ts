import { FieldError, ValidationError } from '../../common/errors/app-error';
import { filterableFields, visibleFields } from '../../profile/policy/masking';
import type { EntityPolicy } from '../../profile/policy/policy.model';
import { LAST_MODIFIED_KEY } from '../../records/concurrency-token';
import {
  AGGREGATE_FUNCTIONS,
  aggregateAllowed,
  AggregateSpec,
  isAggregateFunction,
} from '../../records/query/aggregates';
import {
  FILTER_OPERATORS,
  FilterCondition,
  FilterOperator,
  QueryPermissions,
  RecordQuery,
  SortKey,
} from '../../records/query/record-query';
import type { Row } from '../../records/records-read.repository';
import type { EntityInfo, FieldDef } from '../../registry/registry.types';
import type { GridColumn, GridConfig, PaginationType } from './grid-config';
import { GridRequest, MAX_OFFSET } from './grid-request';

/**
 * A dataview's configuration and a request → the records core's RecordQuery and QueryPermissions
 * (spec §4.4 rules 1-7, D30, D31). Nothing here builds SQL: the query goes to the records use cases,
 * which scope it by tenant, soft delete and row filter, and project and mask what they read.
 */

import { isSearchable, kindOf, operatorFits } from '../../records/query/operators';

export { kindOf, operatorFits, type ColumnKind } from '../../records/query/operators';

export interface GridPlan {
  /** Default filters, then the request's, then the group key; the sort; the search. */
  query: Omit<RecordQuery, 'page'>;
  /** What the records core lets this grid filter, search, aggregate and sort on. */
  permissions: QueryPermissions;
  /** The keys of a row: the key field, the columns' fields the caller may see (rule 1). */
  rowFields: string[];
  aggregates: AggregateSpec[];
  /** The answer is the groups of this field (groupBy without groupKey). */
  groupBy?: string;
  pagination: PaginationType;
  pageSize: number;
  /** Zero-based page of an offset grid (rule 4: offset = page * pageSize). */
  page: number;
}

/** Plans a grid read; 400 VALIDATION_ERROR listing every problem of the request and the configuration. */
export function planGrid(
  grid: GridConfig,
  entity: EntityInfo,
  policy: EntityPolicy,
  request: GridRequest,
): GridPlan {
  const errors: FieldError[] = [];
  const fieldOf = new Map(entity.fields.map((f) => [f.name, f]));
  const visible = new Set(visibleFields(policy, entity.fields));
  const queryable = new Set(filterableFields(policy, entity.fields));
  const columnOf = new Map<string, GridColumn>();
  for (const c of grid.columns) if (!columnOf.has(c.fieldCode)) columnOf.set(c.fieldCode, c);

  /** A column of this grid over a field the caller may see, or a problem. */
  const column = (code: string, label: string): { column: GridColumn; field: FieldDef } | undefined => {
    const c = columnOf.get(code);
    const field = fieldOf.get(code);
    if (!c || !field || !visible.has(code)) {
      errors.push({ field: label, error: 'unknown column' });
      return undefined;
    }
    return { column: c, field };
  };
  const kindError = (field: FieldDef, operator: FilterOperator): string | undefined => {
    const kind = kindOf(field.type);
    if (!kind) return `a ${field.type} column cannot be filtered`;
    return operatorFits(operator, kind) ? undefined : `${operator} does not apply to a ${kind} column`;
  };

  // Rule 2: the configured default filters first. They may name any field the profile lets the
  // caller filter on (not only the grid's columns); one the profile hides or masks cannot be applied,
  // and leaving it out would show rows the dataview is meant to hide, so it is a problem.
  const filters: FilterCondition[] = [];
  const defaultFilterFields: string[] = [];
  for (const [i, f] of grid.defaultFilters.entries()) {
    const label = `config.filters.defaultFilters[${i}]`;
    const field = typeof f.fieldCode === 'string' ? fieldOf.get(f.fieldCode) : undefined;
    if (!field || !queryable.has(field.name)) {
      errors.push({ field: `${label}.fieldCode`, error: 'names no field the caller may filter on' });
      continue;
    }
    if (typeof f.operator !== 'string' || !(FILTER_OPERATORS as readonly string[]).includes(f.operator)) {
      errors.push({ field: `${label}.operator`, error: `must be one of ${FILTER_OPERATORS.join(', ')}` });
      continue;
    }
    const operator = f.operator as FilterOperator;
    const problem = kindError(field, operator);
    if (problem) {
      errors.push({ field: `${label}.operator`, error: problem });
      continue;
    }
    defaultFilterFields.push(field.name);
    filters.push({ field: field.name, operator, value: f.value, label: `${label}.value` });
  }

  // Then the request's filters (D30): only on the grid's filterable columns, typed by the registry.
  if (request.filters.length > 0 && !grid.filtering)
    errors.push({ field: 'filters', error: 'filtering is disabled for this dataview' });
  else if (request.filters.length > 0 && !policy.query.allowAdhocFilters)
    errors.push({ field: 'filters', error: 'ad-hoc filters are not allowed for this entity' });
  else
    for (const f of request.filters) {
      const label = `filters[${f.index}]`;
      const found = column(f.fieldCode, `${label}.fieldCode`);
      if (!found) continue;
      if (!found.column.isFilterable || !queryable.has(f.fieldCode)) {
        errors.push({ field: `${label}.fieldCode`, error: 'column is not filterable' });
        continue;
      }
      const problem = kindError(found.field, f.operator);
      if (problem) {
        errors.push({ field: `${label}.operator`, error: problem });
        continue;
      }
      filters.push({ field: f.fieldCode, operator: f.operator, value: f.value, label: `${label}.value` });
    }

  // Grouping: groupBy names a groupable column; groupKey narrows to one group (its rows, paged).
  let groupBy: string | undefined;
  if (request.groupBy !== undefined) {
    if (!grid.groupable.includes(request.groupBy))
      errors.push({ field: 'groupBy', error: 'is not a groupable column of this dataview' });
    else {
      const found = column(request.groupBy, 'groupBy');
      if (found && (!queryable.has(request.groupBy) || !kindOf(found.field.type)))
        errors.push({ field: 'groupBy', error: 'a masked or hidden field cannot be grouped' });
      else if (found && request.groupKey)
        filters.push({
          field: request.groupBy,
          operator: 'equals',
          value: request.groupKey.value,
          label: 'groupKey',
        });
      else if (found) groupBy = request.groupBy;
    }
  }
  if (groupBy !== undefined) {
    if (request.page !== undefined) errors.push({ field: 'page', error: 'groups are answered whole' });
    if (request.cursor !== undefined) errors.push({ field: 'cursor', error: 'groups are answered whole' });
  }

  // Rule 3: the request's sort, else the configured default sort (desc → DESC, anything else ASC).
  const sort: SortKey[] = [];
  const defaultSortFields: string[] = [];
  if (request.sort && request.sort.length > 0) {
    if (!grid.sorting) errors.push({ field: 'sort', error: 'sorting is disabled for this dataview' });
    else if (request.sort.length > 1 && !grid.multiSort)
      errors.push({ field: 'sort', error: 'this dataview sorts by one column only' });
    else
      for (const s of request.sort) {
        const label = `sort[${s.index}].fieldCode`;
        const found = column(s.fieldCode, label);
        if (!found) continue;
        if (!found.column.isSortable || !queryable.has(s.fieldCode) || !kindOf(found.field.type))
          errors.push({ field: label, error: 'column is not sortable' });
        else sort.push({ field: s.fieldCode, direction: s.direction });
      }
  } else
    for (const [i, s] of grid.defaultSort.entries()) {
      const field = typeof s.fieldCode === 'string' ? fieldOf.get(s.fieldCode) : undefined;
      if (!field || !queryable.has(field.name) || !kindOf(field.type)) {
        errors.push({
          field: `config.sorting.defaultSort[${i}].fieldCode`,
          error: 'names no field the caller may sort on',
        });
        continue;
      }
      defaultSortFields.push(field.name);
      const desc = typeof s.direction === 'string' && s.direction.toLowerCase() === 'desc';
      sort.push({ field: field.name, direction: desc ? 'desc' : 'asc' });
    }

  // Search: case-blind, over the columns marked searchable that the caller may filter on.
  let search: RecordQuery['search'];
  if (request.search !== undefined) {
    const fields = grid.columns
      .filter((c) => c.searchable && queryable.has(c.fieldCode) && visible.has(c.fieldCode))
      .filter((c) => isSearchable(fieldOf.get(c.fieldCode)!.type))
      .map((c) => c.fieldCode);
    if (fields.length === 0)
      errors.push({ field: 'search', error: 'this dataview has no searchable column' });
    else search = { text: request.search, fields: [...new Set(fields)] };
  }

  const aggregates = aggregatesOf(grid, fieldOf, visible, queryable, errors);

  // Page size: the request's or the configured one, at most the profile's maxPageSize and maxRows.
  const cap = Math.min(policy.query.maxPageSize, grid.maxRows);
  const pageSize = Math.min(request.pageSize ?? grid.pageSize, cap);
  const page = request.page ?? 0;
  if (grid.pagination === 'cursor' && request.page !== undefined && groupBy === undefined)
    errors.push({ field: 'page', error: 'this dataview pages by cursor' });
  if (grid.pagination === 'offset' && request.cursor !== undefined && groupBy === undefined)
    errors.push({ field: 'cursor', error: 'this dataview pages by page number' });
  if (page * pageSize > MAX_OFFSET) errors.push({ field: 'page', error: 'is too large' });

  if (errors.length > 0) throw new ValidationError('Invalid query', errors);

  const inGrid = new Set(grid.columns.map((c) => c.fieldCode));
  const keyName = entity.fields.find((f) => f.column === entity.primaryKeyColumn)?.name;
  const rowFields = [...new Set([...(keyName ? [keyName] : []), ...inGrid])].filter((n) => visible.has(n));
  const allowed = (extra: string[]) =>
    new Set([...inGrid, ...extra].filter((n) => queryable.has(n) && fieldOf.has(n)));
  return {
    query: { filters, sort, ...(search ? { search } : {}) },
    permissions: { filterable: allowed(defaultFilterFields), sortable: allowed(defaultSortFields) },
    rowFields,
    aggregates,
    ...(groupBy !== undefined ? { groupBy } : {}),
    pagination: grid.pagination,
    pageSize,
    page,
  };
}

/**
 * The columns' aggregates (sum, avg, min, max, count), keyed by fieldCode. The configuration asks
 * for them, but a masked or hidden field, or a function that does not fit the column, cannot be
 * served (400 naming the column): a sum or maximum would give away what the profile keeps back.
 */
function aggregatesOf(
  grid: GridConfig,
  fieldOf: ReadonlyMap<string, FieldDef>,
  visible: ReadonlySet<string>,
  queryable: ReadonlySet<string>,
  errors: FieldError[],
): AggregateSpec[] {
  const out: AggregateSpec[] = [];
  const named = new Set<string>();
  for (const c of grid.columns) {
    if (c.aggregateFunction === null || named.has(c.fieldCode)) continue;
    const label = `config.columns[${c.index}].aggregateFunction`;
    const fn = c.aggregateFunction.toLowerCase();
    const field = fieldOf.get(c.fieldCode);
    if (!isAggregateFunction(fn))
      errors.push({ field: label, error: `must be one of ${AGGREGATE_FUNCTIONS.join(', ')}` });
    else if (!field || !visible.has(c.fieldCode) || !queryable.has(c.fieldCode))
      errors.push({ field: label, error: 'a masked or hidden field cannot be aggregated' });
    else if (!aggregateAllowed(fn, field.type))
      errors.push({
        field: label,
        error: `${fn} does not apply to a ${kindOf(field.type) ?? field.type} column`,
      });
    else {
      named.add(c.fieldCode);
      out.push({ field: c.fieldCode, fn, name: c.fieldCode, label });
    }
  }
  return out;
}

/** A presented record (projected, masked, with lastModified) as a grid row: its row fields only. */
export function gridRow(record: Row, rowFields: readonly string[]): Row {
  const out: Row = {};
  for (const name of rowFields)
    if (Object.prototype.hasOwnProperty.call(record, name)) out[name] = record[name];
  out[LAST_MODIFIED_KEY] = record[LAST_MODIFIED_KEY] ?? null;
  return out;
}
