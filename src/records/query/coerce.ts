import type { FieldDef } from '../../registry/registry.types';
import { decimalOf, integerRange, textProblem } from '../values';

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
      return /^\d{4}-\d{2}-\d{2}$/.test(s) && !Number.isNaN(Date.parse(s))
        ? { value: s }
        : { error: 'must be a date (YYYY-MM-DD)' };
    case 'json':
      return { error: 'cannot be filtered on' };
    case 'text':
    case 'email':
    case 'select': {
      if (s.length > 1000) return { error: 'is too long' };
      const problem = textProblem(s);
      return problem ? { error: problem } : { value: s };
    }
  }
}
