#!/usr/bin/env node
/**
 * `npm run bench:webhooks` (D54, issue 29): commit → receiver latency of webhook deliveries under
 * a steady write load, on the built service (the embedded default: SQLite + in-process cache;
 * BENCH_DB / BENCH_CACHE as for `npm run bench`). Loopback only; no CPU pinning.
 *
 * A real receiver (node:http in this process, answering 204) is registered as a webhook of every
 * customers event. Then BENCH_WEBHOOK_RATE (500) record updates per second for
 * BENCH_DURATION_S (10) s, as bulk updates of BENCH_WEBHOOK_BATCH (25) rows every
 * batch/rate seconds. Each delivery's latency is its arrival minus the event's `timestamp` (the
 * commit's time, same clock); the script waits until every event has arrived (at most 60 s after
 * the load) and prints p50 / p99 / max, the delivered count and the service's RSS.
 */
'use strict';
const { createServer } = require('node:http');
const { randomBytes } = require('node:crypto');
const { performance } = require('node:perf_hooks');
const { envNumber, startService, signIn, stopService, json, createCustomers } = require('./bench/harness');

const RATE = envNumber('BENCH_WEBHOOK_RATE', 500);
const BATCH = envNumber('BENCH_WEBHOOK_BATCH', 25);
const DURATION_S = envNumber('BENCH_DURATION_S', 10);
const ROWS = 500;
const out = (s) => process.stdout.write(s);
const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function receiver() {
  const latencies = [];
  const ids = new Set();
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const arrived = Date.now();
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        const id = req.headers['webhook-id'];
        if (!ids.has(id)) {
          ids.add(id);
          latencies.push(arrived - Date.parse(body.timestamp));
        }
      } catch {
        // counted as missing below
      }
      res.writeHead(204).end();
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ server, port: server.address().port, latencies })),
  );
}

(async () => {
  const keyHex = randomBytes(32).toString('hex');
  const secret = randomBytes(32).toString('hex');
  const hook = await receiver();
  const { service, dir } = startService({
    cpus: null,
    keyHex,
    secret,
    logLevel: 'warn',
    // BENCH_PROFILE=<dir>: the service runs with --cpu-prof (scripts/bench/profile-top.js reads it).
    nodeArgs: process.env.BENCH_PROFILE ? ['--cpu-prof', '--cpu-prof-dir', process.env.BENCH_PROFILE] : [],
    env: {
      BENCH_SERVICE_ENV: JSON.stringify({ WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', BULK_MAX_ROWS: String(ROWS) }),
    },
  });
  try {
    const ready = await service.ready;
    const ctx = await signIn(ready, keyHex, service);
    const rows = await createCustomers(ctx, ROWS, 'Webhook bench');
    await json(
      ctx.base,
      {
        method: 'POST',
        path: '/api/v1/webhooks',
        headers: ctx.jsonAuth,
        body: JSON.stringify({ code: 'bench', url: `http://127.0.0.1:${hook.port}/hook`, events: ['customers.*'] }),
      },
      [201],
    );

    const intervalMs = (BATCH / RATE) * 1000;
    const batches = Math.round((DURATION_S * 1000) / intervalMs);
    let next = 0;
    let value = 0;
    let sent = 0;
    const inFlight = [];
    const t0 = performance.now();
    for (let b = 0; b < batches; b++) {
      const due = t0 + b * intervalMs;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      const slice = Array.from({ length: BATCH }, () => rows[next++ % rows.length]);
      value++;
      // Rows of one batch are distinct (BATCH ≤ ROWS); a row's next save waits for its last.
      const request = json(
        ctx.base,
        {
          method: 'POST',
          path: '/api/v1/customers/bulk',
          headers: ctx.jsonAuth,
          body: JSON.stringify({
            operation: 'update',
            records: slice.map((row) => ({ id: row.id, lastModified: row.lastModified, credit_limit: 1000 + value })),
          }),
        },
        [200],
      ).then((r) => {
        for (const [i, res] of r.data.results.entries()) if (res.lastModified) slice[i].lastModified = res.lastModified;
        sent += r.data.succeeded ?? slice.length - (r.data.failed ?? 0);
      });
      inFlight.push(request);
      // Keep every row's token current: at most rows/batch batches in flight.
      if (inFlight.length >= ROWS / BATCH) await inFlight.shift();
    }
    await Promise.all(inFlight);
    const loadS = (performance.now() - t0) / 1000;
    const deadline = Date.now() + 60_000;
    while (hook.latencies.length < sent && Date.now() < deadline) await sleep(100);
    const sorted = [...hook.latencies].sort((a, b) => a - b);
    const rss = await service.call('rssStart').then(() => service.call('rssStop')).catch(() => undefined);
    const db = `${process.env.BENCH_DB ?? 'sqlite'} + ${process.env.BENCH_CACHE ?? 'memory'}`;
    out(`\n| webhooks, ${db} | writes/s | events | delivered | p50 | p99 | max |\n|---|---:|---:|---:|---:|---:|---:|\n`);
    out(
      `| commit → receiver | ${Math.round(sent / loadS)} | ${sent} | ${sorted.length} | ${pct(sorted, 50)} ms | ${pct(sorted, 99)} ms | ${sorted[sorted.length - 1]} ms |\n`,
    );
    if (rss) out(`service RSS ${Math.round(rss.rss / 1048576)} MB (peak ${Math.round(rss.peak / 1048576)} MB)\n`);
    await service.call('close').catch(() => {});
  } finally {
    hook.server.close();
    await stopService(service, dir, { close: true });
  }
})().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
