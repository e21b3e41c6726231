import { FieldError, ValidationError } from '../../common/errors/app-error';
import { DEFAULT_JSON_MAX_DEPTH, jsonDepthExceeds, depthProblem } from '../../common/http/json-depth';
import { FILTER_OPERATORS, FilterOperator } from '../../records/query/record-query';

/**
 * The query parameters of `GET /api/v1/dataviews/{code}/data` (spec §4.4, D30, D31), checked for
 * shape: `page`, `pageSize`, `filters` (JSON array of {fieldCode, operator, value}), `sort` (JSON
 * array of {fieldCode, direction}), `search`, `cursor`, `groupBy`, `groupKey`. Whether a field,
 * operator or value fits the dataview is decided when the grid is planned (grid-query.ts).
 */

export interface RequestFilter {
  /** Position in `filters`, for error labels. */
  index: number;
  fieldCode: string;
  operator: FilterOperator;
  /** Absent for is_null / is_not_null. */
  value?: unknown;
}

export interface RequestSort {
  index: number;
  fieldCode: string;
  direction: 'asc' | 'desc';
}

export interface GridRequest {
  page?: number;
  pageSize?: number;
  filters: RequestFilter[];
  /** Undefined: the configured default sort. */
  sort?: RequestSort[];
  search?: string;
  cursor?: string;
  groupBy?: string;
  /** The group whose rows are asked for; `value` null for the rows where the field is NULL. */
  groupKey?: { value: unknown };
}

export const GRID_PARAMETERS = [
  'page',
  'pageSize',
  'filters',
  'sort',
  'search',
  'cursor',
  'groupBy',
  'groupKey',
] as const;

/** Most filters and sort keys one request may carry. */
export const MAX_REQUEST_FILTERS = 50;
export const MAX_REQUEST_SORT = 10;
/** Largest offset a page may reach (as the entity list's `skip`). */
export const MAX_OFFSET = 1_000_000_000;

const FILTER_KEYS = new Set(['filterId', 'fieldCode', 'operator', 'value']);
const SORT_KEYS = new Set(['fieldCode', 'direction']);

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** One value of a query parameter: repeated parameters are refused rather than guessed at. */
function single(q: Record<string, unknown>, name: string, errors: FieldError[]): string | undefined {
  const v = q[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') {
    errors.push({ field: name, error: 'must be given once' });
    return undefined;
  }
  return v;
}

function jsonArray(raw: string, name: string, errors: FieldError[]): unknown[] | undefined {
  // A URL holds JSON ~8,000 deep, past what JSON.stringify of the query survives (issue 21 #5).
  if (jsonDepthExceeds(raw, DEFAULT_JSON_MAX_DEPTH)) {
    errors.push(depthProblem(name, DEFAULT_JSON_MAX_DEPTH));
    return undefined;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    errors.push({ field: name, error: 'must be a JSON array' });
    return undefined;
  }
  if (!Array.isArray(parsed)) {
    errors.push({ field: name, error: 'must be a JSON array' });
    return undefined;
  }
  return parsed as unknown[];
}

function parseFilters(raw: string | undefined, errors: FieldError[]): RequestFilter[] {
  if (raw === undefined || raw === '') return [];
  const items = jsonArray(raw, 'filters', errors);
  if (!items) return [];
  if (items.length > MAX_REQUEST_FILTERS) {
    errors.push({ field: 'filters', error: `must hold at most ${MAX_REQUEST_FILTERS} filters` });
    return [];
  }
  const out: RequestFilter[] = [];
  for (const [index, item] of items.entries()) {
    const label = `filters[${index}]`;
    if (!isObject(item)) {
      errors.push({ field: label, error: 'must be an object {fieldCode, operator, value}' });
      continue;
    }
    const unknown = Object.keys(item).filter((k) => !FILTER_KEYS.has(k));
    if (unknown.length > 0) errors.push({ field: label, error: `unknown key ${unknown[0]}` });
    let ok = unknown.length === 0;
    if (typeof item.fieldCode !== 'string' || item.fieldCode === '') {
      errors.push({ field: `${label}.fieldCode`, error: 'is required' });
      ok = false;
    }
    if (
      typeof item.operator !== 'string' ||
      !(FILTER_OPERATORS as readonly string[]).includes(item.operator)
    ) {
      errors.push({ field: `${label}.operator`, error: `must be one of ${FILTER_OPERATORS.join(', ')}` });
      ok = false;
    }
    if (!ok) continue;
    const operator = item.operator as FilterOperator;
    const takesNoValue = operator === 'is_null' || operator === 'is_not_null';
    if (takesNoValue && item.value !== undefined && item.value !== null) {
      errors.push({ field: `${label}.value`, error: `must be absent for ${operator}` });
      continue;
    }
    if (!takesNoValue && item.value === undefined) {
      errors.push({ field: `${label}.value`, error: 'is required' });
      continue;
    }
    out.push({
      index,
      fieldCode: item.fieldCode as string,
      operator,
      ...(takesNoValue ? {} : { value: item.value }),
    });
  }
  return out;
}

function parseSort(raw: string | undefined, errors: FieldError[]): RequestSort[] | undefined {
  if (raw === undefined || raw === '') return undefined;
  const items = jsonArray(raw, 'sort', errors);
  if (!items) return undefined;
  if (items.length > MAX_REQUEST_SORT) {
    errors.push({ field: 'sort', error: `must hold at most ${MAX_REQUEST_SORT} keys` });
    return undefined;
  }
  const out: RequestSort[] = [];
  for (const [index, item] of items.entries()) {
    const label = `sort[${index}]`;
    if (!isObject(item)) {
      errors.push({ field: label, error: 'must be an object {fieldCode, direction}' });
      continue;
    }
    const unknown = Object.keys(item).filter((k) => !SORT_KEYS.has(k));
    if (unknown.length > 0) {
      errors.push({ field: label, error: `unknown key ${unknown[0]}` });
      continue;
    }
    if (typeof item.fieldCode !== 'string' || item.fieldCode === '') {
      errors.push({ field: `${label}.fieldCode`, error: 'is required' });
      continue;
    }
    const direction =
      item.direction === undefined
        ? 'asc'
        : typeof item.direction === 'string'
          ? item.direction.toLowerCase()
          : '';
    if (direction !== 'asc' && direction !== 'desc') {
      errors.push({ field: `${label}.direction`, error: 'must be asc or desc' });
      continue;
    }
    out.push({ index, fieldCode: item.fieldCode, direction });
  }
  return out;
}

/** A group key: JSON when it parses as a JSON scalar (`5`, `null`, `"null"`), else the text itself. */
function parseGroupKey(raw: string): { value: unknown } | { error: string } {
  let value: unknown = raw;
  try {
    value = JSON.parse(raw);
  } catch {
    return { value: raw };
  }
  if (value !== null && typeof value === 'object') return { error: 'must be a single value' };
  return { value };
}

/** The request's grid parameters; 400 VALIDATION_ERROR listing every problem as [{field, error}]. */
export function parseGridRequest(rawQuery: unknown): GridRequest {
  const q = isObject(rawQuery) ? rawQuery : {};
  const errors: FieldError[] = [];
  for (const key of Object.keys(q))
    if (!(GRID_PARAMETERS as readonly string[]).includes(key))
      errors.push({ field: key, error: 'unknown query parameter' });
  const int = (name: string, min: number): number | undefined => {
    const raw = single(q, name, errors);
    if (raw === undefined || raw === '') return undefined;
    if (!/^\d{1,10}$/.test(raw) || Number(raw) < min || Number(raw) > MAX_OFFSET) {
      errors.push({ field: name, error: `must be an integer from ${min} to ${MAX_OFFSET}` });
      return undefined;
    }
    return Number(raw);
  };
  const request: GridRequest = {
    page: int('page', 0),
    pageSize: int('pageSize', 1),
    filters: parseFilters(single(q, 'filters', errors), errors),
    sort: parseSort(single(q, 'sort', errors), errors),
  };
  const search = single(q, 'search', errors);
  if (search !== undefined && search.trim() !== '') request.search = search.trim();
  const cursor = single(q, 'cursor', errors);
  if (cursor !== undefined && cursor !== '') request.cursor = cursor;
  const groupBy = single(q, 'groupBy', errors);
  if (groupBy !== undefined && groupBy !== '') request.groupBy = groupBy;
  const groupKey = single(q, 'groupKey', errors);
  if (groupKey !== undefined) {
    const parsed = parseGroupKey(groupKey);
    if ('error' in parsed) errors.push({ field: 'groupKey', error: parsed.error });
    else if (request.groupBy === undefined) errors.push({ field: 'groupKey', error: 'needs groupBy' });
    else request.groupKey = parsed;
  }
  if (errors.length > 0) throw new ValidationError('Invalid query', errors);
  return request;
}
