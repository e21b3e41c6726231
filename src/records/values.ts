import type { FieldDef } from '../registry/registry.types';

/**
 * Integer fields and record ids are the SQL INT of spec §2.1 (32 bits on every dialect) unless
 * the registry declares `min`/`max`: values outside are refused before any query (D45), never left
 * to the driver's "out of range" error.
 */
export const INT32_MIN = -2147483648;
export const INT32_MAX = 2147483647;

/** A record id from the path, or undefined when it cannot name a row (→ 404, D45). */
export function parseRecordId(raw: string): number | undefined {
  if (!/^\d{1,10}$/.test(raw)) return undefined;
  const id = Number(raw);
  return isRecordId(id) ? id : undefined;
}

/**
 * True when `id` can name a row: a key of the INT range. The use cases check it themselves
 * (D45), so an id from anywhere — a workflow step's template, not only a path — that no row can
 * have is a 404 rather than the driver's "out of range" error (issue 21 #5).
 */
export function isRecordId(id: number): boolean {
  return Number.isInteger(id) && id >= 1 && id <= INT32_MAX;
}

/**
 * The range an integer field's column can store: INT32, widened only where the registry declares
 * a bound beyond it (a BIGINT column). The field's own min/max rules are checked separately.
 */
export function integerRange(field: FieldDef): { min: number; max: number } {
  return {
    min: Math.max(Math.min(field.min ?? INT32_MIN, INT32_MIN), Number.MIN_SAFE_INTEGER),
    max: Math.min(Math.max(field.max ?? INT32_MAX, INT32_MAX), Number.MAX_SAFE_INTEGER),
  };
}

/** A column value as it comes from any driver, turned into the field's JSON form. */
export function fromDb(field: FieldDef, value: unknown): unknown {
  if (value === null || value === undefined) return null;
  switch (field.type) {
    case 'integer':
    case 'numeric':
      return typeof value === 'number'
        ? value
        : Number(typeof value === 'string' || typeof value === 'bigint' ? value : NaN);
    case 'boolean':
      return value === true || value === 1 || value === '1' || value === 't';
    case 'date':
      if (value instanceof Date) return value.toISOString().slice(0, 10);
      return typeof value === 'string' ? value.slice(0, 10) : null;
    case 'json':
      if (typeof value !== 'string') return value;
      try {
        return JSON.parse(value) as unknown;
      } catch {
        return null;
      }
    case 'text':
    case 'email':
    case 'select':
      if (value instanceof Date) return value.toISOString();
      return typeof value === 'string' || typeof value === 'number' ? String(value) : null;
  }
}

/** DECIMAL(precision, scale) of a numeric field: the registry's, else the schema's DECIMAL(12, 2). */
export function decimalOf(field: FieldDef): { precision: number; scale: number } {
  const scale = field.scale ?? 2;
  return { precision: Math.max(field.precision ?? 12, scale), scale };
}

/** A value for the field's column: booleans as 1/0 (every dialect), JSON as text (D1). */
export function toDb(field: FieldDef, value: unknown): unknown {
  if (value === null || value === undefined) return null;
  if (field.type === 'boolean') return value === true || value === 1 ? 1 : 0;
  if (field.type === 'json') return JSON.stringify(value);
  return value;
}
