/** Timestamps as every dialect stores and returns them (D4: millisecond precision, UTC). */

/**
 * `<p>_last_modified` as written: UTC `YYYY-MM-DD HH:MM:SS.mmm`, the literal the seed and sign-up
 * write too, which every dialect's timestamp column takes as is (TIMESTAMP(3), DATETIME(3),
 * DATETIME2(3)) and SQLite keeps as that very text. A JS Date parameter is not used: node-postgres
 * sends a Date as local time with an offset, which a TIMESTAMP WITHOUT TIME ZONE column stores as
 * local wall-clock time, so rows would disagree with the seed's whenever TZ is not UTC.
 */
export function toDbTimestamp(ms: number): string {
  return new Date(ms).toISOString().replace('T', ' ').replace('Z', '');
}

/**
 * The instant (epoch ms) of a stored timestamp as any driver returns it; null when NULL or
 * unreadable. node-postgres parses TIMESTAMP WITHOUT TIME ZONE as local time, so its wall-clock
 * fields are read back as the UTC instant they were written as; mysql2/mariadb (timezone 'Z') and
 * SQL Server return the UTC instant; SQLite returns the text.
 */
export function fromDbTimestamp(value: unknown, driverType: string): number | null {
  if (value === null || value === undefined) return null;
  if (value instanceof Date) {
    if (driverType !== 'postgres') return value.getTime();
    return Date.UTC(
      value.getFullYear(),
      value.getMonth(),
      value.getDate(),
      value.getHours(),
      value.getMinutes(),
      value.getSeconds(),
      value.getMilliseconds(),
    );
  }
  if (typeof value !== 'string') return null;
  const text = value.trim().replace(' ', 'T');
  // Text without a zone is UTC (what toDbTimestamp writes).
  const ms = Date.parse(/(Z|[+-]\d{2}:?\d{2})$/.test(text) ? text : `${text}Z`);
  return Number.isNaN(ms) ? null : ms;
}
