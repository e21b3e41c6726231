#!/usr/bin/env node
/**
 * `npm run bench:exports` (issue 21 #1): what 10,000-row PDF exports do to everyone else, on the
 * built service (the embedded default: SQLite + in-process cache; BENCH_DB / BENCH_CACHE as for
 * `npm run bench`). Loopback only; bounded in count and time.
 *
 * 1. For 1, 5 and 10 exports sent at once (BENCH_PARALLEL=1,5,10): the service's event-loop delay
 *    (perf_hooks monitorEventLoopDelay inside the service: p99 and max), the latency of /healthz
 *    polled every 20 ms (max), and p50 / p99 / max of another tenant's reads (the globex admin
 *    reading a page of customers, one request after another) and how many of them failed. The
 *    export limits are raised and load shedding is off (OVERLOAD_MAX_EVENT_LOOP_DELAY_MS=0), so
 *    that every export runs and the stall shows as latency, not as 503s; an export answered 202 is
 *    polled until it is done.
 * 2. A flood of 60 exports, 20 at a time (as the attack run sent them): the process's peak RSS
 *    (VmHWM: render threads included) and the answers' statuses — once with the default
 *    configuration (export limits: 429; load shedding: 503) and once with the limits raised and
 *    load shedding off, so that every export runs.
 *
 * Without taskset pinning: the service's render threads need a core of their own beside its main
 * thread, as in production; the load this script adds is light. The figures are printed as a
 * markdown table. To measure an older commit, copy this script and scripts/bench/ into a build of
 * that commit and run it there.
 */
'use strict';
const { randomBytes } = require('node:crypto');
const { performance } = require('node:perf_hooks');
const { dist, startService, signIn, stopService, json } = require('./bench/harness');

const PARALLEL = (process.env.BENCH_PARALLEL ?? '1,5,10').split(',').map(Number);
const FLOOD = Number(process.env.BENCH_FLOOD ?? 60);
const FLOOD_AT_ONCE = Number(process.env.BENCH_FLOOD_AT_ONCE ?? 20);
const RAISED = {
  EXPORT_MAX_PER_USER: '1000',
  EXPORT_MAX_PER_TENANT: '1000',
  EXPORT_MAX_PER_INSTANCE: '1000',
};
const NO_SHEDDING = { OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: '0', OVERLOAD_MAX_EVENT_LOOP_UTILIZATION: '0' };
const out = (s) => process.stdout.write(s);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function percentile(values, q) {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
}

/** Runs `fn` again and again until `stop()` says so; the latency of each run, in ms. */
async function sampler(fn, pauseMs, isDone) {
  const samples = [];
  while (!isDone()) {
    const t0 = performance.now();
    await fn();
    samples.push(performance.now() - t0);
    await sleep(pauseMs);
  }
  return samples;
}

async function withService(env, work) {
  const keyHex = randomBytes(32).toString('hex');
  const secret = randomBytes(32).toString('hex');
  const { service, dir } = startService({
    cpus: null,
    keyHex,
    secret,
    logLevel: 'warn',
    env: { BENCH_SERVICE_ENV: JSON.stringify(env) },
  });
  try {
    const ready = await service.ready;
    const ctx = await signIn(ready, keyHex, service);
    const { encryptTenantHeader } = dist('tenant/tenant-header.crypto.js');
    const globexHeader = encryptTenantHeader(2, keyHex);
    const globex = await json(
      ctx.base,
      {
        method: 'POST',
        path: '/api/v1/auth/signin',
        headers: { 'content-type': 'application/json', 'x-tenant-id': globexHeader },
        body: JSON.stringify({
          email_id: 'admin@globex.test',
          password: dist('database/seed/demo-data.js').DEV_DEMO_PASSWORD,
        }),
      },
      [200],
    );
    ctx.globexAuth = { 'x-tenant-id': globexHeader, authorization: `Bearer ${globex.data.token}` };
    await service.call('exportRows', { total: 10_100 });
    return await work(ctx);
  } finally {
    await stopService(service, dir, { close: true });
  }
}

/** One PDF export to its end: 'ok' when the file is there (200, or 202 then polled), else the status. */
async function exportPdf(ctx) {
  const res = await fetch(`${ctx.base}/api/v1/dataviews/customers_grid/export`, {
    method: 'POST',
    headers: ctx.jsonAuth,
    body: JSON.stringify({ format: 'pdf' }),
  });
  const body = await res.json().catch(() => ({}));
  if (res.status === 200) return '200';
  if (res.status !== 202) return String(res.status);
  for (;;) {
    await sleep(100);
    const s = await fetch(`${ctx.base}${body.data.statusUrl}`, { headers: ctx.auth });
    const job = (await s.json()).data;
    if (job.status === 'COMPLETED') return '202→COMPLETED';
    if (job.status === 'FAILED' || job.status === 'CANCELLED') return `202→${job.status}`;
  }
}

async function parallelRound(ctx, n) {
  // Warm-up: the first export loads the renderers (and, after issue 21, starts the render thread).
  await exportPdf(ctx);
  await sleep(2000);
  let done = false;
  let failed = 0;
  const reads = sampler(
    async () => {
      const r = await fetch(`${ctx.base}/api/v1/customers?limit=20&sortBy=name`, { headers: ctx.globexAuth });
      await r.arrayBuffer();
      if (r.status !== 200) failed++;
    },
    10,
    () => done,
  );
  const probes = sampler(
    async () => {
      const r = await fetch(`${ctx.base}/healthz`);
      await r.arrayBuffer();
    },
    20,
    () => done,
  );
  await ctx.service.call('loopStart');
  const t0 = performance.now();
  const answers = await Promise.all(Array.from({ length: n }, () => exportPdf(ctx)));
  const seconds = (performance.now() - t0) / 1000;
  const loop = await ctx.service.call('loopStop');
  done = true;
  const [readMs, probeMs] = await Promise.all([reads, probes]);
  return {
    parallel: n,
    seconds: Math.round(seconds * 10) / 10,
    answers: count(answers),
    loopP99: loop.p99,
    loopMax: loop.max,
    healthzMax: Math.round(Math.max(...probeMs)),
    readP50: Math.round(percentile(readMs, 0.5) * 10) / 10,
    readP99: Math.round(percentile(readMs, 0.99) * 10) / 10,
    readMax: Math.round(Math.max(...readMs)),
    reads: readMs.length,
    readsFailed: failed,
  };
}

function count(answers) {
  const c = {};
  for (const a of answers) c[a] = (c[a] ?? 0) + 1;
  return Object.entries(c)
    .map(([k, v]) => `${v}×${k}`)
    .join(' ');
}

async function flood(ctx) {
  const { rss: before } = await ctx.service.call('rssStart');
  const answers = [];
  const t0 = performance.now();
  for (let i = 0; i < FLOOD; i += FLOOD_AT_ONCE)
    answers.push(...(await Promise.all(Array.from({ length: Math.min(FLOOD_AT_ONCE, FLOOD - i) }, () => exportPdf(ctx)))));
  const seconds = (performance.now() - t0) / 1000;
  const { rss: after, peak } = await ctx.service.call('rssStop');
  const mb = (b) => Math.round(b / 1048576);
  return { before: mb(before), peak: mb(peak), after: mb(after), seconds: Math.round(seconds), answers: count(answers) };
}

(async () => {
  const rounds = await withService({ ...RAISED, ...NO_SHEDDING }, async (ctx) => {
    const results = [];
    for (const n of PARALLEL) {
      const r = await parallelRound(ctx, n);
      results.push(r);
      out(`${JSON.stringify(r)}\n`);
    }
    return results;
  });
  const floods = [];
  for (const [label, env] of [
    ['default configuration', {}],
    ['limits raised, no load shedding', { ...RAISED, ...NO_SHEDDING }],
  ]) {
    const f = await withService(env, flood);
    floods.push({ label, ...f });
    out(`${JSON.stringify({ flood: label, ...f })}\n`);
  }
  out('\n| parallel PDF exports (10,000 rows) | time | event-loop delay p99 / max | /healthz max | other tenant reads p50 / p99 / max |\n');
  out('|---|---|---|---|---|\n');
  for (const r of rounds)
    out(
      `| ${r.parallel} | ${r.seconds} s | ${r.loopP99} / ${r.loopMax} ms | ${r.healthzMax} ms | ${r.readP50} / ${r.readP99} / ${r.readMax} ms (n=${r.reads}, ${r.readsFailed} failed) |\n`,
    );
  out(`\n| flood: ${FLOOD} PDF exports, ${FLOOD_AT_ONCE} at a time | answers | RSS before → peak → after | time |\n|---|---|---|---|\n`);
  for (const f of floods) out(`| ${f.label} | ${f.answers} | ${f.before} → ${f.peak} → ${f.after} MB | ${f.seconds} s |\n`);
})().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
