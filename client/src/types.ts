/**
 * Types derived from the generated `paths` (schema.d.ts), so that they follow the document when it
 * changes (an id that becomes a string, a field added to an answer) without an edit here.
 */
import type { paths } from './schema';

/** The `data` of an envelope `{success, data, meta}`. */
export type Envelope<T> = T extends { data?: infer D } ? NonNullable<D> : never;

/** The JSON body of an operation's success answer (200, 201 or 202, the first the document has). */
export type JsonSuccess<Op> = Op extends { responses: infer R }
  ? R extends { 200: infer A }
    ? JsonOf<A>
    : R extends { 201: infer A }
      ? JsonOf<A>
      : R extends { 202: infer A }
        ? JsonOf<A>
        : never
  : never;
type JsonOf<A> = A extends { content: { 'application/json': infer B } } ? B : never;

/** The `data` of an operation's success answer. */
export type SuccessData<Op> = Envelope<JsonSuccess<Op>>;

/** The query parameters of an operation, as the document types them. */
export type QueryOf<Op> = Op extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never;

/** The sign-in answer's `data` (spec §2.13): token, user_id, tenant_id, expires_in, expires_at, … */
export type SignInResult = SuccessData<paths['/api/v1/auth/signin']['post']>;

/**
 * A record's type: the schema the document gives the entity (`customers` → Customer, from the
 * registry) when `entity` is one of its literal paths, else a plain object.
 */
export type EntityRecord<E extends string> = `/api/v1/${E}/{id}` extends infer P
  ? P extends keyof paths
    ? paths[P] extends { get: infer Op }
      ? SuccessData<Op>
      : Record<string, unknown>
    : Record<string, unknown>
  : never;

/** A record as the single-record read answers it, with its concurrency token (D24, D42). */
export type RecordWithVersion<T extends object = Record<string, unknown>> = T & {
  [field: string]: unknown;
  /** ISO 8601 with milliseconds; null for a row written outside the service (no ETag then). */
  lastModified: string | null;
};
