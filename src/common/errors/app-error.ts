import type { ErrorCode } from './error-codes';

/**
 * A domain error with a stable code (D18) and, where the code alone does not say enough, a domain
 * reason (`stale_record`, `dependents_exist`…). It knows nothing of HTTP: the exception filter
 * alone turns it into a status and the envelope (D17), and workers decide on retries from the code
 * and reason (isTransient).
 */
export class AppError extends Error {
  /** What happened in the domain's own words; the code unless a subclass says more. */
  reason: string;
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
    this.reason = code.toLowerCase();
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

/**
 * Why a change could not be made as asked (409). Transient ones may succeed when tried again as they
 * are (isTransient); the others need the caller to change something first.
 */
export type ConflictReason =
  /** The record changed since its token was read (D24). Transient for a worker that re-reads it. */
  | 'stale_record'
  /** A concurrent write holds what this one needs (deadlock, lock wait, unique-value lock). Transient. */
  | 'busy'
  /** Dependent records restrict a delete without cascade (D25). */
  | 'dependents_exist'
  /** A unique value is taken by another record. */
  | 'duplicate_value'
  /** The state of a workflow instance or a job does not allow the action (D34). */
  | 'illegal_state'
  /** Any other conflict. */
  | 'conflict';

export class ConflictError extends AppError {
  constructor(message: string, details: unknown = null, reason: ConflictReason = 'conflict') {
    super('CONFLICT', message, details);
    this.reason = reason;
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
