#!/usr/bin/env node
/**
 * `npm run bench:imports` (D53): imports of new customer rows into the built service, from the
 * upload (multipart) to COMPLETED: wall time, rows/s and the service process's peak RSS growth
 * during the import (VmHWM on Linux, reset before each run). One fresh service per database (the
 * embedded default SQLite, or BENCH_DB=postgres|mariadb as for `npm run bench`; `--db=postgres`
 * works too). Loopback only; no CPU pinning.
 *
 * BENCH_IMPORT_SIZES (10000,100000) rows, BENCH_IMPORT_FORMATS (csv,xlsx), BENCH_IMPORT_ON_ERROR
 * (skip). The files are written once per size (XLSX with exceljs' streaming writer), each row a new
 * customer (name, email, tier, credit_limit); the printout is a markdown table. BENCH_CPU_PROF=<dir>
 * writes a CPU profile of the service there (scripts/bench/profile-top.js reads it).
 */
'use strict';
const { randomBytes } = require('node:crypto');
const { createReadStream, mkdtempSync, rmSync, statSync, createWriteStream } = require('node:fs');
const { once } = require('node:events');
const os = require('node:os');
const { join } = require('node:path');
const { performance } = require('node:perf_hooks');
const { envNumber, startService, signIn, stopService, json } = require('./bench/harness');

for (const arg of process.argv.slice(2)) {
  const m = /^--db=(\w+)$/.exec(arg);
  if (m) process.env.BENCH_DB = m[1];
}
const SIZES = (process.env.BENCH_IMPORT_SIZES ?? '10000,100000').split(',').map(Number);
const FORMATS = (process.env.BENCH_IMPORT_FORMATS ?? 'csv,xlsx').split(',');
const ON_ERROR = process.env.BENCH_IMPORT_ON_ERROR ?? 'skip';
const POLL_MS = envNumber('BENCH_IMPORT_POLL_MS', 100);
const XLSX = 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet';
const out = (s) => process.stdout.write(s);

function row(stamp, i) {
  return [`Import bench ${stamp} ${i}`, `imp-bench-${stamp}-${i}@acme.example`, ['bronze', 'silver', 'gold'][i % 3], i % 100000];
}

async function writeCsv(path, stamp, n) {
  const file = createWriteStream(path);
  file.write('name,email,tier,credit_limit\n');
  for (let i = 0; i < n; i++) {
    if (!file.write(`${row(stamp, i).join(',')}\n`)) await once(file, 'drain');
  }
  file.end();
  await once(file, 'close');
}

async function writeXlsx(path, stamp, n) {
  const ExcelJS = require('exceljs');
  const workbook = new ExcelJS.stream.xlsx.WorkbookWriter({ filename: path, useSharedStrings: false });
  const sheet = workbook.addWorksheet('Customers');
  sheet.addRow(['name', 'email', 'tier', 'credit_limit']).commit();
  for (let i = 0; i < n; i++) sheet.addRow(row(stamp, i)).commit();
  sheet.commit();
  await workbook.commit();
}

async function upload(ctx, path, format) {
  const blob = await new Response(createReadStream(path)).blob();
  const form = new FormData();
  form.append('file', new Blob([blob], { type: format === 'xlsx' ? XLSX : 'text/csv' }), `bench.${format}`);
  const res = await fetch(`${ctx.base}/api/v1/customers/imports?onError=${ON_ERROR}`, {
    method: 'POST',
    headers: ctx.auth,
    body: form,
  });
  const body = await res.json();
  if (res.status !== 202) throw new Error(`upload: ${res.status} ${JSON.stringify(body)}`);
  return body.data.importId;
}

async function finished(ctx, id) {
  for (;;) {
    const r = await json(ctx.base, { method: 'GET', path: `/api/v1/imports/${id}`, headers: ctx.auth }, [200]);
    if (!['PENDING', 'RUNNING'].includes(r.data.status)) return r.data;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

(async () => {
  const keyHex = randomBytes(32).toString('hex');
  const secret = randomBytes(32).toString('hex');
  const files = mkdtempSync(join(os.tmpdir(), 'mtb-bench-imports-'));
  const maxRows = Math.max(...SIZES);
  const { service, dir } = startService({
    cpus: null,
    keyHex,
    secret,
    logLevel: 'warn',
    // BENCH_CPU_PROF=<dir>: a V8 CPU profile of the service (node --cpu-prof), written when it exits.
    nodeArgs: process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [],
    env: {
      BENCH_SERVICE_ENV: JSON.stringify({
        IMPORT_MAX_ROWS: String(maxRows),
        IMPORT_MAX_BYTES: String(200 * 1024 * 1024),
        EXPORT_TTL_S: '3600',
        // Not what is measured: a busy import would shed the status polls (503 OVERLOADED).
        OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: '0',
        OVERLOAD_MAX_EVENT_LOOP_UTILIZATION: '0',
      }),
    },
  });
  const results = [];
  try {
    const ready = await service.ready;
    const ctx = await signIn(ready, keyHex, service);
    for (const size of SIZES) {
      for (const format of FORMATS) {
        const stamp = `${Date.now().toString(36)}${format}`;
        const path = join(files, `customers-${size}.${format}`);
        await (format === 'xlsx' ? writeXlsx : writeCsv)(path, stamp, size);
        const bytes = statSync(path).size;
        const start = (await service.call('rssStart')).rss;
        const t0 = performance.now();
        const id = await upload(ctx, path, format);
        const job = await finished(ctx, id);
        const ms = performance.now() - t0;
        const rss = await service.call('rssStop');
        if (job.status !== 'COMPLETED' || job.created !== size)
          throw new Error(`import ${id}: ${JSON.stringify({ ...job, errors: job.errors?.slice(0, 3) })}`);
        const figure = { size, format, bytes, ms, rowsPerS: size / (ms / 1000), rssGrowth: rss.peak - start, peak: rss.peak, source: rss.source };
        results.push(figure);
        out(`${JSON.stringify(figure)}\n`);
      }
    }
    const db = process.env.BENCH_DB ?? 'sqlite';
    out(`\n| ${db}, onError=${ON_ERROR} | file | time | rows/s | peak RSS growth |\n|---|---|---|---|---|\n`);
    for (const r of results)
      out(
        `| ${r.size.toLocaleString('en')} rows ${r.format.toUpperCase()} | ${(r.bytes / 1048576).toFixed(1)} MB | ${(r.ms / 1000).toFixed(1)} s | ${Math.round(r.rowsPerS).toLocaleString('en')} | +${Math.round(r.rssGrowth / 1048576)} MB |\n`,
      );
    await service.call('close').catch(() => {});
  } finally {
    await stopService(service, dir, { close: true });
    rmSync(files, { recursive: true, force: true });
  }
})().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
