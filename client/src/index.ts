/**
 * The service's typed client: openapi-fetch over the types openapi-typescript generates from the
 * service's OpenAPI document (schema.d.ts; never edited by hand), with the behaviour of spec §5.7:
 * - the token and the tenant header (`x-tenant-id`) persist in a storage (localStorage in a browser);
 * - `Authorization: Bearer` is sent when there is a token, `x-tenant-id` only when there is a header
 *   (none behind the tenant proxy);
 * - any 401 answer (every route, `api` included) clears both and calls `onSignedOut('unauthorized')`
 *   once per session; sign-in's own 401 (wrong credentials) is a failed sign-in, not a sign-out;
 * - saves send `If-Match: "<lastModified>"` (D24, D42); a stale one answers 409 → ApiError CONFLICT.
 */
import createClient from 'openapi-fetch';
import type { Client, Middleware } from 'openapi-fetch';
import type { paths } from './schema';
import { liveChanges, type LiveChange, type LiveChangesOptions, type LiveEvent } from './live';

export type { components, paths } from './schema';
export type { Client } from 'openapi-fetch';
export { liveChanges, LiveChangesError, SseParser } from './live';
export type { LiveChange, LiveChangesOptions, LiveEvent } from './live';

/** The subset of the Web Storage API the client needs (window.localStorage fits). */
export interface TokenStorage {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

export interface ApiClientOptions {
  /** Origin (and path prefix) of the service; '' (same origin) by default. */
  baseUrl?: string;
  /** Where the token and the tenant header persist (window.localStorage in a browser); in memory by default. */
  storage?: TokenStorage;
  /**
   * The x-tenant-id value to start with: a string sets (and stores) it, null sets none (the SPA sits
   * behind the tenant proxy); left out, the stored value (if any) is kept.
   */
  tenantHeader?: string | null;
  /** Called once when the session ends: a 401 answer ('unauthorized') or signOut() ('signed-out'). */
  onSignedOut?: (reason: 'unauthorized' | 'signed-out') => void;
  /** The fetch to use (tests, SSR); globalThis.fetch by default. */
  fetch?: typeof fetch;
}

type Envelope<T> = T extends { data?: infer D } ? NonNullable<D> : never;
type JsonOk<Op> = Op extends { responses: { 200: { content: { 'application/json': infer B } } } } ? B : never;

/** The sign-in answer's `data` (spec §2.13): token, user_id, tenant_id, expires_in, expires_at, … */
export type SignInResult = Envelope<JsonOk<paths['/api/v1/auth/signin']['post']>>;

/**
 * A record's type: the schema the document gives the entity (`customers` → Customer, from the
 * registry) when `entity` is one of its literal paths, else a plain object.
 */
export type EntityRecord<E extends string> = `/api/v1/${E}/{id}` extends infer P
  ? P extends keyof paths
    ? paths[P] extends { get: infer Op }
      ? Envelope<JsonOk<Op>>
      : Record<string, unknown>
    : Record<string, unknown>
  : never;

/** A record as the single-record read answers it, with its concurrency token (D24, D42). */
export type RecordWithVersion<T extends object = Record<string, unknown>> = T & {
  [field: string]: unknown;
  /** ISO 8601 with milliseconds; null for a row written outside the service (no ETag then). */
  lastModified: string | null;
};

export interface ApiClient {
  /** The openapi-fetch client: every route typed (`api.GET('/api/v1/auth/profile')`), answers not unwrapped. */
  readonly api: Client<paths>;
  readonly token: string | null;
  readonly tenantHeader: string | null;
  setTenantHeader(value: string | null): void;
  /** Signs in and stores the token; throws ApiError (INVALID_CREDENTIALS, VALIDATION_ERROR, …) on failure. */
  signIn(email: string, password: string): Promise<SignInResult>;
  /** Calls logout (its failure ignored), clears the token and the header, calls onSignedOut('signed-out'). */
  signOut(): Promise<void>;
  /** GET /api/v1/{entity}/{id}, unwrapped; throws ApiError. */
  getRecord<E extends string>(entity: E, id: string | number): Promise<RecordWithVersion<EntityRecord<E>>>;
  /**
   * PUT /api/v1/{entity}/{id} with `If-Match: "<lastModified>"`; answers the whole record with its new
   * lastModified. A stale lastModified throws ApiError with code CONFLICT (details.lastModified: the
   * current token; `current`: the current record when the answer carries one).
   */
  saveRecord<E extends string>(
    entity: E,
    id: string | number,
    changes: object,
    lastModified: string | null,
  ): Promise<RecordWithVersion<EntityRecord<E>>>;
  /**
   * The live changes of an entity (`customers`) or a dataview (`dataviews/customers_grid`) as an
   * async iterable (D55), with this client's token and tenant header, reconnecting with
   * `Last-Event-ID` after a dropped connection (see liveChanges).
   */
  changes<T = LiveChange>(
    source: string,
    options?: Omit<LiveChangesOptions, 'path' | 'baseUrl' | 'headers' | 'fetch'>,
  ): AsyncGenerator<LiveEvent<T>>;
}

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

/** Storage keys of the token and the tenant header. */
export const STORAGE_KEYS = { token: 'mtb.token', tenantHeader: 'mtb.tenantHeader' } as const;

/** A TokenStorage in memory (the default; nothing survives a reload). */
export function memoryStorage(): TokenStorage {
  const items = new Map<string, string>();
  return {
    getItem: (key) => items.get(key) ?? null,
    setItem: (key, value) => void items.set(key, value),
    removeItem: (key) => void items.delete(key),
  };
}

const SIGNIN_PATH = '/api/v1/auth/signin';

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

const isObject = (v: unknown): v is Record<string, unknown> =>
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

/** The outcome of an openapi-fetch call, as far as unwrap() needs it. */
interface FetchOutcome {
  data?: unknown;
  error?: unknown;
  response: Response;
}

type Unwrapped<R> = R extends { data?: infer D } ? Envelope<NonNullable<D>> : never;

/** Awaits an openapi-fetch call; a failure without an answer becomes ApiError NETWORK_ERROR (status 0). */
async function answered<R>(call: Promise<R>): Promise<R> {
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

function dataOf<R extends FetchOutcome>(outcome: R): Unwrapped<R> {
  if (!outcome.response.ok) throw toApiError(outcome.response, outcome.error);
  const body = outcome.data;
  return (isObject(body) && 'data' in body ? body.data : body) as Unwrapped<R>;
}

/**
 * The `data` of a call through `api`, or an ApiError thrown (a network failure: status 0,
 * code NETWORK_ERROR): `const page = await unwrap(client.api.GET('/api/v1/{entity_code}', …))`.
 */
export async function unwrap<R extends FetchOutcome>(call: Promise<R>): Promise<Unwrapped<R>> {
  return dataOf(await answered(call));
}

type RecordPath = paths['/api/v1/{entity_code}/{id}']['get']['parameters']['path'];

/** The path parameters of a record: as the document types them (the path is serialized as text either way). */
const recordPath = (entity: string, id: string | number): RecordPath =>
  ({ entity_code: entity, id }) as RecordPath;

/** The record's concurrency token: the body's lastModified, else the ETag without its quotes. */
function withVersion<T extends object>(record: unknown, response: Response): RecordWithVersion<T> {
  const out = (isObject(record) ? record : {}) as RecordWithVersion<T>;
  if (out.lastModified === undefined) {
    const etag = response.headers.get('etag');
    (out as { lastModified: string | null }).lastModified = etag
      ? etag.replace(/^W\//, '').replace(/^"(.*)"$/, '$1')
      : null;
  }
  return out;
}

export function createApiClient(options: ApiClientOptions = {}): ApiClient {
  const storage = options.storage ?? memoryStorage();
  const fetchImpl: typeof fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  const baseUrl = options.baseUrl ?? '';

  if (options.tenantHeader !== undefined) {
    if (options.tenantHeader === null) storage.removeItem(STORAGE_KEYS.tenantHeader);
    else storage.setItem(STORAGE_KEYS.tenantHeader, options.tenantHeader);
  }
  const current = {
    token: () => storage.getItem(STORAGE_KEYS.token),
    tenantHeader: () => storage.getItem(STORAGE_KEYS.tenantHeader),
  };
  /** Bumped whenever a session starts or ends: a 401 to a request of an ended session is not reported again. */
  let session = 0;
  const sentIn = new Map<string, number>();

  const clear = (): void => {
    storage.removeItem(STORAGE_KEYS.token);
    storage.removeItem(STORAGE_KEYS.tenantHeader);
    session++;
  };

  const middleware: Middleware = {
    onRequest({ request, id }) {
      sentIn.set(id, session);
      const token = current.token();
      const tenantHeader = current.tenantHeader();
      if (token !== null && !request.headers.has('authorization'))
        request.headers.set('authorization', `Bearer ${token}`);
      if (tenantHeader !== null && !request.headers.has('x-tenant-id'))
        request.headers.set('x-tenant-id', tenantHeader);
      return request;
    },
    onResponse({ response, id, schemaPath }) {
      const sent = sentIn.get(id);
      sentIn.delete(id);
      if (response.status === 401 && schemaPath !== SIGNIN_PATH && sent === session) {
        clear();
        options.onSignedOut?.('unauthorized');
      }
      return response;
    },
    onError({ id }) {
      sentIn.delete(id);
    },
  };

  const api = createClient<paths>({ baseUrl, fetch: fetchImpl });
  api.use(middleware);
  /** The same routes without the session middleware (logout of a session already cleared). */
  const bare = createClient<paths>({ baseUrl, fetch: fetchImpl });

  return {
    api,
    get token() {
      return current.token();
    },
    get tenantHeader() {
      return current.tenantHeader();
    },
    setTenantHeader(value) {
      if (value === null) storage.removeItem(STORAGE_KEYS.tenantHeader);
      else storage.setItem(STORAGE_KEYS.tenantHeader, value);
    },

    async signIn(email, password) {
      const result = await unwrap(api.POST(SIGNIN_PATH, { body: { email_id: email, password } }));
      storage.setItem(STORAGE_KEYS.token, result.token);
      session++;
      return result;
    },

    async signOut() {
      const token = current.token();
      const tenantHeader = current.tenantHeader();
      clear();
      if (token !== null) {
        const headers: Record<string, string> = { authorization: `Bearer ${token}` };
        if (tenantHeader !== null) headers['x-tenant-id'] = tenantHeader;
        try {
          await bare.POST('/api/v1/auth/logout', { headers });
        } catch {
          // Logout is a courtesy to the server (revocation); the client is signed out either way.
        }
      }
      options.onSignedOut?.('signed-out');
    },

    async getRecord<E extends string>(entity: E, id: string | number) {
      const outcome = await answered(
        api.GET('/api/v1/{entity_code}/{id}', { params: { path: recordPath(entity, id) } }),
      );
      return withVersion<EntityRecord<E>>(dataOf(outcome), outcome.response);
    },

    async saveRecord<E extends string>(
      entity: E,
      id: string | number,
      changes: object,
      lastModified: string | null,
    ) {
      // The token travels as If-Match (a lastModified left in `changes`, from a spread record, is
      // dropped: two tokens that disagree would be a 400). A row without one (last_modified NULL)
      // is named by `lastModified: null` in the body (D24).
      const { lastModified: _ignored, ...fields } = changes as Record<string, unknown>;
      const body = lastModified === null ? { ...fields, lastModified: null } : fields;
      const outcome = await answered(
        api.PUT('/api/v1/{entity_code}/{id}', {
          params: {
            path: recordPath(entity, id),
            ...(lastModified !== null ? { header: { 'If-Match': `"${lastModified}"` } } : {}),
          },
          body,
        }),
      );
      return withVersion<EntityRecord<E>>(dataOf(outcome), outcome.response);
    },

    changes<T = LiveChange>(
      source: string,
      opts: Omit<LiveChangesOptions, 'path' | 'baseUrl' | 'headers' | 'fetch'> = {},
    ) {
      return liveChanges<T>({
        ...opts,
        baseUrl,
        fetch: fetchImpl,
        path: `/api/v1/${source.split('/').map(encodeURIComponent).join('/')}/changes`,
        headers: () => {
          const headers: Record<string, string> = {};
          const token = current.token();
          const tenantHeader = current.tenantHeader();
          if (token !== null) headers.authorization = `Bearer ${token}`;
          if (tenantHeader !== null) headers['x-tenant-id'] = tenantHeader;
          return headers;
        },
      });
    },
  };
}
