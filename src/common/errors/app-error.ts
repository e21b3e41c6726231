import { ERROR_STATUS, ErrorCode } from './error-codes';

/** A domain error with a stable code (D18); the exception filter turns it into the envelope (D17). */
export class AppError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: unknown = null,
    /** Extra top-level body keys, e.g. `entityCode` on profile-loader 404s (D17). */
    readonly extras: Record<string, unknown> = {},
    /** Extra response headers, e.g. Retry-After on 429. */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = new.target.name;
    this.status = ERROR_STATUS[code];
  }
}

export interface FieldError {
  field: string;
  error: string;
}

/** Problems listed in one error answer; the rest are counted, so a hostile body cannot inflate it. */
export const MAX_LISTED_PROBLEMS = 50;

export class ValidationError extends AppError {
  constructor(message: string, details: unknown = null) {
    super('VALIDATION_ERROR', message, capped(details));
  }
}

function capped(details: unknown): unknown {
  if (!Array.isArray(details) || details.length <= MAX_LISTED_PROBLEMS) return details;
  const list = details as unknown[];
  const more = list.length - MAX_LISTED_PROBLEMS;
  return [
    ...list.slice(0, MAX_LISTED_PROBLEMS),
    { field: '*', error: `${more} more problem${more === 1 ? '' : 's'} not listed` },
  ];
}

export class NotFoundError extends AppError {
  constructor(message = 'Not found', details: unknown = null, extras: Record<string, unknown> = {}) {
    super('NOT_FOUND', message, details, extras);
  }
}

export class ConflictError extends AppError {
  constructor(message: string, details: unknown = null) {
    super('CONFLICT', message, details);
  }
}

export class AuthorizationError extends AppError {
  constructor(
    message = 'Forbidden',
    code: 'FORBIDDEN' | 'TENANT_MISMATCH' | 'FEATURE_DISABLED' = 'FORBIDDEN',
  ) {
    super(code, message);
  }
}

export class ServiceError extends AppError {
  constructor(message = 'Internal error') {
    super('SERVICE_ERROR', message);
  }
}

/** 429 RATE_LIMITED (D18) with Retry-After: the whole seconds left of the limit's window, at least 1. */
export class RateLimitedError extends AppError {
  constructor(message: string, msBeforeNext: number) {
    super(
      'RATE_LIMITED',
      message,
      null,
      {},
      { 'Retry-After': String(Math.max(1, Math.ceil(msBeforeNext / 1000))) },
    );
  }
}

/**
 * 503 NOT_READY (spec §3.3) with the readiness flags: while starting up, and during a graceful
 * shutdown (issue 20 #5), where another instance can take the request at once.
 */
export class NotReadyError extends AppError {
  constructor(flags: Record<string, boolean>, shuttingDown = false) {
    super(
      'NOT_READY',
      shuttingDown ? 'Service is shutting down' : 'Service is starting up and not ready yet',
      flags,
      {},
      { 'Retry-After': shuttingDown ? '1' : '5' },
    );
  }
}
