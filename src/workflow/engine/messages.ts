import { errorMessage } from '../../common/errors/error-message';
import { AppError } from '../../common/errors/app-error';

/** A JSON object value, or {} for anything else (node outputs as stored). */
export function asObject(value: unknown): Record<string, unknown> {
  return value && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}

/** An error as one line for node states and logs: code, message and the fields it names. */
export function messageOf(err: unknown): string {
  if (err instanceof AppError) {
    const details = Array.isArray(err.details)
      ? ` (${(err.details as Array<{ field?: string; error?: string }>).map((d) => `${d.field}: ${d.error}`).join('; ')})`
      : '';
    return `${err.code}: ${err.message}${details}`;
  }
  return errorMessage(err);
}
