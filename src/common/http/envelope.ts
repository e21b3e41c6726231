import { ErrorCode } from '../errors/error-codes';

export interface Meta {
  timestamp: string;
  requestId: string;
}

export interface SuccessBody<T> {
  success: true;
  data: T;
  meta: Meta;
  [extra: string]: unknown;
}

export interface ErrorBody {
  success: false;
  message: string;
  error: { code: ErrorCode; message: string; details: unknown };
  meta: Meta;
  [extra: string]: unknown;
}

let stampMs = 0;
let stampIso = '';

/** The current time in ISO 8601, formatted once per millisecond however many answers share it. */
export function nowIso(): string {
  const now = Date.now();
  if (now !== stampMs) {
    stampMs = now;
    stampIso = new Date(now).toISOString();
  }
  return stampIso;
}

export function meta(requestId: string): Meta {
  return { timestamp: nowIso(), requestId };
}

/**
 * A handler result that carries top-level keys besides `data` (D16: `pagination` on dataview data,
 * `deletedAt` on delete). The envelope hook (envelope.hook.ts) spreads `extras` beside `data`.
 */
export class Enveloped<T> {
  constructor(
    readonly data: T,
    readonly extras: Record<string, unknown> = {},
  ) {}
}

export function successBody<T>(
  data: T,
  requestId: string,
  extras: Record<string, unknown> = {},
): SuccessBody<T> {
  return { success: true, data, ...extras, meta: meta(requestId) };
}

/** successBody's JSON text around `data` given as JSON text (the same bytes JSON.stringify writes). */
export function serializedSuccessBody(dataJson: string, requestId: string): string {
  return `{"success":true,"data":${dataJson},"meta":${JSON.stringify(meta(requestId))}}`;
}

export function errorBody(
  code: ErrorCode,
  message: string,
  details: unknown,
  requestId: string,
  extras: Record<string, unknown> = {},
): ErrorBody {
  return {
    success: false,
    message,
    ...extras,
    error: { code, message, details: details ?? null },
    meta: meta(requestId),
  };
}
