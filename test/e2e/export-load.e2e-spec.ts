import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import type { DataSource } from 'typeorm';
import { DatabaseService } from '../../src/database/database.service';
import { authHeaders, signin, TENANT } from '../support/auth';
import { fillCustomers } from '../support/entity-fixtures';
import { startTestApp, TestApp, waitFor } from '../support/test-app';

type Rec = Record<string, any>;

const ROWS = 10_000;
const EXPORTS = 10;

jest.setTimeout(240_000);

/**
 * Issue 21 #1, as the attack run found it: one tenant's PDF exports must not stall another
 * tenant. Ten exports of 10,000 rows run (PDF, the heaviest renderer) while an admin of another
 * tenant reads a page of its customers again and again; that reader's p99 stays under 100 ms,
 * because the rendering runs in a render thread and the main thread only reads batches. Also: an
 * export cancelled while it runs stops, keeps its CANCELLED status, and the next one runs.
 */
describe('Exports under load: another tenant keeps its latency (issue 21 #1)', () => {
  let t: TestApp;
  let ds: DataSource;
  let dir: string;
  const token: Record<string, string> = {};
  const report = (line: string) => process.stdout.write(`${line}\n`);

  const exportPdf = () =>
    t.app.inject({
      method: 'POST',
      url: '/api/v1/dataviews/customers_grid/export',
      headers: authHeaders(TENANT.acme, token.acme),
      payload: { format: 'pdf' },
    });
  const status = async (jobId: string): Promise<Rec> => {
    const res = await t.app.inject({
      method: 'GET',
      url: `/api/v1/exports/${jobId}`,
      headers: authHeaders(TENANT.acme, token.acme),
    });
    return res.json<{ data: Rec }>().data;
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'export-load-'));
    t = await startTestApp({
      label: 'export-load',
      env: {
        EXPORT_DIR: dir,
        EXPORT_MAX_PER_USER: String(EXPORTS),
        EXPORT_MAX_PER_TENANT: String(EXPORTS),
        EXPORT_MAX_PER_INSTANCE: String(2 * EXPORTS),
        JOB_POLL_MS: '100',
        // The reader's requests are what is measured, not the tenant's budget, nor load shedding
        // (a busy CI machine's own stalls would turn reads away with 503; the delay is measured).
        RATE_LIMIT_POINTS: '1000000',
        OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: '0',
        OVERLOAD_MAX_EVENT_LOOP_UTILIZATION: '0',
      },
    });
    ds = t.app.get(DatabaseService).dataSource;
    await fillCustomers(ds, 1, ROWS);
    token.acme = (await signin(t.app, TENANT.acme, 'admin@acme.test')).token;
    token.globex = (await signin(t.app, TENANT.globex, 'admin@globex.test')).token;
    // Warm-up: the render thread is started (and, from the sources, transpiled) before measuring.
    const warm = await exportPdf();
    expect(warm.statusCode).toBe(200);
  });

  afterAll(async () => {
    await t?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it(`should keep another tenant's reads under 100 ms at p99 while ${EXPORTS} exports of ${ROWS} rows run`, async () => {
    const latencies: number[] = [];
    const loop = monitorEventLoopDelay({ resolution: 10 });
    let running = true;
    const reader = (async () => {
      for (let i = 0; running; i++) {
        const t0 = performance.now();
        const res = await t.app.inject({
          method: 'GET',
          // A new page each time: every read goes to the database, none is served from the cache.
          url: `/api/v1/customers?limit=20&skip=${i % 10}&sortBy=name&sortOrder=${i % 2 ? 'asc' : 'desc'}`,
          headers: authHeaders(TENANT.globex, token.globex),
        });
        latencies.push(performance.now() - t0);
        expect(res.statusCode).toBe(200);
        await new Promise((r) => setTimeout(r, 10));
      }
    })();
    loop.enable();
    const started = performance.now();
    const answers = await Promise.all(Array.from({ length: EXPORTS }, () => exportPdf()));
    const jobs: Rec[] = [];
    for (const res of answers) {
      expect([200, 202]).toContain(res.statusCode);
      if (res.statusCode === 200) jobs.push(res.json().data);
      else {
        const id = res.json().data.jobId as string;
        let job: Rec = {};
        await waitFor(async () => (job = await status(id)).status === 'COMPLETED', 180_000, 200);
        jobs.push(job);
      }
    }
    const seconds = (performance.now() - started) / 1000;
    running = false;
    await reader;
    loop.disable();

    for (const job of jobs) {
      const file = await t.app.inject({
        method: 'GET',
        url: job.downloadUrl,
        headers: authHeaders(TENANT.acme, token.acme),
      });
      expect(file.rawPayload.subarray(0, 5).toString()).toBe('%PDF-');
      expect((file.rawPayload.toString('latin1').match(/\/Type \/Page\b/g) ?? []).length).toBeGreaterThan(200);
    }
    const sorted = [...latencies].sort((a, b) => a - b);
    const p = (q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
    report(
      `export-load: ${EXPORTS} PDF exports of ${ROWS} rows in ${seconds.toFixed(1)} s; other tenant's reads: ` +
        `n=${sorted.length} p50=${p(0.5).toFixed(1)} ms p99=${p(0.99).toFixed(1)} ms max=${sorted[sorted.length - 1].toFixed(1)} ms; ` +
        `event loop delay p99=${(loop.percentile(99) / 1e6).toFixed(1)} ms max=${(loop.max / 1e6).toFixed(1)} ms`,
    );
    expect(sorted.length).toBeGreaterThan(50);
    expect(p(0.99)).toBeLessThan(100);
  });

  it('should stop an export cancelled while it runs, keep it CANCELLED, and run the next one', async () => {
    const answer = exportPdf();
    let jobId = '';
    await waitFor(
      async () => {
        const rows = await ds.query<Rec[]>(
          `SELECT job_public_id AS id, job_processed AS processed FROM app_jobs WHERE job_status = 'RUNNING' AND job_tenant_id = 1`,
        );
        if (rows.length === 0 || Number(rows[0].processed) === 0) return false;
        jobId = String(rows[0].id);
        return true;
      },
      60_000,
      10,
    );
    const cancelled = await t.app.inject({
      method: 'POST',
      url: `/api/v1/exports/${jobId}/cancel`,
      headers: authHeaders(TENANT.acme, token.acme),
    });
    expect(cancelled.json().data.status).toBe('CANCELLED');
    const res = await answer;
    expect([res.statusCode, res.json().error?.code]).toEqual([409, 'CONFLICT']);
    // Its worker notices at its next progress report, stops and commits nothing.
    await new Promise((r) => setTimeout(r, 1500));
    const job = await status(jobId);
    expect(job).toMatchObject({ status: 'CANCELLED' });
    expect(job.downloadUrl).toBeUndefined();
    expect(job.processed).toBeLessThan(ROWS);
    const next = await exportPdf();
    expect(next.statusCode).toBe(200);
  });
});
