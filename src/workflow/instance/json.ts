/** JSON columns are text on every dialect (D1); some drivers hand back a Buffer. */
export function parseJsonColumn(value: unknown): unknown {
  if (value === null || value === undefined) return undefined;
  const text = Buffer.isBuffer(value) ? value.toString('utf8') : value;
  if (typeof text !== 'string') return text;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

export function jsonObject(value: unknown): Record<string, unknown> {
  const parsed = parseJsonColumn(value);
  return parsed && typeof parsed === 'object' && !Array.isArray(parsed)
    ? (parsed as Record<string, unknown>)
    : {};
}

/** A column value as text (raw-values.ts). */
export { columnText as textOf } from '../../database/raw-values';
