/**
 * Values of raw query results as every driver hands them back, and the tenant id as a bound
 * parameter. One place, so that every repository reads a row the same way.
 */

/**
 * A column as text: null for NULL; a Buffer (MariaDB's BLOB/TEXT in some modes) decoded as UTF-8;
 * numbers and booleans as their text; an object (a driver that parses JSON columns itself) back to
 * JSON text, which the caller parses once.
 */
export function columnText(v: unknown): string | null {
  if (v === null || v === undefined) return null;
  if (typeof v === 'string') return v;
  if (Buffer.isBuffer(v)) return v.toString('utf8');
  if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean') return String(v);
  return JSON.stringify(v);
}

/** A tenant id (digits, as the guards and contexts carry it) as the number a query binds. */
export function tenantNumber(tenantId: string): number {
  if (!/^\d{1,15}$/.test(tenantId)) throw new Error(`Invalid tenant id ${JSON.stringify(tenantId)}`);
  return Number(tenantId);
}
