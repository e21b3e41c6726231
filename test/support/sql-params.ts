/**
 * Bound parameters as plain values: on SQLite integers are bound as BigInt (SQLite INTEGER, see
 * src/database/dialect/sqlite-binding.ts); the SQL review specs compare and print them as numbers.
 */
export function plainParams(params: unknown): unknown[] {
  if (!Array.isArray(params)) return [];
  return (params as unknown[]).map((p) => (typeof p === 'bigint' ? Number(p) : p));
}
