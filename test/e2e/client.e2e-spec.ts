import type { AddressInfo } from 'node:net';
import {
  ApiError,
  createApiClient,
  liveChanges,
  LiveChangesError,
  type LiveChange,
  type LiveEvent,
  memoryStorage,
  STORAGE_KEYS,
  unwrap,
  type ApiClient,
  type TokenStorage,
} from '../../client/src';
import { LiveChangesService } from '../../src/entity/live-changes.service';
import { DEMO_PASSWORD, TENANT, tenantHeader } from '../support/auth';
import { startTestApp, TestApp, waitFor } from '../support/test-app';

/** The ApiError a call rejects with (fails the test when it resolves or rejects otherwise). */
async function caught(call: Promise<unknown>): Promise<ApiError> {
  try {
    await call;
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
  throw new Error('expected an ApiError');
}

/** Issue 15 item 2: the typed client (client/) against the running service, over HTTP (Node's fetch). */
describe('typed client (client/) against the service', () => {
  let t: TestApp;
  let baseUrl: string;

  beforeAll(async () => {
    t = await startTestApp({ label: 'client' });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    baseUrl = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await t?.close();
  });

  function newClient(storage: TokenStorage = memoryStorage()) {
    const onSignedOut = jest.fn();
    const client = createApiClient({
      baseUrl,
      storage,
      tenantHeader: tenantHeader(TENANT.acme),
      onSignedOut,
    });
    return { client, storage, onSignedOut };
  }

  it('signs in, lists customers (typed), reads one, saves it with If-Match, and a stale save is a CONFLICT', async () => {
    const { client, onSignedOut } = newClient();
    const signedIn = await client.signIn('admin@acme.test', DEMO_PASSWORD);
    expect(signedIn.token).toBe(client.token);
    expect(signedIn.tenant_id).toBe(TENANT.acme);
    expect(signedIn.type).toBe('Bearer');

    // Typed by the document: the query parameters, and the records as the Customer schema.
    const page = await unwrap(
      client.api.GET('/api/v1/customers', {
        params: { query: { limit: 5, sortBy: 'name', sortOrder: 'asc' } },
      }),
    );
    expect(page.total).toBe(50);
    expect(page.records).toHaveLength(5);
    const id = Number(page.records[0].id);
    const tier: 'bronze' | 'silver' | 'gold' | null | undefined = page.records[0].tier;
    expect(['bronze', 'silver', 'gold']).toContain(tier);

    // The generic route, with the filters as a deepObject.
    const golds = await unwrap(
      client.api.GET('/api/v1/{entity_code}', {
        params: { path: { entity_code: 'customers' }, query: { filters: { tier: 'gold' }, limit: 100 } },
      }),
    );
    expect(golds.total).toBe(10);
    expect(golds.records.every((r) => r.tier === 'gold')).toBe(true);

    const record = await client.getRecord('customers', id);
    expect(record.id).toBe(id);
    expect(typeof record.name).toBe('string');
    expect(record.lastModified).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    // The single-record read's ETag is the token, quoted (D24, D42).
    const raw = await client.api.GET('/api/v1/customers/{id}', { params: { path: { id } } });
    expect(raw.response.headers.get('etag')).toBe(`"${record.lastModified}"`);
    expect(raw.data?.data.lastModified).toBe(record.lastModified);

    // Only the change and If-Match: no lastModified in the body.
    const saved = await client.saveRecord(
      'customers',
      id,
      { name: 'Renamed by the client' },
      record.lastModified,
    );
    expect(saved.name).toBe('Renamed by the client');
    expect(saved.lastModified).not.toBe(record.lastModified);
    expect((await client.getRecord('customers', id)).name).toBe('Renamed by the client');

    const conflict = await caught(client.saveRecord('customers', id, { name: 'Stale' }, record.lastModified));
    expect(conflict).toMatchObject({
      status: 409,
      code: 'CONFLICT',
      details: { lastModified: saved.lastModified },
    });
    expect(conflict.requestId).toEqual(expect.any(String));
    expect(client.token).not.toBeNull(); // a conflict is not a sign-out

    const invalid = await caught(
      client.saveRecord('customers', id, { email: 'not an e-mail' }, saved.lastModified),
    );
    expect(invalid).toMatchObject({ status: 400, code: 'VALIDATION_ERROR' });
    expect(Array.isArray(invalid.details)).toBe(true);

    const missing = await caught(client.getRecord('customers', 999999));
    expect(missing).toMatchObject({ status: 404, code: 'NOT_FOUND' });
    expect(onSignedOut).not.toHaveBeenCalled();
  });

  it('wrong credentials: ApiError INVALID_CREDENTIALS; the tenant header is kept for the next try', async () => {
    const { client, onSignedOut } = newClient();
    const error = await caught(client.signIn('admin@acme.test', 'not the password'));
    expect(error).toMatchObject({ status: 401, code: 'INVALID_CREDENTIALS' });
    expect(client.tenantHeader).not.toBeNull();
    expect(onSignedOut).not.toHaveBeenCalled();
  });

  it('sends no x-tenant-id without one (the service asks for it)', async () => {
    const client = createApiClient({ baseUrl });
    const error = await caught(unwrap(client.api.GET('/api/v1/auth/tenant-config')));
    expect(error).toMatchObject({ status: 400, code: 'VALIDATION_ERROR' });
    expect(JSON.stringify(error.details)).toContain('x-tenant-id');
  });

  it('a revoked token: the next answer is a 401, the storage is cleared and onSignedOut called once', async () => {
    const { client, storage, onSignedOut } = newClient();
    await client.signIn('admin@acme.test', DEMO_PASSWORD);
    expect(storage.getItem(STORAGE_KEYS.token)).toBe(client.token);

    // Another tab signs the same token out (the service revokes it).
    const other: ApiClient = createApiClient({ baseUrl, storage: copyOf(storage) });
    await other.signOut();

    const profile = await client.api.GET('/api/v1/auth/profile');
    expect(profile.response.status).toBe(401);
    expect(onSignedOut).toHaveBeenCalledTimes(1);
    expect(onSignedOut).toHaveBeenCalledWith('unauthorized');
    expect(client.token).toBeNull();
    expect(client.tenantHeader).toBeNull();
    expect(storage.getItem(STORAGE_KEYS.token)).toBeNull();
    expect(storage.getItem(STORAGE_KEYS.tenantHeader)).toBeNull();
  });

  it('a garbage token: getRecord throws the 401 as ApiError, clears the storage, calls onSignedOut', async () => {
    const storage = memoryStorage();
    storage.setItem(STORAGE_KEYS.token, 'garbage.token.value');
    const { client, onSignedOut } = newClient(storage);
    const error = await caught(client.getRecord('customers', 1));
    expect(error.status).toBe(401);
    expect(onSignedOut.mock.calls).toEqual([['unauthorized']]);
    expect(storage.getItem(STORAGE_KEYS.token)).toBeNull();
    expect(storage.getItem(STORAGE_KEYS.tenantHeader)).toBeNull();
  });

  it('signOut revokes the token on the service and reports signed-out', async () => {
    const { client, onSignedOut } = newClient();
    await client.signIn('admin@acme.test', DEMO_PASSWORD);
    const token = client.token as string;
    await client.signOut();
    expect(onSignedOut.mock.calls).toEqual([['signed-out']]);
    expect(client.token).toBeNull();

    // The old token no longer works.
    const res = await fetch(`${baseUrl}/api/v1/auth/profile`, {
      headers: { authorization: `Bearer ${token}`, 'x-tenant-id': tenantHeader(TENANT.acme) },
    });
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('TOKEN_REVOKED');
  });

  it('follows live changes over a fetch stream, and reconnects with Last-Event-ID after a dropped connection', async () => {
    const { client } = newClient();
    await client.signIn('admin@acme.test', DEMO_PASSWORD);
    // A fetch whose connections the test can cut, as a network failure would.
    const connections: Array<{ lastEventId: string | null; cut: AbortController }> = [];
    const cuttingFetch: typeof fetch = (input, init) => {
      const cut = new AbortController();
      const signals = [cut.signal, ...(init?.signal ? [init.signal] : [])];
      const headers = new Headers(init?.headers);
      connections.push({ lastEventId: headers.get('last-event-id'), cut });
      return fetch(input, { ...init, signal: AbortSignal.any(signals) });
    };
    const stop = new AbortController();
    const events: Array<LiveEvent<LiveChange>> = [];
    const reconnects: Array<[number, string | undefined]> = [];
    const done = (async () => {
      for await (const e of liveChanges<LiveChange>({
        baseUrl,
        path: '/api/v1/customers/changes',
        headers: () => ({ authorization: `Bearer ${client.token}`, 'x-tenant-id': tenantHeader(TENANT.acme) }),
        fetch: cuttingFetch,
        signal: stop.signal,
        initialDelayMs: 50,
        onReconnect: (attempt, _delay, last) => reconnects.push([attempt, last]),
      }))
        events.push(e);
    })();
    const live = t.app.get(LiveChangesService);
    await waitFor(async () => connections.length === 1 && live.openStreams === 1, 10_000);
    const create = async (name: string) => {
      const res = await client.api.POST('/api/v1/{entity_code}', {
        params: { path: { entity_code: 'customers' } },
        body: { name, email: `${name.replace(/\W/g, '')}-${Date.now()}@client.example` } as never,
      });
      expect(res.response.status).toBe(201);
      return (res.data as { data: { id: number } }).data;
    };
    const first = await create('Client live 1');
    await waitFor(async () => events.some((e) => e.data.id === first.id), 10_000);
    const lastSeen = events[events.length - 1].id;

    // Cut the connection; a write lands while it is down.
    connections[0].cut.abort();
    const second = await create('Client live 2');
    await waitFor(async () => events.some((e) => e.data.id === second.id), 10_000);
    expect(connections.length).toBe(2);
    expect(connections[1].lastEventId).toBe(lastSeen);
    expect(reconnects[0]).toEqual([1, lastSeen]);
    // Nothing twice, nothing skipped.
    expect(events.filter((e) => e.data.id === first.id)).toHaveLength(1);
    expect(events.filter((e) => e.data.id === second.id)).toHaveLength(1);
    const received = events.find((e) => e.data.id === second.id)!;
    expect(received.event).toBe('created');
    expect(received.data.row).toMatchObject({ id: second.id, name: 'Client live 2' });
    stop.abort();
    await done;

    // Through the client: its own token and header; a refusal (401) is thrown, not retried.
    await waitFor(async () => live.openStreams === 0, 10_000);
    const again = client.changes('customers', { initialDelayMs: 50 });
    const next = again.next();
    await waitFor(async () => live.openStreams === 1, 10_000);
    const created = await create('Client live 3');
    let seen = await next;
    for (let i = 0; i < 20 && !seen.done && seen.value.data.id !== created.id; i++) seen = await again.next();
    expect(seen.value).toMatchObject({ event: 'created', data: { id: created.id } });
    await again.return(undefined);
    const anonymous = liveChanges({ baseUrl, path: '/api/v1/customers/changes', maxRetries: 0 });
    const refused = await anonymous.next().catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(LiveChangesError);
    expect((refused as LiveChangesError).status).toBe(400);
  }, 60_000);
});

/** A storage holding the same items (another tab of the same browser). */
function copyOf(storage: TokenStorage): TokenStorage {
  const copy = memoryStorage();
  for (const key of Object.values(STORAGE_KEYS)) {
    const value = storage.getItem(key);
    if (value !== null) copy.setItem(key, value);
  }
  return copy;
}
