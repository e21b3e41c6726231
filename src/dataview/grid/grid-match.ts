import type { FilterCondition } from '../../records/query/record-query';
import type { Row } from '../../records/records-read.repository';

/** A scalar's text; an object (a JSON field) as its JSON. */
function asText(v: unknown): string {
  return typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v);
}

function comparable(v: unknown): string | number | null {
  if (v === null || v === undefined) return null;
  if (typeof v === 'number') return v;
  if (typeof v === 'boolean') return v ? 1 : 0;
  const text = asText(v);
  const n = Number(text);
  return text.trim() !== '' && Number.isFinite(n) ? n : text;
}

function eq(a: unknown, b: unknown): boolean {
  const x = comparable(a);
  const y = comparable(b);
  return x !== null && y !== null && x === y;
}

function cmp(a: unknown, b: unknown): number | null {
  const x = comparable(a);
  const y = comparable(b);
  if (x === null || y === null) return null;
  if (typeof x === 'number' && typeof y === 'number') return x - y;
  return String(x) < String(y) ? -1 : String(x) > String(y) ? 1 : 0;
}

const text = (v: unknown): string => asText(v).toLowerCase();

/**
 * Whether a row as read (typed, projected, masked) meets one filter condition, in memory: the live
 * changes of a dataview (D55) decide with it whether a changed row is in the grid's default filters.
 * As in SQL, a null never matches a comparison. Text operators are case-blind (as a search).
 */
export function conditionMatches(row: Row, c: FilterCondition): boolean {
  if (!Object.prototype.hasOwnProperty.call(row, c.field)) return false;
  const v = row[c.field];
  const values = Array.isArray(c.value) ? (c.value as unknown[]) : [];
  switch (c.operator) {
    case 'equals':
      return eq(v, c.value);
    case 'not_equals':
      return v !== null && v !== undefined && !eq(v, c.value);
    case 'in':
      return values.some((x) => eq(v, x));
    case 'not_in':
      return v !== null && v !== undefined && !values.some((x) => eq(v, x)) && !values.includes(null);
    case 'contains':
      return v !== null && v !== undefined && text(v).includes(text(c.value));
    case 'starts_with':
      return v !== null && v !== undefined && text(v).startsWith(text(c.value));
    case 'ends_with':
      return v !== null && v !== undefined && text(v).endsWith(text(c.value));
    case 'greater_than':
      return (cmp(v, c.value) ?? 0) > 0;
    case 'less_than':
      return (cmp(v, c.value) ?? 0) < 0;
    case 'between': {
      const lo = cmp(v, values[0]);
      const hi = cmp(v, values[1]);
      return lo !== null && hi !== null && lo >= 0 && hi <= 0;
    }
    case 'is_null':
      return v === null || v === undefined;
    case 'is_not_null':
      return v !== null && v !== undefined;
    default:
      return false;
  }
}

export function rowMatches(row: Row, filters: readonly FilterCondition[]): boolean {
  return filters.every((c) => conditionMatches(row, c));
}
