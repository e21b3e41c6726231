import { connect, type Socket } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { DataSource } from 'typeorm';
import { DatabaseService } from '../../src/database/database.service';
import { DEMO_PROFILES } from '../../src/database/seed/demo-data';
import { LiveChangesService } from '../../src/entity/live-changes.service';
import { authHeaders, signin, TENANT } from '../support/auth';
import { copyEntityConfig } from '../support/entity-fixtures';
import { startTestApp, TestApp, waitFor } from '../support/test-app';

type Rec = Record<string, any>;

jest.setTimeout(240_000);

/** What a client read of a stream: each complete event's id and name (the data is not kept). */
interface Taken {
  ids: number[];
  names: string[];
  /** The stream ended (its end, or its connection closed by the service). */
  ended: boolean;
}

/** The complete events of an SSE text: ids and names. */
function eventsOf(text: string, into: Taken): string {
  let cut: number;
  while ((cut = text.indexOf('\n\n')) >= 0) {
    const block = text.slice(0, cut);
    text = text.slice(cut + 2);
    const id = /^id: (\d+)$/m.exec(block);
    const name = /^event: (\w+)$/m.exec(block);
    if (id && name) {
      into.ids.push(Number(id[1]));
      into.names.push(name[1]);
    }
  }
  return text;
}

/**
 * One change stream over a raw HTTP/1.1 connection. `held`: the client never reads (its socket is
 * paused from the start, so the kernel's buffers stay small and fill; the rest queues in the
 * service) until `take`, which reads what reached it up to the end. Otherwise it reads as the
 * events come. The answer is chunked; a dropped stream ends mid-answer.
 */
class RawStream {
  readonly taken: Taken = { ids: [], names: [], ended: false };
  status = 0;
  private raw = Buffer.alloc(0);
  private socket!: Socket;
  private settled!: Promise<void>;

  async open(port: number, path: string, headers: Record<string, string>, held = false): Promise<this> {
    this.socket = connect(port, '127.0.0.1');
    await new Promise<void>((resolve, reject) => {
      this.socket.once('connect', resolve).once('error', reject);
    });
    const lines = Object.entries({ host: '127.0.0.1', ...headers }).map(([k, v]) => `${k}: ${v}\r\n`);
    this.socket.write(`GET ${path} HTTP/1.1\r\n${lines.join('')}\r\n`);
    this.settled = new Promise((resolve) => this.socket.once('close', () => resolve()));
    this.socket.on('error', () => undefined);
    this.socket.on('data', (chunk: Buffer) => {
      this.raw = Buffer.concat([this.raw, chunk]);
      if (!this.status) this.parseHead();
      if (!held) this.parseBody();
    });
    if (held) {
      // Read up to the status line, then stop reading altogether.
      await new Promise<void>((resolve) => {
        const check = () => (this.status ? resolve() : setTimeout(check, 5));
        check();
      });
      this.socket.pause();
    } else
      await new Promise<void>((resolve) => {
        const check = () => (this.status ? resolve() : setTimeout(check, 5));
        check();
      });
    void this.settled.then(() => {
      this.parseBody();
      this.taken.ended = true;
    });
    return this;
  }

  /** Reads what reached this client, to the end of the stream. */
  async take(): Promise<Taken> {
    this.socket.resume();
    await this.settled;
    this.parseBody();
    this.taken.ended = true;
    return this.taken;
  }

  close(): void {
    this.socket.destroy();
  }

  private head = -1;
  private text = '';
  private parseHead(): void {
    const end = this.raw.indexOf('\r\n\r\n');
    if (end < 0) return;
    this.status = Number(/^HTTP\/1\.1 (\d{3})/.exec(this.raw.subarray(0, end).toString('latin1'))?.[1] ?? 0);
    this.head = end + 4;
  }

  /** De-chunks what arrived (an incomplete last chunk waits), then parses the events. */
  private parseBody(): void {
    if (this.head < 0) return;
    let at = this.head;
    for (;;) {
      const lineEnd = this.raw.indexOf('\r\n', at);
      if (lineEnd < 0) break;
      const size = parseInt(this.raw.subarray(at, lineEnd).toString('latin1'), 16);
      if (!Number.isFinite(size) || size === 0 || lineEnd + 2 + size + 2 > this.raw.length) break;
      this.text += this.raw.subarray(lineEnd + 2, lineEnd + 2 + size).toString('utf8');
      at = lineEnd + 2 + size + 2;
    }
    this.raw = this.raw.subarray(at);
    this.head = 0;
    this.text = eventsOf(this.text, this.taken);
  }
}

/**
 * Issue 34 #5: a client that stops reading its stream cannot make the service hold an unbounded
 * queue for it. Ten streams that never read while hundreds of large events are written are
 * dropped once more than SSE_MAX_BUFFER_BYTES waits for them; the service's memory stays bounded,
 * a reading stream of the same view is not dropped, and each dropped client resumes with
 * Last-Event-ID and gets every missed event, in order. A replay of thousands of events is read in
 * pages and gives the event loop back: another tenant's reads keep answering meanwhile.
 */
describe('live streams whose clients fall behind (issue 34 #5)', () => {
  let t: TestApp;
  let ds: DataSource;
  let port = 0;
  const token: Record<string, string> = {};
  const held: RawStream[] = [];
  const MAX_BUFFER = 64 * 1024;
  /** A row's notes: events of ~20 KB, so a few hundred fill a socket's buffers (~4 MB on loopback). */
  const NOTES = 'n'.repeat(20_000);

  /** A stream of the admin's (or globex's); `held`: a client that never reads until `take`. */
  const openStream = async (
    path: string,
    options: { who?: 'admin' | 'globex'; held?: boolean; lastEventId?: number } = {},
  ): Promise<RawStream> => {
    const who = options.who ?? 'admin';
    const headers = authHeaders(who === 'globex' ? TENANT.globex : TENANT.acme, token[who]);
    if (options.lastEventId !== undefined) headers['last-event-id'] = String(options.lastEventId);
    const s = await new RawStream().open(port, path, headers, options.held);
    held.push(s);
    expect(s.status).toBe(200);
    return s;
  };

  let serial = 0;
  /** Creates `n` rows through the bulk route, `per` a request; their ids. */
  const createMany = async (entity: string, n: number, per: number, extra: Rec = {}): Promise<number[]> => {
    const ids: number[] = [];
    for (let done = 0; done < n; done += per) {
      const records = Array.from({ length: Math.min(per, n - done) }, () => {
        serial += 1;
        return { name: `Behind ${serial}`, email: `behind-${serial}-${Date.now()}@x.example`, ...extra };
      });
      const res = await t.app.inject({
        method: 'POST',
        url: `/api/v1/${entity}/bulk`,
        headers: authHeaders(TENANT.acme, token.admin),
        payload: { operation: 'create', records },
      });
      expect(res.statusCode).toBe(200);
      const results = res.json().data.results as Rec[];
      expect(results.every((r) => r.status === 201)).toBe(true);
      ids.push(...results.map((r) => Number(r.id ?? r.data?.id)));
    }
    return ids;
  };

  const metric = async (name: string): Promise<number> => {
    const body = (await t.app.inject({ method: 'GET', url: '/metrics' })).body;
    return Number(new RegExp(`^${name} ([\\d.e+-]+)$`, 'm').exec(body)?.[1] ?? NaN);
  };

  beforeAll(async () => {
    t = await startTestApp({
      label: 'live-backpressure',
      env: { SSE_MAX_BUFFER_BYTES: String(MAX_BUFFER), SSE_MAX_STREAMS_PER_USER: '20' },
    });
    ds = t.app.get(DatabaseService).dataSource;
    await t.app.listen(0, '127.0.0.1');
    port = (t.app.getHttpServer().address() as { port: number }).port;
    token.admin = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
    token.globex = (await signin(t.app, TENANT.globex, 'admin@globex.test')).token;
    // The customers entity with its notes shown: events large enough to fill buffers quickly.
    const customers = DEMO_PROFILES.find((p) => p.code === 'customers')!;
    await copyEntityConfig(ds, 'customers', 'noted_customers', {
      profile: {
        prf_mode_code: 'FULL',
        prf_policy: JSON.stringify({ ...customers.policy, projection: null }),
      },
    });
  });

  afterEach(() => {
    for (const s of held.splice(0)) s.close();
  });

  afterAll(async () => {
    await t?.close();
  });

  // First: the tests of large events leave a large heap, whose collection would read as loop delay.
  it('should replay thousands of events complete and in order, in pages, while another tenant’s reads keep answering', async () => {
    const path = '/api/v1/customers/changes';
    const marker = await openStream(path);
    await createMany('customers', 1, 1);
    await waitFor(async () => marker.taken.ids.length === 1, 10_000);
    const from = marker.taken.ids[0];
    const N = 5_000;
    await createMany('customers', N, 1_000);
    await waitFor(async () => marker.taken.ids.length === N + 1, 60_000);
    const expected = marker.taken.ids.slice(1);

    const lag = monitorEventLoopDelay({ resolution: 10 });
    const latencies: number[] = [];
    let replaying = true;
    const theirReads = (async () => {
      while (replaying) {
        const started = performance.now();
        const res = await t.app.inject({
          method: 'GET',
          url: '/api/v1/customers?limit=5',
          headers: authHeaders(TENANT.globex, token.globex),
        });
        latencies.push(performance.now() - started);
        expect(res.statusCode).toBe(200);
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    lag.enable();
    const replay = await openStream(path, { lastEventId: from });
    try {
      await waitFor(async () => replay.taken.ids.length >= N, 120_000, 20);
    } finally {
      replaying = false;
      lag.disable();
      await theirReads;
    }
    expect(replay.taken.ids).toEqual(expected);
    expect(replay.taken.names.every((n) => n === 'created')).toBe(true);
    latencies.sort((a, b) => a - b);
    const p99 = latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * 0.99))];
    expect(latencies.length).toBeGreaterThan(5);
    expect(p99).toBeLessThan(250);
    // The loop was never held for long: a replay gives it back every few tens of ms.
    expect(lag.max / 1e6).toBeLessThan(250);
  });

  it('should drop streams that do not read once they are too far behind, keep the memory bounded, and resume them with Last-Event-ID', async () => {
    const path = '/api/v1/noted_customers/changes';
    const live = t.app.get(LiveChangesService);
    const reading = await openStream(path);
    const N = 600;
    /** Writes N large rows; the peak growth of this process's RSS and of what waits for the streams. */
    const round = async (): Promise<{ rssMb: number; queuedPeak: number }> => {
      const before = process.memoryUsage.rss();
      let peak = before;
      let queuedPeak = 0;
      const sampler = setInterval(() => {
        peak = Math.max(peak, process.memoryUsage.rss());
        queuedPeak = Math.max(queuedPeak, live.bufferedBytes);
      }, 10);
      const seen = reading.taken.ids.length;
      try {
        await createMany('noted_customers', N, 40, { internal_notes: NOTES });
        await waitFor(async () => reading.taken.ids.length >= seen + N, 60_000);
      } finally {
        clearInterval(sampler);
      }
      return { rssMb: (peak - before) / 1024 / 1024, queuedPeak };
    };
    // With the reading stream alone: a first round brings the process to what the writes and their
    // shaping need; the second is the reference.
    await round();
    const reference = await round();
    const slow = await Promise.all(Array.from({ length: 10 }, () => openStream(path, { held: true })));
    await waitFor(async () => live.openStreams === 11, 5_000);
    const measured = await round();

    // The ten that did not read were dropped; the one that read was not, and got every event.
    expect(await metric('live_streams_dropped_total')).toBe(10);
    expect(live.openStreams).toBe(1);
    expect(reading.taken.ended).toBe(false);
    expect(reading.taken.names.every((n) => n === 'created')).toBe(true);
    // What waited in the service for the ten stayed near the bound (one slice of writes above it);
    // without it, each queued what its socket did not take (~8 MB each here).
    expect(measured.queuedPeak).toBeLessThan(10 * (MAX_BUFFER + 1024 * 1024));
    // The process grew about as it did without the ten (RSS is noisy: ±25 MB between rounds here;
    // without the bound it grew ~85 MB more).
    expect(measured.rssMb - reference.rssMb).toBeLessThan(50);

    // Each dropped client reads what reached it, sees the end, and resumes after its last id.
    const seqs = reading.taken.ids.slice(2 * N);
    for (const s of slow) {
      const got = await s.take();
      expect(got.ended).toBe(true);
      expect(got.ids.length).toBeLessThan(N);
      expect(got.ids).toEqual(seqs.slice(0, got.ids.length));
    }
    const first = slow[0].taken.ids;
    const resumed = await openStream(path, { lastEventId: first[first.length - 1] ?? seqs[0] - 1 });
    await waitFor(async () => first.length + resumed.taken.ids.length >= N, 30_000);
    expect([...first, ...resumed.taken.ids]).toEqual(seqs);
  });

  it('should drop a resuming stream that does not read its replay, as a live one', async () => {
    const path = '/api/v1/noted_customers/changes';
    const before = await metric('live_streams_dropped_total');
    const marker = await openStream(path);
    const N = 400;
    await createMany('noted_customers', N, 40, { internal_notes: NOTES });
    await waitFor(async () => marker.taken.ids.length === N, 30_000);

    const replaying = await openStream(path, { held: true, lastEventId: marker.taken.ids[0] - 1 });
    await waitFor(async () => (await metric('live_streams_dropped_total')) === before + 1, 30_000);
    const got = await replaying.take();
    expect(got.ended).toBe(true);
    expect(got.ids.length).toBeLessThan(N);
    expect(got.ids).toEqual(marker.taken.ids.slice(0, got.ids.length));
    expect(marker.taken.ended).toBe(false);
  });
});
