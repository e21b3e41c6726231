import type { DataSource, SelectQueryBuilder } from 'typeorm';
import type { FieldError } from '../../common/errors/app-error';
import type { EntityInfo, FieldDef, FieldType } from '../../registry/registry.types';
import { col } from '../scope';
import { decimalOf, fromDb } from '../values';

/**
 * Aggregates and groups over a query's filtered set (a dataview's footer totals and group headers):
 * `SELECT COUNT(*), <agg>(col)… FROM <scoped source> WHERE <scope> AND <filters>` and
 * `SELECT col, COUNT(*), <agg>(col)… … GROUP BY col ORDER BY col`. The statement always starts from
 * `scoped()` (the tenant, soft-delete and row-filter predicates of the one scope builder) with the
 * query's conditions added by `applyConditions()`; only registry columns are named, values are bound.
 */

export const AGGREGATE_FUNCTIONS = ['sum', 'avg', 'min', 'max', 'count'] as const;

export type AggregateFunction = (typeof AGGREGATE_FUNCTIONS)[number];

export interface AggregateSpec {
  /** Registry field name. */
  field: string;
  fn: AggregateFunction;
  /** Key of the value in the answer (default: the field name). */
  name?: string;
  /** How an error names this aggregate (default: `aggregates.<name>`). */
  label?: string;
}

export function isAggregateFunction(value: unknown): value is AggregateFunction {
  return typeof value === 'string' && (AGGREGATE_FUNCTIONS as readonly string[]).includes(value);
}

const NUMERIC: ReadonlySet<FieldType> = new Set(['integer', 'numeric']);
const ORDERED: ReadonlySet<FieldType> = new Set(['integer', 'numeric', 'date']);

/** sum/avg on numbers; min/max on numbers and dates; count on anything but JSON. */
export function aggregateAllowed(fn: AggregateFunction, type: FieldType): boolean {
  if (type === 'json') return false;
  switch (fn) {
    case 'sum':
    case 'avg':
      return NUMERIC.has(type);
    case 'min':
    case 'max':
      return ORDERED.has(type);
    case 'count':
      return true;
  }
}

/** Whether a group may be keyed by a field of this type: any scalar type. */
export function groupAllowed(type: FieldType): boolean {
  return type !== 'json';
}

/** An aggregate resolved against the registry, with its select alias. */
export interface AggregateColumn {
  name: string;
  fn: AggregateFunction;
  field: FieldDef;
  alias: string;
}

/**
 * The aggregates as columns, or problems. Only `aggregable` fields (visible and unmasked: a sum or
 * a maximum of a masked field would give away what the mask hides) may be aggregated.
 */
export function aggregateColumns(
  entity: EntityInfo,
  aggregable: ReadonlySet<string>,
  specs: readonly AggregateSpec[],
  errors: FieldError[],
): AggregateColumn[] {
  const out: AggregateColumn[] = [];
  for (const [i, spec] of specs.entries()) {
    const name = spec.name ?? spec.field;
    const label = spec.label ?? `aggregates.${name}`;
    const field = entity.fields.find((f) => f.name === spec.field);
    if (!field || !aggregable.has(spec.field)) {
      errors.push({
        field: label,
        error: 'unknown field, or a masked or hidden one, which cannot be aggregated',
      });
      continue;
    }
    if (!aggregateAllowed(spec.fn, field.type)) {
      errors.push({ field: label, error: `${spec.fn} does not apply to a ${field.type} field` });
      continue;
    }
    out.push({ name, fn: spec.fn, field, alias: `__a${i}` });
  }
  return out;
}

/** The SQL of one aggregate. AVG of an integer column is taken over decimals on every dialect. */
function expression(ds: DataSource, c: AggregateColumn): string {
  const column = col(ds, c.field.column);
  switch (c.fn) {
    case 'sum':
      return `SUM(${column})`;
    case 'avg':
      // SQL Server's AVG of an INT is an INT (truncated); 1.0 * makes it a decimal everywhere.
      return c.field.type === 'integer' ? `AVG(1.0 * ${column})` : `AVG(${column})`;
    case 'min':
      return `MIN(${column})`;
    case 'max':
      return `MAX(${column})`;
    case 'count':
      return `COUNT(${column})`;
  }
}

export const COUNT_ALIAS = '__count';
export const KEY_ALIAS = '__key';

/** SELECT COUNT(*), <aggregates> over the (scoped, filtered) query. */
export function selectTotals(
  ds: DataSource,
  qb: SelectQueryBuilder<Record<string, unknown>>,
  columns: readonly AggregateColumn[],
): void {
  qb.select('COUNT(*)', COUNT_ALIAS);
  for (const c of columns) qb.addSelect(expression(ds, c), c.alias);
}

/**
 * SELECT <group column>, COUNT(*), <aggregates> … GROUP BY <group column>, ordered by the key with
 * NULL last on every dialect, at most `limit` groups.
 */
export function selectGroups(
  ds: DataSource,
  qb: SelectQueryBuilder<Record<string, unknown>>,
  groupField: FieldDef,
  columns: readonly AggregateColumn[],
  limit: number,
): void {
  const key = col(ds, groupField.column);
  qb.select(key, KEY_ALIAS).addSelect('COUNT(*)', COUNT_ALIAS);
  for (const c of columns) qb.addSelect(expression(ds, c), c.alias);
  qb.groupBy(key)
    .orderBy(`CASE WHEN ${key} IS NULL THEN 1 ELSE 0 END`, 'ASC')
    .addOrderBy(key, 'ASC')
    .limit(limit);
}

/** Average values: six decimal places on every dialect (SQL Server's AVG of a DECIMAL has six). */
const AVG_DECIMALS = 6;

function rounded(value: number, decimals: number): number {
  return Number.isFinite(value) ? Number(value.toFixed(decimals)) : value;
}

/**
 * A driver's aggregate value as JSON: numbers as numbers (drivers return DECIMAL sums and averages
 * as text), rounded to the column's scale (SQLite sums DECIMALs as floating point); min/max of a date
 * as `YYYY-MM-DD`; count of an empty set 0, any other aggregate of an empty set null (SQL's answer).
 */
export function aggregateValue(c: Pick<AggregateColumn, 'fn' | 'field'>, raw: unknown): unknown {
  if (raw === null || raw === undefined) return c.fn === 'count' ? 0 : null;
  if (c.fn === 'count') return Number(raw);
  if (c.fn === 'avg') return rounded(Number(raw), AVG_DECIMALS);
  return groupKeyValue(c.field, raw);
}

/** A group key (or a min/max) in the field's JSON form; numeric values rounded to the scale. */
export function groupKeyValue(field: FieldDef, raw: unknown): unknown {
  const value = fromDb(field, raw);
  if (typeof value !== 'number') return value;
  return field.type === 'numeric' ? rounded(value, decimalOf(field).scale) : value;
}

/** Total count and aggregates read from a `selectTotals` row. */
export function totalsOf(
  columns: readonly AggregateColumn[],
  raw: Record<string, unknown> | undefined,
): { count: number; aggregates: Record<string, unknown> } {
  const aggregates: Record<string, unknown> = {};
  for (const c of columns) aggregates[c.name] = aggregateValue(c, raw?.[c.alias]);
  return { count: Number(raw?.[COUNT_ALIAS] ?? 0), aggregates };
}
