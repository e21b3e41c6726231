import type { DataSource } from 'typeorm';
import { DatabaseService } from '../../src/database/database.service';
import { LiveChangesService } from '../../src/entity/live-changes.service';
import { ReadinessService } from '../../src/health/readiness.service';
import { DEMO_PROFILES } from '../../src/database/seed/demo-data';
import { authHeaders, signin, TENANT } from '../support/auth';
import { copyEntityConfig } from '../support/entity-fixtures';
import { Stream, type Rec } from '../support/sse-stream';
import { startTestApp, TestApp, waitFor } from '../support/test-app';

/**
 * Live changes end to end (D55) over a real HTTP stream: a write arrives as an event shaped as
 * the caller's read (masking, projection), another tenant's writes never arrive, a row outside the
 * caller's row filter never arrives (and one leaving it arrives as `deleted`), Last-Event-ID
 * resumes from the outbox and a too-old one gets `reset`, and the per-user cap answers 429.
 */
describe('live changes (D55)', () => {
  let t: TestApp;
  let ds: DataSource;
  let base: string;
  const token: Record<string, string> = {};
  const streams: Stream[] = [];

  const headersOf = (who: 'admin' | 'viewer' | 'globex', extra: Record<string, string> = {}) => ({
    ...authHeaders(who === 'globex' ? TENANT.globex : TENANT.acme, token[who]),
    ...extra,
  });

  const open = async (
    path: string,
    who: 'admin' | 'viewer' | 'globex',
    extra: Record<string, string> = {},
  ) => {
    const s = await new Stream().open(`${base}${path}`, headersOf(who, extra));
    streams.push(s);
    return s;
  };

  const call = (method: 'POST' | 'PUT' | 'DELETE', url: string, who: 'admin' | 'globex', payload?: Rec) =>
    t.app.inject({ method, url, headers: headersOf(who), ...(payload ? { payload } : {}) });

  let seq = 0;
  const newCustomer = async (entity: string, who: 'admin' | 'globex', extra: Rec = {}) => {
    seq += 1;
    const res = await call('POST', `/api/v1/${entity}`, who, {
      name: `Live ${seq}`,
      email: `live${seq}-${Date.now()}@x.example`,
      phone: '+41 79 123 45 67',
      internal_notes: 'never out',
      ...extra,
    });
    expect(res.statusCode).toBe(201);
    return res.json().data as Rec;
  };

  beforeAll(async () => {
    t = await startTestApp({ label: 'live-changes', env: { SSE_MAX_STREAMS_PER_USER: '6' } });
    ds = t.app.get(DatabaseService).dataSource;
    await t.app.listen(0, '127.0.0.1');
    const address = t.app.getHttpServer().address() as { port: number };
    base = `http://127.0.0.1:${address.port}`;
    token.admin = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
    token.viewer = (await signin(t.app, TENANT.acme, 'viewer@acme.test')).token;
    token.globex = (await signin(t.app, TENANT.globex, 'admin@globex.test')).token;
    const customers = DEMO_PROFILES.find((p) => p.code === 'customers')!;
    await copyEntityConfig(ds, 'customers', 'gold_customers', {
      profile: {
        prf_mode_code: 'FULL',
        prf_policy: JSON.stringify({ ...customers.policy, rowFilters: { where: "tier = 'gold'" } }),
      },
    });
  });

  afterEach(() => {
    for (const s of streams.splice(0)) s.close();
  });

  afterAll(async () => {
    await t?.close();
  });

  it('should push a write as an event shaped as the read, and never to another tenant', async () => {
    const acme = await open('/api/v1/customers/changes', 'viewer');
    const globex = await open('/api/v1/customers/changes', 'globex');
    expect(acme.status).toBe(200);
    expect(acme.contentType).toMatch(/^text\/event-stream/);
    const created = await newCustomer('customers', 'admin');
    const theirs = await newCustomer('customers', 'globex');
    await waitFor(async () => acme.data().length >= 1 && globex.data().length >= 1, 10_000);
    const [event] = acme.data();
    expect(event.event).toBe('created');
    expect(event.seq).toBeGreaterThan(0);
    expect(event.id).toBe(created.id);
    expect(event.row.id).toBe(created.id);
    expect(event.lastModified).toBe(created.lastModified);
    // Masking and projection as the read shows them.
    expect(event.row.phone).not.toBe('+41 79 123 45 67');
    expect(event.row.phone).toBe(created.phone);
    expect(event.row).not.toHaveProperty('internal_notes');
    expect(acme.data().map((e) => e.id as number)).not.toContain(theirs.id);
    expect(acme.data().every((e) => e.row?.id !== theirs.id)).toBe(true);
    expect(globex.data().every((e) => e.row?.id !== created.id && e.id !== created.id)).toBe(true);

    const updated = await call('PUT', `/api/v1/customers/${created.id}`, 'admin', {
      name: 'Live renamed',
      lastModified: created.lastModified,
    });
    expect(updated.statusCode).toBe(200);
    const removed = await call('DELETE', `/api/v1/customers/${created.id}`, 'admin');
    expect(removed.statusCode).toBeLessThan(300);
    await waitFor(async () => acme.data().length >= 3, 10_000);
    expect(
      acme.data().map((e): unknown[] => [e.event, e.id === created.id || e.row?.id === created.id]),
    ).toEqual([
      ['created', true],
      ['updated', true],
      ['deleted', true],
    ]);
    expect(acme.data()[1].row.name).toBe('Live renamed');
    expect(acme.data()[2]).toMatchObject({ id: created.id, row: null, lastModified: null });
    expect(acme.data()[2].seq).toBeGreaterThan(acme.data()[1].seq);

    // Metrics: the open streams, the events each stream was sent, the lag of each live event.
    const metrics = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
    const value = (re: RegExp): number => Number(re.exec(metrics)?.[1] ?? NaN);
    expect(value(/^live_streams_open (\d+)$/m)).toBeGreaterThanOrEqual(2);
    expect(value(/^live_events_sent_total\{event="created"\} (\d+)$/m)).toBeGreaterThanOrEqual(2);
    expect(value(/^live_events_sent_total\{event="updated"\} (\d+)$/m)).toBeGreaterThanOrEqual(1);
    expect(value(/^live_events_sent_total\{event="deleted"\} (\d+)$/m)).toBeGreaterThanOrEqual(1);
    expect(value(/^live_event_lag_seconds_count (\d+)$/m)).toBeGreaterThanOrEqual(4);
    expect(value(/^live_event_lag_seconds_sum ([\d.e-]+)$/m)).toBeLessThan(60);
    acme.close();
    globex.close();
    await waitFor(async () => {
      const after = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
      return /^live_streams_open 0$/m.test(after);
    }, 5_000);
  });

  it('should never send a row outside the row filter, and send one leaving it as deleted', async () => {
    const gold = await open('/api/v1/gold_customers/changes', 'admin');
    const silver = await newCustomer('gold_customers', 'admin', { tier: 'silver' });
    const golden = await newCustomer('gold_customers', 'admin', { tier: 'gold' });
    await waitFor(async () => gold.data().length >= 1, 10_000);
    // Give the silver row's event (sequenced first) every chance to have arrived.
    expect(gold.data().map((e): unknown[] => [e.event, e.row?.id])).toEqual([['created', golden.id]]);
    expect(JSON.stringify(gold.events)).not.toContain(silver.email);
    const moved = await call('PUT', `/api/v1/gold_customers/${golden.id}`, 'admin', {
      tier: 'silver',
      lastModified: golden.lastModified,
    });
    expect(moved.statusCode).toBe(200);
    await waitFor(async () => gold.data().length >= 2, 10_000);
    expect(gold.data()[1]).toMatchObject({ event: 'deleted', id: golden.id, row: null });
    expect(JSON.stringify(gold.events[1])).not.toContain('silver');
  });

  it('should resume after Last-Event-ID from the outbox, and answer reset for an id older than kept', async () => {
    const first = await open('/api/v1/customers/changes', 'admin');
    const a = await newCustomer('customers', 'admin');
    await waitFor(async () => first.data().length >= 1, 10_000);
    const lastId = first.events[first.events.length - 1].id!;
    first.close();
    const b = await newCustomer('customers', 'admin');
    const c = await newCustomer('customers', 'admin');
    const resumed = await open('/api/v1/customers/changes', 'admin', { 'last-event-id': lastId });
    await waitFor(async () => resumed.data().length >= 2, 10_000);
    expect(resumed.data().map((e) => e.row?.id as number)).toEqual([b.id, c.id]);
    expect(resumed.data().some((e) => e.row?.id === a.id)).toBe(false);

    // Events before the oldest retained one are gone: a reset, then live events.
    await ds.query(`DELETE FROM app_events WHERE evt_sequence <= ${Number(lastId) + 1}`);
    const stale = await open('/api/v1/customers/changes', 'admin', { 'last-event-id': '1' });
    await waitFor(async () => stale.events.length >= 1, 10_000);
    expect(stale.events[0].event).toBe('reset');
    const d = await newCustomer('customers', 'admin');
    await waitFor(async () => stale.data().some((e) => e.row?.id === d.id), 10_000);
  });

  it('should narrow a dataview stream to its columns and default filters', async () => {
    const grid = await open('/api/v1/dataviews/customers_grid/changes', 'viewer');
    expect(grid.status).toBe(200);
    const created = await newCustomer('customers', 'admin');
    await waitFor(async () => grid.data().length >= 1, 10_000);
    expect(grid.data()[0]).toMatchObject({ event: 'created', id: created.id });
    expect(Object.keys(grid.data()[0].row as Rec).sort()).toEqual(
      ['credit_limit', 'email', 'id', 'lastModified', 'name', 'tier'].sort(),
    );

    const orders = await open('/api/v1/dataviews/orders_grid/changes', 'admin');
    const list = await t.app.inject({
      method: 'GET',
      url: '/api/v1/orders?limit=1&sortBy=id',
      headers: headersOf('admin'),
    });
    const order = (list.json().data as Rec).records[0] as Rec;
    const cancelled = await call('PUT', `/api/v1/orders/${order.id}`, 'admin', {
      status: 'cancelled',
      lastModified: order.lastModified,
    });
    expect(cancelled.statusCode).toBe(200);
    await waitFor(async () => orders.data().length >= 1, 10_000);
    // Out of the grid's default filter (status not_equals cancelled): it leaves the view.
    expect(orders.data()[0]).toMatchObject({ event: 'deleted', id: order.id, row: null });
    const back = await call('PUT', `/api/v1/orders/${order.id}`, 'admin', {
      status: 'paid',
      lastModified: (cancelled.json().data as Rec).lastModified,
    });
    expect(back.statusCode).toBe(200);
    await waitFor(async () => orders.data().length >= 2, 10_000);
    expect(orders.data()[1]).toMatchObject({ event: 'updated', id: order.id });
    expect((orders.data()[1].row as Rec).status).toBe('paid');
  });

  it('should refuse a stream without a token, and the stream beyond the per-user cap with 429', async () => {
    const anon = await fetch(`${base}/api/v1/customers/changes`, { headers: authHeaders(TENANT.acme, '') });
    expect(anon.status).toBe(401);
    expect(((await anon.json()) as Rec).error.code).toBeDefined();
    const open6 = await Promise.all(
      [1, 2, 3, 4, 5, 6].map(() => open('/api/v1/customers/changes', 'viewer')),
    );
    expect(open6.map((s) => s.status)).toEqual([200, 200, 200, 200, 200, 200]);
    const seventh = await open('/api/v1/customers/changes', 'viewer');
    expect(seventh.status).toBe(429);
    // A closed stream frees its place.
    open6[0].close();
    await waitFor(async () => t.app.get(LiveChangesService).openStreams <= 5, 5_000);
    expect((await open('/api/v1/customers/changes', 'viewer')).status).toBe(200);
  });

  /** A second app of its own, listening, with one open stream of the admin's. */
  async function appWithStream(label: string): Promise<{ other: TestApp; stream: Stream }> {
    const other = await startTestApp({ label });
    await other.app.listen(0, '127.0.0.1');
    const port = (other.app.getHttpServer().address() as { port: number }).port;
    const admin = (await signin(other.app, TENANT.acme, 'admin@acme.test')).token;
    const stream = await new Stream().open(
      `http://127.0.0.1:${port}/api/v1/customers/changes`,
      authHeaders(TENANT.acme, admin),
    );
    streams.push(stream);
    expect(stream.status).toBe(200);
    return { other, stream };
  }

  it('should end open streams when the service shuts down, so neither the drain nor the close waits for them', async () => {
    const { other, stream } = await appWithStream('live-changes-close');
    // The signal's first step (SIGTERM / SIGINT): the streams end before the HTTP drain begins.
    other.app.get(ReadinessService).markShuttingDown();
    await waitFor(async () => stream.ended, 5_000);
    expect(other.app.get(LiveChangesService).openStreams).toBe(0);
    const started = Date.now();
    await other.close();
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('should end open streams when the application closes without a signal (tests, embedding)', async () => {
    const { other, stream } = await appWithStream('live-changes-close2');
    const started = Date.now();
    await other.close();
    expect(Date.now() - started).toBeLessThan(5_000);
    await waitFor(async () => stream.ended, 5_000);
  });
});
