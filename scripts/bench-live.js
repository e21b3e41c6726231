#!/usr/bin/env node
/**
 * `npm run bench:live` (D55): BENCH_LIVE_STREAMS (1,000) live change streams open on one instance
 * of the built service (the embedded default: SQLite + in-process cache; DB_TYPE or BENCH_DB =
 * postgres|mariadb, BENCH_CACHE=redis to choose), each a `fetch` stream of
 * `GET /api/v1/customers/changes`, while one writer creates a customer every BENCH_LIVE_INTERVAL_MS
 * (10) for BENCH_LIVE_SECONDS (20). For every event at every stream: the time from the write's
 * `lastModified` (stamped in its transaction, the commit's moment to the millisecond) to its
 * arrival at the client, p50/p99/max; the service process's RSS (current and peak) and CPU over the
 * write phase. Loopback only, one client process: on a small machine the client's own parsing of
 * every event at every stream is part of what is measured.
 */
'use strict';
const { randomBytes } = require('node:crypto');
const { readFileSync } = require('node:fs');
const { Worker } = require('node:worker_threads');
const { envNumber, startService, signIn, stopService } = require('./bench/harness');

const STREAMS = envNumber('BENCH_LIVE_STREAMS', 1000);
const INTERVAL_MS = envNumber('BENCH_LIVE_INTERVAL_MS', 10);
const SECONDS = envNumber('BENCH_LIVE_SECONDS', 20);
if (process.env.DB_TYPE && !process.env.BENCH_DB) process.env.BENCH_DB = process.env.DB_TYPE;
const out = (s) => process.stdout.write(s);
const pct = (sorted, p) =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] : NaN;

/** A write (a created customer) every intervalMs for seconds; posts {n, rtts} back when all are answered. */
const WRITER = `
const { parentPort, workerData: w } = require('node:worker_threads');
const rtts = [];
const writes = [];
let n = 0;
let skipped = 0;
let inFlight = 0;
const t0 = Date.now();
const timer = setInterval(() => {
  if (Date.now() - t0 >= w.seconds * 1000) {
    clearInterval(timer);
    Promise.all(writes).then(() => parentPort.postMessage({ n, rtts, skipped }));
    return;
  }
  // A service that cannot keep up is not sent more than 16 writes at once: the tick is skipped.
  if (inFlight >= 16) return void skipped++;
  inFlight++;
  const i = n++;
  const sent = Date.now();
  writes.push(
    fetch(w.base + '/api/v1/customers', {
      method: 'POST',
      headers: w.headers,
      body: JSON.stringify({ name: 'Live bench ' + i, email: 'live-bench-' + w.stamp + '-' + i + '@acme.example' }),
    }).catch((err) => { throw new Error('write ' + i + ': ' + err.message + ' (' + (err.cause && (err.cause.code || err.cause.message)) + ')'); }).then(async (res) => {
      await res.text();
      if (res.status !== 201) throw new Error('write: ' + res.status);
      rtts.push(Date.now() - sent);
    }).finally(() => inFlight--),
  );
}, w.intervalMs);
`;

/** CPU seconds (user + system) and RSS/peak RSS (MB) of a process, from /proc (Linux). */
function usage(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? NaN);
  return { cpuS: ticks / 100, rssMb: kb('VmRSS') / 1024, peakMb: kb('VmHWM') / 1024 };
}

/** One stream: counts events and records each one's latency (arrival − lastModified). */
async function openStream(base, headers, latencies, signal, state) {
  const res = await fetch(`${base}/api/v1/customers/changes`, { headers, signal });
  if (res.status !== 200) throw new Error(`stream: ${res.status} ${await res.text()}`);
  state.open += 1;
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  (async () => {
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        const now = Date.now();
        buffer += value;
        let cut;
        while ((cut = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          const m = /"lastModified":"([^"]+)"/.exec(block);
          if (m) {
            latencies.push(now - Date.parse(m[1]));
            state.events += 1;
          }
        }
      }
    } catch {
      // aborted at the end
    }
  })();
}

(async () => {
  const keyHex = randomBytes(32).toString('hex');
  const secret = randomBytes(32).toString('hex');
  const { service, dir } = startService({
    cpus: null,
    keyHex,
    secret,
    logLevel: 'warn',
    env: {
      BENCH_SERVICE_ENV: JSON.stringify({
        // One user holds every stream: the cap at its largest (1,000).
        SSE_MAX_STREAMS_PER_USER: String(Math.min(1000, Math.max(STREAMS, 10))),
        USER_RATE_LIMIT_POINTS: '100000000',
        OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: '0',
        OVERLOAD_MAX_EVENT_LOOP_UTILIZATION: '0',
      }),
    },
  });
  const abort = new AbortController();
  try {
    const ready = await service.ready;
    const ctx = await signIn(ready, keyHex, service);
    const pid = service.child.pid;
    const latencies = [];
    const state = { open: 0, events: 0 };
    const idle = usage(pid);
    const openStarted = Date.now();
    for (let i = 0; i < STREAMS; i += 100)
      await Promise.all(
        Array.from({ length: Math.min(100, STREAMS - i) }, () =>
          openStream(ctx.base, ctx.auth, latencies, abort.signal, state),
        ),
      );
    const opened = usage(pid);
    out(
      `${JSON.stringify({ streams: state.open, openMs: Date.now() - openStarted, rssMb: opened.rssMb.toFixed(1), rssBeforeMb: idle.rssMb.toFixed(1) })}\n`,
    );
    const before = usage(pid);
    const t0 = Date.now();
    // The writer runs on a thread of its own: the main thread is busy reading every stream, and its
    // timers would slip (a write every 10 ms became one every 65 ms when both shared one thread).
    const { n, rtts, skipped } = await new Promise((resolve, reject) => {
      const writer = new Worker(WRITER, {
        eval: true,
        workerData: {
          base: ctx.base,
          headers: ctx.jsonAuth,
          intervalMs: INTERVAL_MS,
          seconds: SECONDS,
          stamp: t0,
        },
      });
      writer.once('message', resolve);
      writer.once('error', reject);
    });
    const expected = n * STREAMS;
    const deadline = Date.now() + 30_000;
    while (state.events < expected && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    const wall = (Date.now() - t0) / 1000;
    const after = usage(pid);
    latencies.sort((a, b) => a - b);
    rtts.sort((a, b) => a - b);
    const figures = {
      db: `${process.env.BENCH_DB ?? 'sqlite'} + ${process.env.BENCH_CACHE ?? 'memory'}`,
      streams: state.open,
      writes: n,
      writesPerS: +(n / SECONDS).toFixed(1),
      ticksSkipped: skipped,
      eventsExpected: expected,
      eventsReceived: state.events,
      p50Ms: pct(latencies, 50),
      p99Ms: pct(latencies, 99),
      maxMs: latencies[latencies.length - 1],
      writeRttP50Ms: pct(rtts, 50),
      writeRttP99Ms: pct(rtts, 99),
      serviceCpuPct: +((100 * (after.cpuS - before.cpuS)) / wall).toFixed(0),
      serviceRssMb: +after.rssMb.toFixed(0),
      servicePeakRssMb: +after.peakMb.toFixed(0),
      serviceRssIdleMb: +idle.rssMb.toFixed(0),
    };
    out(`${JSON.stringify(figures)}\n\n`);
    out(
      `| ${figures.streams} streams, a write every ${INTERVAL_MS} ms for ${SECONDS} s, ${figures.db} | commit → event at client p50 | p99 | max | events | service CPU | service RSS (peak) |\n`,
    );
    out('|---|---|---|---|---|---|---|\n');
    out(
      `| ${figures.writes} writes | ${figures.p50Ms} ms | ${figures.p99Ms} ms | ${figures.maxMs} ms | ${figures.eventsReceived} of ${expected} | ${figures.serviceCpuPct} % of a core | ${figures.serviceRssMb} MB (${figures.servicePeakRssMb} MB; ${figures.serviceRssIdleMb} MB before the streams) |\n`,
    );
    abort.abort();
    await service.call('close').catch(() => {});
  } finally {
    abort.abort();
    await stopService(service, dir, { close: true });
  }
})().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
