/**
 * The service's typed client: openapi-fetch over the types openapi-typescript generates from the
 * service's OpenAPI document (schema.d.ts; never edited by hand), with the behaviour of spec §5.7:
 * - the token and the tenant header (`x-tenant-id`) persist in a storage (localStorage in a browser);
 * - `Authorization: Bearer` is sent when there is a token, `x-tenant-id` only when there is a header
 *   (none behind the tenant proxy);
 * - any 401 answer (every route, `api` included) clears both and calls `onSignedOut('unauthorized')`
 *   once per session; sign-in's own 401 (wrong credentials) is a failed sign-in, not a sign-out;
 * - saves send `If-Match: "<lastModified>"` (D24, D42); a stale one answers 409 → ApiError CONFLICT;
 * - bodies fetch sends as they are (FormData, Blob, bytes, a string under a non-JSON content type) are
 *   not JSON-encoded (body.ts); imports, dataview pages and live changes have typed helpers.
 */
import createClient from 'openapi-fetch';
import type { Client, Middleware } from 'openapi-fetch';
import type { paths } from './schema';
import { serializeBody } from './body';
import { dataviewsApi, type ChangesOptions, type DataviewsApi } from './dataviews';
import { isObject } from './errors';
import { importsApi, type ImportsApi } from './imports';
import { liveChanges, type ChangeEvent } from './live';
import { answered, dataOf, unwrap } from './outcome';
import type { EntityRecord, RecordWithVersion, SignInResult } from './types';

export type { components, paths } from './schema';
export type { Client } from 'openapi-fetch';
export { ApiError, toApiError } from './errors';
export { bodyOf, unwrap } from './outcome';
export { liveChanges, LiveChangesError, SseParser } from './live';
export type { ChangeEvent, LiveChange, LiveChangesOptions, LiveEvent } from './live';
export type { EntityRecord, RecordWithVersion, SignInResult, SuccessData } from './types';
export { XLSX_TYPE } from './imports';
export type { ImportFile, ImportId, ImportJob, ImportOptions, ImportsApi, ImportStarted, ImportWaitOptions } from './imports';
export type {
  ChangesOptions,
  DataviewGroup,
  DataviewRow,
  DataviewsApi,
  GridAggregates,
  GridFilter,
  GridOperator,
  GridPage,
  GridPageQuery,
  GridPagination,
  GridQuery,
  GridRow,
  GridSortKey,
  GroupKey,
} from './dataviews';

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
  /** Imports (D53): `upload(entity, csvText | Blob | bytes, options)`, `status`, `cancel`, `wait`. */
  readonly imports: ImportsApi;
  /** Dataview grids: `page()` keeps rows and pagination together, `groups()`, `changes()`. */
  readonly dataviews: DataviewsApi;
  /**
   * The live changes of an entity (`customers`) or a dataview (`dataviews/customers_grid`) as an
   * async iterable (D55), with this client's token and tenant header, reconnecting with
   * `Last-Event-ID` after a dropped connection (see liveChanges). The rows of an entity's events
   * have its schema when the document has one (`changes('customers')`: Customer).
   */
  changes<S extends string>(source: S, options?: ChangesOptions): AsyncGenerator<ChangeEvent<EntityRecord<S>>>;
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

  const api = createClient<paths>({ baseUrl, fetch: fetchImpl, bodySerializer: serializeBody });
  api.use(middleware);
  /** The same routes without the session middleware (logout of a session already cleared). */
  const bare = createClient<paths>({ baseUrl, fetch: fetchImpl, bodySerializer: serializeBody });

  /** The stream's events are typed by name (ChangeEvent); what the service sends is what D55 defines. */
  const changes = <S extends string>(source: S, opts: ChangesOptions = {}) =>
    liveChanges({
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
    }) as AsyncGenerator<ChangeEvent<EntityRecord<S>>>;

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

    imports: importsApi(api),
    dataviews: dataviewsApi(api, changes),
    changes,
  };
}
