import type { FieldDef } from '../registry/registry.types';

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
