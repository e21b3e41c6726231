import type { Dialect } from './dialect';

/**
 * How an INSERT hands back the new row's key on each dialect: PostgreSQL `RETURNING <pk>`, SQL
 * Server `OUTPUT INSERTED.<pk>` (T-SQL's OUTPUT must name the pseudo-table: a bare column is
 * invalid there), MariaDB/MySQL and SQLite through the driver's insert id.
 */
export function returningOf(
  dialect: Dialect,
  pkColumn: string,
  escape: (c: string) => string,
): string | undefined {
  if (dialect === 'postgres') return pkColumn;
  if (dialect === 'mssql') return `INSERTED.${escape(pkColumn)}`;
  return undefined;
}

/** The new key from the driver's raw INSERT result. */
export function insertedKeyOf(dialect: Dialect, raw: unknown): number {
  let value: unknown = raw;
  if (Array.isArray(raw)) value = (raw[0] as Record<string, unknown> | undefined) ?? undefined;
  if (value && typeof value === 'object') {
    const r = value as Record<string, unknown>;
    value = dialect === 'mysql' ? r.insertId : Object.values(r)[0];
  }
  const id = Number(typeof value === 'bigint' ? value.toString() : value);
  if (!Number.isSafeInteger(id)) throw new Error('The database did not return the new key');
  return id;
}
