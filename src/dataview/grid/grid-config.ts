import { FieldError, ValidationError } from '../../common/errors/app-error';

/**
 * The parts of a dvc_config (spec §2.9.1) that decide what a grid reads, read leniently (display
 * keys the service does not use are left to the client) but typed: a key the grid needs with the
 * wrong shape is a problem the answer names (`config.columns[2].fieldCode`).
 */

/** A column of the grid that shows a field (rule 1: only columns with a fieldCode select data). */
export interface GridColumn {
  /** Position in `config.columns`, for error labels. */
  index: number;
  fieldCode: string;
  /** As configured (text, numeric, date, boolean, select, custom, actions, link); informational. */
  columnType: string | null;
  isFilterable: boolean;
  isSortable: boolean;
  searchable: boolean;
  /** As configured; checked when the grid is planned. */
  aggregateFunction: string | null;
}

/** A default filter or sort entry as configured (checked when the grid is planned). */
export interface ConfiguredFilter {
  fieldCode: unknown;
  operator: unknown;
  value: unknown;
}

export interface ConfiguredSort {
  fieldCode: unknown;
  direction: unknown;
}

export type PaginationType = 'offset' | 'cursor';

export interface GridConfig {
  columns: GridColumn[];
  defaultFilters: ConfiguredFilter[];
  defaultSort: ConfiguredSort[];
  /** filters.enableFiltering (default true): request filters allowed. */
  filtering: boolean;
  /** sorting.enableSorting (default true): a request sort allowed. */
  sorting: boolean;
  /** sorting.allowMultiSort (default true): more than one request sort key allowed. */
  multiSort: boolean;
  /** display.pageSize (default 25, spec §8's example). */
  pageSize: number;
  /** display.paginationType: `cursor` pages by keyset; `offset` (default) and `virtual` by offset. */
  pagination: PaginationType;
  /** source.maxRows (default 10000, spec §8): no page is larger. */
  maxRows: number;
  /** grouping.groupableColumns: the fieldCodes `groupBy` may name. */
  groupable: string[];
}

export const DEFAULT_PAGE_SIZE = 25;
export const DEFAULT_MAX_ROWS = 10000;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Reads the grid part of a dataview's configuration; 400 naming every misshapen key. */
export function gridConfigOf(config: Record<string, unknown>): GridConfig {
  const errors: FieldError[] = [];
  const section = (key: string): Record<string, unknown> => {
    const v = config[key];
    if (v === undefined || v === null) return {};
    if (isObject(v)) return v;
    errors.push({ field: `config.${key}`, error: 'must be an object' });
    return {};
  };
  const bool = (obj: Record<string, unknown>, key: string, label: string, fallback: boolean): boolean => {
    const v = obj[key];
    if (v === undefined || v === null) return fallback;
    if (typeof v === 'boolean') return v;
    errors.push({ field: label, error: 'must be true or false' });
    return fallback;
  };
  const positive = (obj: Record<string, unknown>, key: string, label: string, fallback: number): number => {
    const v = obj[key];
    if (v === undefined || v === null) return fallback;
    if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 1) return v;
    errors.push({ field: label, error: 'must be a positive integer' });
    return fallback;
  };
  const list = (obj: Record<string, unknown>, key: string, label: string): unknown[] => {
    const v = obj[key];
    if (v === undefined || v === null) return [];
    if (Array.isArray(v)) return v as unknown[];
    errors.push({ field: label, error: 'must be an array' });
    return [];
  };

  const columns: GridColumn[] = [];
  for (const [index, c] of list(config, 'columns', 'config.columns').entries()) {
    const label = `config.columns[${index}]`;
    if (!isObject(c)) {
      errors.push({ field: label, error: 'must be an object' });
      continue;
    }
    if (c.fieldCode === null || c.fieldCode === undefined) continue; // a synthetic column (actions…)
    if (typeof c.fieldCode !== 'string' || c.fieldCode === '') {
      errors.push({ field: `${label}.fieldCode`, error: 'must be a field name or null' });
      continue;
    }
    const aggregate = c.aggregateFunction;
    if (aggregate !== undefined && aggregate !== null && typeof aggregate !== 'string')
      errors.push({ field: `${label}.aggregateFunction`, error: 'must be a text' });
    columns.push({
      index,
      fieldCode: c.fieldCode,
      columnType: typeof c.columnType === 'string' ? c.columnType : null,
      isFilterable: bool(c, 'isFilterable', `${label}.isFilterable`, false),
      isSortable: bool(c, 'isSortable', `${label}.isSortable`, false),
      searchable: bool(c, 'searchable', `${label}.searchable`, false),
      aggregateFunction: typeof aggregate === 'string' && aggregate !== '' ? aggregate : null,
    });
  }

  const filters = section('filters');
  const defaultFilters: ConfiguredFilter[] = [];
  for (const [i, f] of list(filters, 'defaultFilters', 'config.filters.defaultFilters').entries()) {
    if (isObject(f)) defaultFilters.push({ fieldCode: f.fieldCode, operator: f.operator, value: f.value });
    else errors.push({ field: `config.filters.defaultFilters[${i}]`, error: 'must be an object' });
  }
  const sorting = section('sorting');
  const defaultSort: ConfiguredSort[] = [];
  for (const [i, s] of list(sorting, 'defaultSort', 'config.sorting.defaultSort').entries()) {
    if (isObject(s)) defaultSort.push({ fieldCode: s.fieldCode, direction: s.direction });
    else errors.push({ field: `config.sorting.defaultSort[${i}]`, error: 'must be an object' });
  }
  const grouping = section('grouping');
  const groupable = list(grouping, 'groupableColumns', 'config.grouping.groupableColumns');
  if (groupable.some((g) => typeof g !== 'string'))
    errors.push({ field: 'config.grouping.groupableColumns', error: 'must be an array of field names' });

  const display = section('display');
  const source = section('source');
  const result: GridConfig = {
    columns,
    defaultFilters,
    defaultSort,
    filtering: bool(filters, 'enableFiltering', 'config.filters.enableFiltering', true),
    sorting: bool(sorting, 'enableSorting', 'config.sorting.enableSorting', true),
    multiSort: bool(sorting, 'allowMultiSort', 'config.sorting.allowMultiSort', true),
    pageSize: positive(display, 'pageSize', 'config.display.pageSize', DEFAULT_PAGE_SIZE),
    pagination: display.paginationType === 'cursor' ? 'cursor' : 'offset',
    maxRows: positive(source, 'maxRows', 'config.source.maxRows', DEFAULT_MAX_ROWS),
    groupable: groupable.filter((g): g is string => typeof g === 'string'),
  };
  if (errors.length > 0) throw new ValidationError('The dataview configuration cannot be served', errors);
  return result;
}
