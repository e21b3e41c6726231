/** Stable error codes and their HTTP statuses (D18). */
export const ERROR_STATUS = {
  VALIDATION_ERROR: 400,
  UNAUTHORIZED: 401,
  TOKEN_INVALID: 401,
  TOKEN_EXPIRED: 401,
  TOKEN_REVOKED: 401,
  INVALID_CREDENTIALS: 401,
  FORBIDDEN: 403,
  TENANT_MISMATCH: 403,
  FEATURE_DISABLED: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  /** The connection sent no complete request in time (Node's requestTimeout). */
  REQUEST_TIMEOUT: 408,
  CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
  /** A path parameter over the router's limit, or a request line over Node's header size limit. */
  URI_TOO_LONG: 414,
  /** A body that is not `application/json` (UTF-8) on a JSON route. */
  UNSUPPORTED_MEDIA_TYPE: 415,
  RATE_LIMITED: 429,
  /** The request's headers exceed Node's header size limit (maxHeaderSize, 16 KiB). */
  HEADERS_TOO_LARGE: 431,
  SERVICE_ERROR: 500,
  NOT_IMPLEMENTED: 501,
  NOT_READY: 503,
  /** The database cannot be reached (connection-level failure); retry after Retry-After. */
  DATABASE_UNAVAILABLE: 503,
  /** Load shed under event-loop pressure (overload.hook.ts); retry after Retry-After. */
  OVERLOADED: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/** The HTTP status of a code: for the HTTP layer (the exception filter, the hooks, the API docs). */
export function httpStatusOf(code: ErrorCode): number {
  return ERROR_STATUS[code];
}

/** Codes whose cause may be gone when the same work runs again: no input needs to change. */
const TRANSIENT_CODES: ReadonlySet<ErrorCode> = new Set([
  'RATE_LIMITED',
  'SERVICE_ERROR',
  'NOT_READY',
  'DATABASE_UNAVAILABLE',
  'OVERLOADED',
  'REQUEST_TIMEOUT',
]);
/** Conflicts that another try may not meet: a concurrent change or lock, not a lasting state. */
const TRANSIENT_REASONS: ReadonlySet<string> = new Set(['stale_record', 'busy']);

/**
 * Whether retrying the same work may succeed (workflow steps, jobs): a domain error by its code
 * and reason — a bad value, a missing record, no permission, dependents or a taken value fail at
 * once —, anything unknown (a driver's error, a timeout) yes.
 */
export function isTransient(err: unknown): boolean {
  const e = err as { code?: unknown; reason?: unknown } | null;
  if (typeof e?.code !== 'string' || !(e.code in ERROR_STATUS)) return true;
  const code = e.code as ErrorCode;
  if (code === 'CONFLICT') return typeof e.reason === 'string' && TRANSIENT_REASONS.has(e.reason);
  return TRANSIENT_CODES.has(code);
}

/** The code used for an HTTP status when nothing more specific is known. */
export function codeForStatus(status: number): ErrorCode {
  switch (status) {
    case 400:
      return 'VALIDATION_ERROR';
    case 401:
      return 'UNAUTHORIZED';
    case 403:
      return 'FORBIDDEN';
    case 404:
      return 'NOT_FOUND';
    case 405:
      return 'METHOD_NOT_ALLOWED';
    case 408:
      return 'REQUEST_TIMEOUT';
    case 409:
      return 'CONFLICT';
    case 413:
      return 'PAYLOAD_TOO_LARGE';
    case 414:
      return 'URI_TOO_LONG';
    case 415:
      return 'UNSUPPORTED_MEDIA_TYPE';
    case 429:
      return 'RATE_LIMITED';
    case 431:
      return 'HEADERS_TOO_LARGE';
    case 501:
      return 'NOT_IMPLEMENTED';
    case 503:
      return 'NOT_READY';
    default:
      return status >= 400 && status < 500 ? 'VALIDATION_ERROR' : 'SERVICE_ERROR';
  }
}
