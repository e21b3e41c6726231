import type { FieldDef } from '../../registry/registry.types';
import { wellFormedProblem } from '../../common/validation/text-rules';
import { decimalOf, integerRange } from '../values';

/** A request value coerced to the field's type, or a field error (never concatenated into SQL). */
export function coerce(field: FieldDef, raw: unknown): { value?: unknown; error?: string } {
  if (raw === null) return { value: null };
  const s =
    typeof raw === 'string'
      ? raw
      : typeof raw === 'number' || typeof raw === 'boolean'
        ? String(raw)
        : undefined;
  if (s === undefined) return { error: 'must be a scalar value' };
  switch (field.type) {
    case 'integer': {
      // Decimal notation, safe integers only: '0x10', '1e3' and 9007199254740993 (which JSON
      // turns into …992) are refused rather than silently changed.
      if (!/^-?\d{1,16}$/.test(s)) return { error: 'must be an integer' };
      const n = Number(s);
      if (!Number.isSafeInteger(n)) return { error: 'is out of range' };
      // D45: outside the column's range is the caller's error, never the driver's.
      const range = integerRange(field);
      return n >= range.min && n <= range.max
        ? { value: n }
        : { error: `is out of range (${range.min} to ${range.max})` };
    }
    case 'numeric': {
      if (typeof raw === 'number' && !Number.isFinite(raw)) return { error: 'must be a number' };
      const m = /^-?(\d+)(?:\.(\d+))?$/.exec(s);
      if (!m) {
        // A number in exponent notation is too large (1e308) or has too many decimals (1e-7).
        if (typeof raw !== 'number') return { error: 'must be a number' };
        return Math.abs(raw) >= 1
          ? { error: 'is out of range' }
          : { error: `must have at most ${decimalOf(field).scale} decimal places` };
      }
      const { precision, scale } = decimalOf(field);
      const whole = m[1].replace(/^0+(?=\d)/, '');
      if (whole.length > precision - scale)
        return { error: `is out of range (at most ${precision - scale} digits before the decimal point)` };
      if ((m[2] ?? '').replace(/0+$/, '').length > scale)
        return { error: `must have at most ${scale} decimal places` };
      return { value: Number(s) };
    }
    case 'boolean':
      return ['true', '1'].includes(s)
        ? { value: 1 }
        : ['false', '0'].includes(s)
          ? { value: 0 }
          : { error: 'must be true or false' };
    case 'date':
      return dateProblem(s) ?? { value: s };
    case 'json':
      return { error: 'cannot be filtered on' };
    case 'text':
    case 'email':
    case 'select': {
      if (s.length > 1000) return { error: 'is too long' };
      const problem = wellFormedProblem(s);
      return problem ? { error: problem } : { value: s };
    }
  }
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const MIN_YEAR = 1000;

/**
 * A calendar date from 1000-01-01 to 9999-12-31, or its problem. Date.parse is not enough: it reads
 * 2026-02-30 as 2 March, which PostgreSQL refuses (SQLSTATE 22008, a 500) and SQLite stores as
 * given (issue 21 #5). The range is the one every dialect supports (MariaDB's and MySQL's DATE;
 * mysql2 reads 0001-01-01 back as 1901-01-01), so a date is stored and read the same everywhere.
 */
function dateProblem(s: string): { error: string } | undefined {
  const m = DATE.exec(s);
  if (!m) return { error: 'must be a date (YYYY-MM-DD)' };
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month))
    return { error: 'must be a calendar date (YYYY-MM-DD)' };
  if (year < MIN_YEAR) return { error: `must be a date from ${MIN_YEAR}-01-01 to 9999-12-31` };
  return undefined;
}

function daysIn(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}
