import type { AddressInfo } from 'node:net';
import { TENANT, tenantHeader } from '../support/auth';
import { startTestApp, TestApp, waitFor } from '../support/test-app';

interface Answer {
  status: number;
  headers: Headers;
  body: any;
}

/**
 * Keeps the event loop of this process (the service's) busy for about `totalMs`, in slices of
 * `sliceMs` separated by a turn of the loop, so that connections are still read and answered
 * while the pressure lasts — as under a real flood, where every turn of the loop is long.
 */
function saturateEventLoop(totalMs: number, sliceMs: number): Promise<void> {
  const until = Date.now() + totalMs;
  return new Promise((resolve) => {
    const slice = () => {
      const end = Date.now() + sliceMs;
      while (Date.now() < end) {
        // busy: nothing else runs on this thread meanwhile
      }
      if (Date.now() < until) setImmediate(slice);
      else resolve();
    };
    setTimeout(slice, 0);
  });
}

/** Issue 13 #6: 503 OVERLOADED with Retry-After under event-loop pressure; the probes keep answering. */
describe('Load shedding under event-loop pressure (issue 13 #6)', () => {
  let t: TestApp;
  let base: string;
  const business = '/api/v1/auth/tenant-config';
  const headers = { 'x-tenant-id': tenantHeader(TENANT.acme) };
  const ORIGIN = 'http://localhost:3000';

  beforeAll(async () => {
    t = await startTestApp({
      label: 'overload',
      env: {
        // Well above the stalls a loaded CI machine causes by itself (GC, other workers), well below
        // the slices of saturateEventLoop below.
        OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: '150',
        // Delay alone, so that the signal (and the metric's label) is known.
        OVERLOAD_MAX_EVENT_LOOP_UTILIZATION: '0',
        OVERLOAD_SAMPLE_INTERVAL_MS: '50',
        OVERLOAD_RETRY_AFTER_S: '3',
      },
    });
    // Real HTTP: the point is what a client on a socket gets while the loop is saturated.
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await t?.close();
  });

  async function get(path: string, extra: Record<string, string> = {}): Promise<Answer> {
    const res = await fetch(base + path, { headers: extra });
    const text = await res.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // not JSON (metrics)
    }
    return { status: res.status, headers: res.headers, body };
  }

  /** Waits until the business route answers normally (start-up's own long turns have been sampled). */
  const answersNormally = () =>
    waitFor(async () => (await get(business, headers)).status === 200, 10_000, 50);

  it('should answer a business route normally without pressure', async () => {
    let res: Answer | undefined;
    await waitFor(
      async () => {
        res = await get(business, headers);
        return res.status === 200;
      },
      10_000,
      50,
    );
    expect(res!.body.success).toBe(true);
  });

  it('should shed business requests with 503 OVERLOADED and Retry-After while the probes answer 200', async () => {
    await answersNormally();
    let saturated = true;
    const pressure = saturateEventLoop(3000, 400).then(() => {
      saturated = false;
    });
    const shed: Answer[] = [];
    const probes: number[] = [];
    while (saturated) {
      const [biz, probe] = await Promise.all([
        get(business, { ...headers, 'x-request-id': `overload-${shed.length}`, origin: ORIGIN }),
        get('/healthz'),
      ]);
      if (biz.status === 503) shed.push(biz);
      else expect(biz.status).toBe(200);
      probes.push(probe.status);
    }
    await pressure;

    expect(shed.length).toBeGreaterThan(0);
    expect(probes.length).toBeGreaterThan(0);
    expect(probes.every((s) => s === 200)).toBe(true);
    for (const res of shed) {
      expect(res.headers.get('retry-after')).toBe('3');
      expect(res.headers.get('content-type')).toContain('application/json');
      expect(res.body).toEqual({
        success: false,
        message: 'Service overloaded, retry later',
        error: { code: 'OVERLOADED', message: 'Service overloaded, retry later', details: null },
        meta: { timestamp: expect.any(String), requestId: expect.stringMatching(/^overload-\d+$/) },
      });
      expect(res.headers.get('x-request-id')).toBe(res.body.meta.requestId);
      // The CORS hook runs first (D44): a browser can read the 503 and its Retry-After.
      expect(res.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    }
  });

  it('should answer normally again once the pressure is gone, and count what it shed', async () => {
    await answersNormally();
    const res = await get(business, headers);
    expect(res.status).toBe(200);
    expect((await get('/healthz')).status).toBe(200);
    const metrics = await get('/metrics');
    expect(metrics.status).toBe(200);
    expect(String(metrics.body)).toMatch(/http_requests_shed_total\{reason="eventLoopDelay"\} [1-9]\d*/);
  });
});
