/**
 * A query of records, independent of where it came from: entity list parameters
 * (`filters[x]=v` → `equals`), a dataview's filters and sort, an export job's batches.
 */

/** The filter operators of spec §2.9.1. */
export const FILTER_OPERATORS = [
  'equals',
  'not_equals',
  'in',
  'not_in',
  'contains',
  'starts_with',
  'ends_with',
  'greater_than',
  'less_than',
  'between',
  'is_null',
  'is_not_null',
] as const;

export type FilterOperator = (typeof FILTER_OPERATORS)[number];

export interface FilterCondition {
  /** Registry field name. */
  field: string;
  operator: FilterOperator;
  /** Scalar; an array for in/not_in; [from, to] for between; none for is_null/is_not_null. */
  value?: unknown;
  /** How an error names this condition (`filters[tier]`, `filters[2].value`); the field by default. */
  label?: string;
}

export interface SortKey {
  field: string;
  direction: 'asc' | 'desc';
}

/** Where a keyset page starts: the sort values and key of the last row of the previous page. */
export interface KeysetPosition {
  values: unknown[];
  id: number;
}

export type PageRequest =
  | { kind: 'offset'; limit: number; skip: number }
  | { kind: 'keyset'; limit: number; after?: KeysetPosition }
  | { kind: 'all' };

export interface RecordQuery {
  filters: FilterCondition[];
  sort: SortKey[];
  page: PageRequest;
  /** Direction of the primary key, the last sort key (default: the last sort key's, else asc). */
  keyDirection?: 'asc' | 'desc';
  /** Case-blind text search: rows where any of `fields` contains `text`. */
  search?: { text: string; fields: string[] };
}

/** What the caller may filter and sort on (visible, unmasked fields; a dataview narrows further). */
export interface QueryPermissions {
  filterable: ReadonlySet<string>;
  sortable: ReadonlySet<string>;
}
