import type { ConfigTable } from '../database/scope/tenant-rows';

/** `app_value_sets` (spec §2.10). */
export const VALUE_SET_TABLE: ConfigTable = { table: 'app_value_sets', prefix: 'vs' };

/**
 * The codes of a value set's `vs_values` (a JSON array of `{code, label, description}`, as text or
 * parsed by the driver); undefined when the values are unreadable.
 */
export function valueSetCodes(raw: unknown): string[] | undefined {
  let values: unknown = raw;
  if (typeof values === 'string') {
    try {
      values = JSON.parse(values);
    } catch {
      return undefined;
    }
  }
  if (!Array.isArray(values)) return undefined;
  return values
    .map((v) => (v && typeof v === 'object' ? (v as Record<string, unknown>).code : undefined))
    .filter((c): c is string => typeof c === 'string');
}
