import {
  ApiError,
  createApiClient,
  EntityRecord,
  memoryStorage,
  STORAGE_KEYS,
  TokenStorage,
  unwrap,
} from './index';

/** A fake service: answers each request with `answer(request)`, and keeps every request it saw. */
function fakeFetch(answer: (request: Request) => Response | Promise<Response>) {
  const requests: Request[] = [];
  const fetch = jest.fn(async (...[input, init]: Parameters<typeof globalThis.fetch>) => {
    const request = input instanceof Request ? input : new Request(input, init);
    requests.push(request.clone());
    return answer(request);
  });
  return { fetch: fetch as unknown as typeof globalThis.fetch, requests };
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });

const ok = (data: unknown, headers: Record<string, string> = {}) =>
  json(
    200,
    { success: true, data, meta: { timestamp: '2026-11-23T00:00:00.000Z', requestId: 'req-ok' } },
    headers,
  );

const failure = (status: number, code: string, message: string, details: unknown = null) =>
  json(status, {
    success: false,
    message,
    error: { code, message, details },
    meta: { timestamp: '2026-11-23T00:00:00.000Z', requestId: 'req-1' },
  });

const SIGNIN = {
  token: 'jwt-1',
  user_id: 1,
  tenant_id: '1',
  expires_in: 86400,
  expires_at: '2026-11-24T00:00:00.000Z',
  type: 'Bearer',
  tenantSettings: null,
  message: 'Signed in',
};

/** A service where sign-in succeeds and everything else answers `other`. */
function service(other: (request: Request) => Response | Promise<Response> = () => ok({ user_id: 1 })) {
  return fakeFetch((request) =>
    new URL(request.url).pathname === '/api/v1/auth/signin' ? ok(SIGNIN) : other(request),
  );
}

/** The ApiError a call rejects with (the test fails if it resolves or rejects with something else). */
async function caught(call: Promise<unknown>): Promise<ApiError> {
  try {
    await call;
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
  throw new Error('expected an ApiError');
}

/** Node's Request needs an absolute URL (a browser resolves '' against the page). */
const BASE = 'http://api.test';

const path = (request: Request) => new URL(request.url).pathname;

describe('createApiClient (spec §5.7)', () => {
  it('sends x-tenant-id only when it has one', async () => {
    const { fetch, requests } = service();
    const client = createApiClient({ baseUrl: BASE, fetch });
    await client.api.GET('/api/v1/auth/tenant-config');
    expect(requests[0].headers.has('x-tenant-id')).toBe(false);
    expect(requests[0].headers.has('authorization')).toBe(false);

    client.setTenantHeader('{"ciphertext":"ab"}');
    await client.api.GET('/api/v1/auth/tenant-config');
    expect(requests[1].headers.get('x-tenant-id')).toBe('{"ciphertext":"ab"}');
    expect(requests[1].url).toBe(`${BASE}/api/v1/auth/tenant-config`);

    client.setTenantHeader(null);
    await client.api.GET('/api/v1/auth/tenant-config');
    expect(requests[2].headers.has('x-tenant-id')).toBe(false);
  });

  it('signs in with email_id and password, stores the token and sends it as a Bearer', async () => {
    const { fetch, requests } = service();
    const client = createApiClient({ baseUrl: BASE, fetch, tenantHeader: 'H' });
    const result = await client.signIn('admin@acme.test', 'pw');
    expect(result.token).toBe('jwt-1');
    expect(client.token).toBe('jwt-1');
    expect(await requests[0].json()).toEqual({ email_id: 'admin@acme.test', password: 'pw' });
    expect(requests[0].headers.get('x-tenant-id')).toBe('H');
    expect(requests[0].headers.has('authorization')).toBe(false);

    await client.api.GET('/api/v1/auth/profile');
    expect(requests[1].headers.get('authorization')).toBe('Bearer jwt-1');
    expect(requests[1].headers.get('x-tenant-id')).toBe('H');
  });

  it('persists the token and the header in the storage; a new client reads them back', async () => {
    const storage = memoryStorage();
    const { fetch, requests } = service();
    const first = createApiClient({ baseUrl: BASE, fetch, storage, tenantHeader: 'H' });
    await first.signIn('a@b.c', 'pw');
    expect(storage.getItem(STORAGE_KEYS.token)).toBe('jwt-1');
    expect(storage.getItem(STORAGE_KEYS.tenantHeader)).toBe('H');

    const second = createApiClient({ baseUrl: BASE, fetch, storage });
    expect(second.token).toBe('jwt-1');
    expect(second.tenantHeader).toBe('H');
    await second.api.GET('/api/v1/auth/profile');
    expect(requests[1].headers.get('authorization')).toBe('Bearer jwt-1');
    expect(requests[1].headers.get('x-tenant-id')).toBe('H');

    // tenantHeader: null means none (behind the tenant proxy), whatever was stored.
    const third = createApiClient({ baseUrl: BASE, fetch, storage, tenantHeader: null });
    expect(third.tenantHeader).toBeNull();
    expect(third.token).toBe('jwt-1');
  });

  it('on any 401 (through api too) clears the token and the header and calls onSignedOut once', async () => {
    const storage = memoryStorage();
    const onSignedOut = jest.fn();
    const { fetch } = service(() => failure(401, 'TOKEN_REVOKED', 'Token revoked'));
    const client = createApiClient({ baseUrl: BASE, fetch, storage, tenantHeader: 'H', onSignedOut });
    await client.signIn('a@b.c', 'pw');

    // Two requests of the same session in flight: one sign-out.
    const [a, b] = await Promise.all([
      client.api.GET('/api/v1/auth/profile'),
      client.api.GET('/api/v1/{entity_code}', { params: { path: { entity_code: 'customers' } } }),
    ]);
    expect(a.response.status).toBe(401);
    expect(b.response.status).toBe(401);
    expect(onSignedOut).toHaveBeenCalledTimes(1);
    expect(onSignedOut).toHaveBeenCalledWith('unauthorized');
    expect(client.token).toBeNull();
    expect(client.tenantHeader).toBeNull();
    expect(storage.getItem(STORAGE_KEYS.token)).toBeNull();
    expect(storage.getItem(STORAGE_KEYS.tenantHeader)).toBeNull();

    // Through a convenience method: an ApiError, and the hook again (a new request, a new 401).
    await expect(client.getRecord('customers', 1)).rejects.toMatchObject({
      status: 401,
      code: 'TOKEN_REVOKED',
    });
    expect(onSignedOut).toHaveBeenCalledTimes(2);
  });

  it('a late 401 of an ended session does not clear a new one', async () => {
    const onSignedOut = jest.fn();
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const { fetch } = service((request) =>
      path(request) === '/api/v1/auth/profile'
        ? held.then(() => failure(401, 'TOKEN_EXPIRED', 'Expired'))
        : ok({}),
    );
    const client = createApiClient({ baseUrl: BASE, fetch, tenantHeader: 'H', onSignedOut });
    await client.signIn('a@b.c', 'pw');
    const late = client.api.GET('/api/v1/auth/profile'); // sent with the first token
    await client.signIn('a@b.c', 'pw'); // a new session
    release();
    await late;
    expect(onSignedOut).not.toHaveBeenCalled();
    expect(client.token).toBe('jwt-1');
    expect(client.tenantHeader).toBe('H');
  });

  it('wrong credentials: ApiError INVALID_CREDENTIALS, the tenant header kept, no sign-out', async () => {
    const onSignedOut = jest.fn();
    const { fetch } = fakeFetch(() => failure(401, 'INVALID_CREDENTIALS', 'Invalid e-mail or password'));
    const client = createApiClient({ baseUrl: BASE, fetch, tenantHeader: 'H', onSignedOut });
    const error = await caught(client.signIn('a@b.c', 'nope'));
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ status: 401, code: 'INVALID_CREDENTIALS', requestId: 'req-1' });
    expect(client.tenantHeader).toBe('H');
    expect(client.token).toBeNull();
    expect(onSignedOut).not.toHaveBeenCalled();
  });

  it('signOut calls logout with the token, clears both and calls onSignedOut("signed-out")', async () => {
    const onSignedOut = jest.fn();
    const { fetch, requests } = service();
    const client = createApiClient({ baseUrl: BASE, fetch, tenantHeader: 'H', onSignedOut });
    await client.signIn('a@b.c', 'pw');
    await client.signOut();
    const logout = requests[1];
    expect(logout.method).toBe('POST');
    expect(path(logout)).toBe('/api/v1/auth/logout');
    expect(logout.headers.get('authorization')).toBe('Bearer jwt-1');
    expect(logout.headers.get('x-tenant-id')).toBe('H');
    expect(client.token).toBeNull();
    expect(client.tenantHeader).toBeNull();
    expect(onSignedOut).toHaveBeenCalledTimes(1);
    expect(onSignedOut).toHaveBeenCalledWith('signed-out');
  });

  it('signOut ignores the failure of logout (401 or network) and reports one signed-out', async () => {
    for (const answer of [
      () => failure(401, 'TOKEN_EXPIRED', 'Expired'),
      (): Response => {
        throw new TypeError('fetch failed');
      },
    ]) {
      const onSignedOut = jest.fn();
      const { fetch } = service(answer);
      const client = createApiClient({ baseUrl: BASE, fetch, tenantHeader: 'H', onSignedOut });
      await client.signIn('a@b.c', 'pw');
      await expect(client.signOut()).resolves.toBeUndefined();
      expect(onSignedOut.mock.calls).toEqual([['signed-out']]);
      expect(client.token).toBeNull();
    }
  });

  it('getRecord unwraps the envelope; the record keeps its lastModified', async () => {
    const record = { id: 7, name: 'Ada', lastModified: '2026-11-23T10:00:00.123Z' };
    const { fetch, requests } = service(() => ok(record, { etag: '"2026-11-23T10:00:00.123Z"' }));
    const client = createApiClient({ baseUrl: BASE, fetch, tenantHeader: 'H' });
    await client.signIn('a@b.c', 'pw');
    await expect(client.getRecord('customers', 7)).resolves.toEqual(record);
    expect(requests[1].method).toBe('GET');
    expect(path(requests[1])).toBe('/api/v1/customers/7');
  });

  it('saveRecord sends PUT with If-Match: "<lastModified>" and the changes; answers the saved record', async () => {
    const saved = { id: 7, name: 'Ada L.', lastModified: '2026-11-23T10:05:00.000Z' };
    const { fetch, requests } = service(() => ok(saved, { etag: `"${saved.lastModified}"` }));
    const client = createApiClient({ baseUrl: BASE, fetch, tenantHeader: 'H' });
    await client.signIn('a@b.c', 'pw');
    await expect(
      client.saveRecord('customers', 7, { name: 'Ada L.' }, '2026-11-23T10:00:00.123Z'),
    ).resolves.toEqual(saved);
    const put = requests[1];
    expect(put.method).toBe('PUT');
    expect(path(put)).toBe('/api/v1/customers/7');
    expect(put.headers.get('if-match')).toBe('"2026-11-23T10:00:00.123Z"');
    expect(put.headers.get('authorization')).toBe('Bearer jwt-1');
    expect(await put.json()).toEqual({ name: 'Ada L.' });

    // A record spread into the changes: its (older) lastModified is not sent beside If-Match.
    await client.saveRecord('customers', 7, { ...saved, lastModified: 'old', name: 'B' }, saved.lastModified);
    expect(requests[2].headers.get('if-match')).toBe(`"${saved.lastModified}"`);
    expect(await requests[2].json()).toEqual({ id: 7, name: 'B' });
  });

  it('saveRecord of a record without a token names it as lastModified: null in the body', async () => {
    const { fetch, requests } = service(() => ok({ id: 7, lastModified: '2026-11-23T10:05:00.000Z' }));
    const client = createApiClient({ baseUrl: BASE, fetch });
    await client.saveRecord('customers', 7, { name: 'X' }, null);
    expect(requests[0].headers.has('if-match')).toBe(false);
    expect(await requests[0].json()).toEqual({ name: 'X', lastModified: null });
  });

  it('a stale save throws ApiError CONFLICT with the details (and the current record when carried)', async () => {
    const current = { id: 7, name: 'Other', lastModified: '2026-11-23T11:00:00.000Z' };
    const answers = [
      failure(409, 'CONFLICT', 'customers 7 was changed by someone else', {
        lastModified: current.lastModified,
      }),
      failure(409, 'CONFLICT', 'customers 7 was changed by someone else', { current }),
    ];
    const { fetch } = fakeFetch(() => answers.shift() as Response);
    const client = createApiClient({ baseUrl: BASE, fetch });
    const first = await caught(client.saveRecord('customers', 7, { name: 'A' }, '2026-11-23T10:00:00.123Z'));
    expect(first).toBeInstanceOf(ApiError);
    expect(first).toMatchObject({
      status: 409,
      code: 'CONFLICT',
      message: 'customers 7 was changed by someone else',
      details: { lastModified: current.lastModified },
      requestId: 'req-1',
    });
    expect(first.current).toBeUndefined();
    const second = await caught(client.saveRecord('customers', 7, { name: 'A' }, '2026-11-23T10:00:00.123Z'));
    expect(second.current).toEqual(current);
  });

  it('turns the error envelope into ApiError fields; other error bodies by their status', async () => {
    const details = [{ field: 'email', error: 'must be an e-mail address' }];
    const answers = [
      failure(400, 'VALIDATION_ERROR', 'Validation failed', details),
      json(
        404,
        { success: false, message: 'Profile not found', entityCode: 'nope' },
        { 'x-request-id': 'req-h' },
      ),
      new Response('Bad gateway', { status: 502, statusText: 'Bad Gateway' }),
    ];
    const { fetch } = fakeFetch(() => answers.shift() as Response);
    const client = createApiClient({ baseUrl: BASE, fetch });

    const validation = await caught(
      client.saveRecord('customers', 1, { email: 'x' }, '2026-01-01T00:00:00.000Z'),
    );
    expect(validation).toBeInstanceOf(ApiError);
    expect(validation).toBeInstanceOf(Error);
    expect(validation).toMatchObject({
      name: 'ApiError',
      status: 400,
      code: 'VALIDATION_ERROR',
      message: 'Validation failed',
      details,
      requestId: 'req-1',
    });

    const notFound = await caught(client.getRecord('nope', 1));
    expect(notFound).toMatchObject({
      status: 404,
      code: 'NOT_FOUND',
      message: 'Profile not found',
      requestId: 'req-h',
    });

    const gateway = await caught(client.getRecord('customers', 1));
    expect(gateway).toMatchObject({ status: 502, code: 'SERVICE_ERROR', message: 'Bad gateway' });
  });

  it('a failure without an answer is ApiError NETWORK_ERROR (status 0)', async () => {
    const { fetch } = fakeFetch(() => {
      throw new TypeError('fetch failed');
    });
    const client = createApiClient({ baseUrl: BASE, fetch });
    await expect(client.getRecord('customers', 1)).rejects.toMatchObject({
      status: 0,
      code: 'NETWORK_ERROR',
    });
  });

  it('unwrap() gives the data of a typed api call or throws ApiError', async () => {
    const { fetch } = fakeFetch((request) =>
      path(request) === '/api/v1/customers'
        ? ok({ records: [{ id: 1 }], total: 1, limit: 25, skip: 0, meta: {} })
        : failure(403, 'FORBIDDEN', 'No'),
    );
    const client = createApiClient({ baseUrl: BASE, fetch });
    const page = await unwrap(
      client.api.GET('/api/v1/{entity_code}', { params: { path: { entity_code: 'customers' } } }),
    );
    expect(page.total).toBe(1);
    await expect(unwrap(client.api.GET('/api/v1/auth/profile'))).rejects.toMatchObject({
      status: 403,
      code: 'FORBIDDEN',
    });
  });

  it('works with a Web Storage-like object (window.localStorage)', async () => {
    const items: Record<string, string> = {};
    const storage: TokenStorage = {
      getItem: (k) => (k in items ? items[k] : null),
      setItem: (k, v) => void (items[k] = v),
      removeItem: (k) => void delete items[k],
    };
    const { fetch } = service();
    const client = createApiClient({ baseUrl: BASE, fetch, storage, tenantHeader: 'H' });
    await client.signIn('a@b.c', 'pw');
    expect(items).toEqual({ [STORAGE_KEYS.token]: 'jwt-1', [STORAGE_KEYS.tenantHeader]: 'H' });
  });

  it('types records per entity from the document (customers → Customer), others as plain objects', () => {
    type Customer = EntityRecord<'customers'>;
    const tier: Customer['tier'] = 'gold';
    // @ts-expect-error: not a code of the value set customer_tiers
    const wrong: Customer['tier'] = 'platinum';
    const other: EntityRecord<string> = { anything: 1 };
    expect([tier, wrong, other]).toHaveLength(3);
  });
});
