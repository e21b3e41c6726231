/** openapi-fetch's outcomes as the envelope's `data` or an ApiError. */
import { ApiError, isObject, toApiError } from './errors';
import type { Envelope } from './types';

/** The outcome of an openapi-fetch call, as far as unwrap() needs it. */
export interface FetchOutcome {
  data?: unknown;
  error?: unknown;
  response: Response;
}

export type Unwrapped<R> = R extends { data?: infer D } ? Envelope<NonNullable<D>> : never;

/** Awaits an openapi-fetch call; a failure without an answer becomes ApiError NETWORK_ERROR (status 0). */
export async function answered<R>(call: Promise<R>): Promise<R> {
  try {
    return await call;
  } catch (cause) {
    throw new ApiError({
      status: 0,
      code: 'NETWORK_ERROR',
      message: cause instanceof Error ? cause.message : 'The request failed',
      cause,
    });
  }
}

/** The body of a successful answer as it is (the envelope), else the ApiError of the answer. */
export function bodyOf<R extends FetchOutcome>(outcome: R): NonNullable<R['data']> {
  if (!outcome.response.ok) throw toApiError(outcome.response, outcome.error);
  return outcome.data as NonNullable<R['data']>;
}

export function dataOf<R extends FetchOutcome>(outcome: R): Unwrapped<R> {
  const body: unknown = bodyOf(outcome);
  return (isObject(body) && 'data' in body ? body.data : body) as Unwrapped<R>;
}

/**
 * The `data` of a call through `api`, or an ApiError thrown (a network failure: status 0,
 * code NETWORK_ERROR): `const page = await unwrap(client.api.GET('/api/v1/{entity_code}', …))`.
 * Answers whose page keys sit beside `data` (a dataview page's `pagination`) keep them with
 * `client.dataviews.page()`, or read the whole body with `bodyOf(await call)`.
 */
export async function unwrap<R extends FetchOutcome>(call: Promise<R>): Promise<Unwrapped<R>> {
  return dataOf(await answered(call));
}
