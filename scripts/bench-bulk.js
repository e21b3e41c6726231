#!/usr/bin/env node
/**
 * `npm run bench:bulk` (D51): 1,000 updates in one bulk request against the same 1,000 updates as
 * single PUTs, on the built service (the embedded default: SQLite + in-process cache; BENCH_DB /
 * BENCH_CACHE as for `npm run bench`). Loopback only; no CPU pinning (one client, one service).
 *
 * 1,000 customers are created (bulk create) once. Then, BENCH_ROUNDS (3) times: the 1,000 rows are
 * saved with single PUTs one after another (each with the token the previous save returned), then
 * with single PUTs BENCH_PUT_CONCURRENCY (10) at a time, then in one bulk request (each row with its
 * own token). Wall time from the first request sent to the last answer; the medians are printed as a
 * markdown table, with the ratio single ÷ bulk.
 */
'use strict';
const { randomBytes } = require('node:crypto');
const { performance } = require('node:perf_hooks');
const { envNumber, startService, signIn, stopService, json, createCustomers } = require('./bench/harness');

const ROWS = envNumber('BENCH_BULK_ROWS', 1000);
const ROUNDS = envNumber('BENCH_ROUNDS', 3);
const CONCURRENCY = envNumber('BENCH_PUT_CONCURRENCY', 10);
/** BENCH_BULK_ONLY=1: the bulk requests alone (A/B of two builds of the bulk path). */
const BULK_ONLY = process.env.BENCH_BULK_ONLY === '1';
const out = (s) => process.stdout.write(s);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function put(ctx, row, value) {
  const r = await json(
    ctx.base,
    {
      method: 'PUT',
      path: `/api/v1/customers/${row.id}`,
      headers: ctx.jsonAuth,
      body: JSON.stringify({ lastModified: row.lastModified, credit_limit: value }),
    },
    [200],
  );
  row.lastModified = r.data.lastModified;
}

async function singles(ctx, rows, value, concurrency) {
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < rows.length) await put(ctx, rows[next++], value);
    }),
  );
  return performance.now() - t0;
}

async function bulk(ctx, rows, value) {
  const t0 = performance.now();
  const r = await json(
    ctx.base,
    {
      method: 'POST',
      path: '/api/v1/customers/bulk',
      headers: ctx.jsonAuth,
      body: JSON.stringify({
        operation: 'update',
        records: rows.map((row) => ({ id: row.id, lastModified: row.lastModified, credit_limit: value })),
      }),
    },
    [200],
  );
  const ms = performance.now() - t0;
  if (r.data.failed !== 0) throw new Error(`bulk update: ${r.data.failed} rows failed`);
  for (const [i, res] of r.data.results.entries()) rows[i].lastModified = res.lastModified;
  return ms;
}

(async () => {
  const keyHex = randomBytes(32).toString('hex');
  const secret = randomBytes(32).toString('hex');
  const { service, dir } = startService({
    cpus: null,
    keyHex,
    secret,
    logLevel: 'warn',
    // BENCH_PROFILE=<dir>: the service runs with --cpu-prof (scripts/bench/profile-top.js reads it).
    nodeArgs: process.env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : [],
    env: { BENCH_SERVICE_ENV: JSON.stringify({ BULK_MAX_ROWS: String(Math.max(ROWS, 1000)) }) },
  });
  try {
    const ready = await service.ready;
    const ctx = await signIn(ready, keyHex, service);
    const rows = await createCustomers(ctx, ROWS, 'Bulk bench');
    const figures = { sequential: [], parallel: [], bulk: [] };
    for (let round = 0; round < ROUNDS; round++) {
      figures.sequential.push(BULK_ONLY ? NaN : await singles(ctx, rows, 2000 + round, 1));
      figures.parallel.push(BULK_ONLY ? NaN : await singles(ctx, rows, 3000 + round, CONCURRENCY));
      figures.bulk.push(await bulk(ctx, rows, 4000 + round));
      out(`${JSON.stringify({ round, sequentialMs: figures.sequential[round], parallelMs: figures.parallel[round], bulkMs: figures.bulk[round] })}\n`);
    }
    const s = median(figures.sequential);
    const p = median(figures.parallel);
    const b = median(figures.bulk);
    const db = `${process.env.BENCH_DB ?? 'sqlite'} + ${process.env.BENCH_CACHE ?? 'memory'}`;
    const sec = (ms) => `${(ms / 1000).toFixed(2)} s`;
    out(`\n| ${ROWS} updates, ${db} | single PUTs one by one | single PUTs ${CONCURRENCY} at a time | one bulk request | bulk vs one by one | bulk vs ${CONCURRENCY} at a time |\n`);
    out('|---|---|---|---|---|---|\n');
    out(`| median of ${ROUNDS} | ${sec(s)} | ${sec(p)} | ${sec(b)} | ${(s / b).toFixed(1)}× | ${(p / b).toFixed(1)}× |\n`);
    await service.call('close').catch(() => {});
  } finally {
    await stopService(service, dir, { close: true });
  }
})().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
