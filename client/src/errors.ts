/** The service's error answers as ApiError (D16–D18): the envelope's code, message, details and request id. */

/** An error answer of the service (`{success: false, error: {code, message, details}, meta: {requestId}}`). */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  /** HTTP status; 0 when no answer arrived (code NETWORK_ERROR). */
  readonly status: number;
  /** The envelope's error.code (VALIDATION_ERROR, CONFLICT, …), or one derived from the status. */
  readonly code: string;
  /** error.details as answered (an array of {field, error} for most 400s, an object for others). */
  readonly details: unknown;
  readonly requestId?: string;
  /** On a CONFLICT: the current record, when the answer carries it. */
  readonly current?: Record<string, unknown>;

  constructor(init: {
    status: number;
    code: string;
    message: string;
    details?: unknown;
    requestId?: string;
    current?: Record<string, unknown>;
    cause?: unknown;
  }) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.status = init.status;
    this.code = init.code;
    this.details = init.details ?? null;
    if (init.requestId !== undefined) this.requestId = init.requestId;
    if (init.current !== undefined) this.current = init.current;
  }
}

const STATUS_CODES: Record<number, string> = {
  400: 'VALIDATION_ERROR',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  409: 'CONFLICT',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  429: 'RATE_LIMITED',
  501: 'NOT_IMPLEMENTED',
  503: 'NOT_READY',
};

export const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** The ApiError of an error answer: the error envelope when it is one, else what the status says. */
export function toApiError(response: Response, body: unknown): ApiError {
  const error = isObject(body) && isObject(body.error) ? body.error : undefined;
  const meta = isObject(body) && isObject(body.meta) ? body.meta : undefined;
  const requestId =
    typeof meta?.requestId === 'string'
      ? meta.requestId
      : (response.headers.get('x-request-id') ?? undefined);
  const code =
    typeof error?.code === 'string'
      ? error.code
      : (STATUS_CODES[response.status] ?? (response.status >= 500 ? 'SERVICE_ERROR' : 'VALIDATION_ERROR'));
  const message =
    typeof error?.message === 'string'
      ? error.message
      : isObject(body) && typeof body.message === 'string'
        ? body.message
        : typeof body === 'string' && body !== ''
          ? body
          : `HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ''}`;
  const details = error ? error.details : body;
  const carried = isObject(details) ? (details.current ?? details.record) : undefined;
  return new ApiError({
    status: response.status,
    code,
    message,
    details,
    ...(requestId !== undefined ? { requestId } : {}),
    ...(code === 'CONFLICT' && isObject(carried) ? { current: carried } : {}),
  });
}
