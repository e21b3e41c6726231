import { CacheService } from '../../src/cache/cache.service';
import { CollectionEvent, CollectionEventsService } from '../../src/cache/collection-events';
import { DatabaseService } from '../../src/database/database.service';
import { authHeaders, signin, TENANT } from '../support/auth';
import { startTestApp, TestApp, waitFor } from '../support/test-app';

type Json = Record<string, any>;

const SENTINEL = '__sentinel__';
const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/**
 * D37 through the whole app: every committed entity mutation publishes one collection event per
 * affected record on `{prefix}:events:collection`, a failed one publishes nothing, and an event
 * from another instance makes this one drop the affected keys and run the reload hooks.
 */
describe('Collection events (D37, spec §4.5, §6)', () => {
  let t: TestApp;
  let events: CollectionEventsService;
  let cache: CacheService;
  let token: string;
  const received: Array<{ event: CollectionEvent; own: boolean }> = [];
  const hooked: Array<{ event: CollectionEvent; own: boolean }> = [];
  let sentinels = 0;

  beforeAll(async () => {
    t = await startTestApp({ label: 'collection-events' });
    events = t.app.get(CollectionEventsService);
    cache = t.app.get(CacheService);
    events.subscribe((event, source) => {
      received.push({ event, own: source.own });
    });
    events.onCollectionEvent((event, source) => {
      if (event.entityCode !== SENTINEL) hooked.push({ event, own: source.own });
    });
    await waitFor(async () => events.listening, 10000, 20);
    token = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
  });

  afterAll(async () => {
    await t?.close();
  });

  const call = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: Json) =>
    t.app.inject({
      method,
      url,
      headers: authHeaders(TENANT.acme, token),
      ...(payload === undefined ? {} : { payload }),
    });

  /**
   * The events heard since the last flush: those before a sentinel published now. The app and the
   * sentinel publish through the same connection (Redis) or queue (in-process), so an event
   * published earlier cannot arrive after the sentinel: "exactly these events" without sleeping.
   */
  async function flush(): Promise<CollectionEvent[]> {
    const id = ++sentinels;
    await events.publish({
      type: 'updated',
      entityCode: SENTINEL,
      tenantId: '0',
      id,
      at: new Date().toISOString(),
    });
    await waitFor(
      async () => received.some((r) => r.event.entityCode === SENTINEL && r.event.id === id),
      10000,
      5,
    );
    const heard = received.splice(0).filter((r) => r.event.entityCode !== SENTINEL);
    expect(heard.every((r) => r.own)).toBe(true);
    return heard.map((r) => r.event);
  }

  /** The events an action publishes, and nothing published before it. */
  async function eventsOf<T>(action: () => Promise<T>): Promise<{ result: T; events: CollectionEvent[] }> {
    await flush();
    hooked.length = 0;
    const result = await action();
    return { result, events: await flush() };
  }

  let serial = 0;
  const newCustomer = (): Json => ({
    name: `Event Test ${++serial}`,
    email: `event-test-${serial}@acme.example`,
    tier: 'silver',
    credit_limit: 1500,
  });

  const expectAt = (e: CollectionEvent, from: number, to: number) => {
    expect(e.at).toMatch(ISO_8601);
    expect(Date.parse(e.at)).toBeGreaterThanOrEqual(from);
    expect(Date.parse(e.at)).toBeLessThanOrEqual(to);
  };

  it('should publish one created event for a create', async () => {
    const from = Date.now();
    const { result, events: heard } = await eventsOf(() => call('POST', '/api/v1/customers', newCustomer()));
    expect(result.statusCode).toBe(201);
    const id = result.json().data.id as number;
    expect(heard).toEqual([
      { type: 'created', entityCode: 'customers', tenantId: TENANT.acme, id, at: expect.any(String) },
    ]);
    expectAt(heard[0], from, Date.now());
    // This instance's reload hooks ran on its own event too (spec §4.5: every instance reloads).
    expect(hooked).toEqual([{ event: heard[0], own: true }]);
  });

  it('should publish one updated event for an update', async () => {
    const created = (await call('POST', '/api/v1/customers', newCustomer())).json().data;
    const from = Date.now();
    const { result, events: heard } = await eventsOf(() =>
      call('PUT', `/api/v1/customers/${created.id}`, { name: 'Renamed', lastModified: created.lastModified }),
    );
    expect(result.statusCode).toBe(200);
    expect(heard).toEqual([
      {
        type: 'updated',
        entityCode: 'customers',
        tenantId: TENANT.acme,
        id: created.id,
        at: expect.any(String),
      },
    ]);
    expectAt(heard[0], from, Date.now());
  });

  it('should publish one deleted event for a delete', async () => {
    const created = (await call('POST', '/api/v1/customers', newCustomer())).json().data;
    const from = Date.now();
    const { result, events: heard } = await eventsOf(() => call('DELETE', `/api/v1/customers/${created.id}`));
    expect(result.statusCode).toBe(200);
    expect(heard).toEqual([
      {
        type: 'deleted',
        entityCode: 'customers',
        tenantId: TENANT.acme,
        id: created.id,
        at: expect.any(String),
      },
    ]);
    expectAt(heard[0], from, Date.now());
  });

  it('should publish nothing for a failed write', async () => {
    const created = (await call('POST', '/api/v1/customers', newCustomer())).json().data;
    const { events: heard } = await eventsOf(async () => {
      expect((await call('POST', '/api/v1/customers', { name: '', credit_limit: -5 })).statusCode).toBe(400);
      expect((await call('PUT', `/api/v1/customers/${created.id}`, { name: 'No token' })).statusCode).toBe(
        400,
      );
      const stale = '2000-01-01T00:00:00.000Z';
      expect(
        (await call('PUT', `/api/v1/customers/${created.id}`, { name: 'Stale', lastModified: stale }))
          .statusCode,
      ).toBe(409);
      expect((await call('DELETE', '/api/v1/customers/999999')).statusCode).toBe(404);
    });
    expect(heard).toEqual([]);
    expect(hooked).toEqual([]);
  });

  it('should publish a deleted event for every cascaded row as well', async () => {
    const ds = t.app.get(DatabaseService).dataSource;
    const [customer] = await ds
      .createQueryBuilder()
      .select('o.ord_customer_id', 'id')
      .from('demo_orders', 'o')
      .where('o.ord_tenant_id = :tenant AND o.ord_is_deleted = :no', { tenant: 1, no: 0 })
      .orderBy('o.ord_customer_id')
      .limit(1)
      .getRawMany<{ id: unknown }>();
    const customerId = Number(customer.id);
    const orderIds = (
      await ds
        .createQueryBuilder()
        .select('o.ord_id', 'id')
        .from('demo_orders', 'o')
        .where('o.ord_customer_id = :id AND o.ord_is_deleted = :no', { id: customerId, no: 0 })
        .getRawMany<{ id: unknown }>()
    )
      .map((r) => Number(r.id))
      .sort((a, b) => a - b);
    expect(orderIds.length).toBeGreaterThan(0);

    const { result, events: heard } = await eventsOf(() =>
      call('DELETE', `/api/v1/customers/${customerId}?cascade=true`),
    );
    expect(result.statusCode).toBe(200);
    expect(heard.every((e) => e.type === 'deleted' && e.tenantId === TENANT.acme)).toBe(true);
    expect(heard.filter((e) => e.entityCode === 'customers').map((e) => e.id)).toEqual([customerId]);
    expect(
      heard
        .filter((e) => e.entityCode === 'orders')
        .map((e) => e.id)
        .sort((a, b) => a - b),
    ).toEqual(orderIds);
    expect(heard).toHaveLength(1 + orderIds.length);
  });

  /** What another instance publishing on the same channel looks like: its own instance id. */
  async function publishFromAnotherInstance(event: CollectionEvent): Promise<void> {
    const other = new CollectionEventsService(cache);
    hooked.length = 0;
    await other.publish(event);
    // The invalidator runs the reload hooks after the drops, so the hook marks the end.
    await waitFor(async () => hooked.length > 0, 10000, 5);
    await other.onApplicationShutdown();
  }

  it("should drop the affected list keys and run the reload hooks on another instance's event", async () => {
    expect((await call('GET', '/api/v1/customers?limit=3')).statusCode).toBe(200);
    const pattern = cache.keys.entityListAll(TENANT.acme, 'customers');
    // The page and the total of its filters (D27).
    expect(await cache.store.keys(pattern)).toHaveLength(2);
    const event: CollectionEvent = {
      type: 'updated',
      entityCode: 'customers',
      tenantId: TENANT.acme,
      id: 1,
      at: new Date().toISOString(),
    };
    await publishFromAnotherInstance(event);
    expect(hooked).toEqual([{ event, own: false }]);
    expect(await cache.store.keys(pattern)).toEqual([]);
  });

  it("should leave other tenants' and other entities' list keys alone", async () => {
    const globex = (await signin(t.app, TENANT.globex, 'admin@globex.test')).token;
    const list = await t.app.inject({
      method: 'GET',
      url: '/api/v1/customers?limit=2',
      headers: authHeaders(TENANT.globex, globex),
    });
    expect(list.statusCode).toBe(200);
    expect((await call('GET', '/api/v1/orders?limit=2')).statusCode).toBe(200);
    const kept = [
      cache.keys.entityListAll(TENANT.globex, 'customers'),
      cache.keys.entityListAll(TENANT.acme, 'orders'),
    ];
    // Each list: its page and its total.
    for (const pattern of kept) expect(await cache.store.keys(pattern)).toHaveLength(2);
    await publishFromAnotherInstance({
      type: 'created',
      entityCode: 'customers',
      tenantId: TENANT.acme,
      id: 2,
      at: new Date().toISOString(),
    });
    for (const pattern of kept) expect(await cache.store.keys(pattern)).toHaveLength(2);
  });

  it("should drop a user's sign-in state on another instance's users event", async () => {
    const key = cache.keys.userState(TENANT.acme, 4242);
    await cache.setJson(key, { active: true }, 30);
    await publishFromAnotherInstance({
      type: 'updated',
      entityCode: 'users',
      tenantId: TENANT.acme,
      id: 4242,
      at: new Date().toISOString(),
    });
    expect(await cache.store.get(key)).toBeNull();
  });
});
