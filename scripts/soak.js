#!/usr/bin/env node
/**
 * Soak (issue 14 #3). Run: npm run soak (builds first; not in CI). Loopback only; bounded in time.
 *
 * Starts the built service as `npm run bench` does (scripts/bench/service.js: the embedded default,
 * or BENCH_DB=postgres|mariadb and/or BENCH_CACHE=redis), signs in as the demo tenant's
 * administrator, and puts a mixed read load on it: per connection, in turn, the cached list of 25
 * customers, one customer by id (over 100 ids, uncached), tenant-config and a dataview data page
 * of 25.
 *
 * 1. The maximum: SOAK_MAX_S (10) of that mix at full speed after 3 s of warm-up
 *    (scripts/bench/load.js), SOAK_CONNECTIONS (BENCH_CONNECTIONS, 50) connections.
 * 2. The soak: SOAK_DURATION_S (300) at SOAK_RATE_PERCENT (70) % of that maximum (autocannon's
 *    overallRate, scripts/bench/soak-load.js), printing every SOAK_INTERVAL_S (15) the elapsed time,
 *    the req/s achieved, p50 and p99 of the answers of that interval, errors and non-2xx, and the
 *    service's RSS and heap used (service.js's `memory` command).
 * 3. The verdict: the first SOAK_WARMUP_S (default 60 s or 20 % of the run, whichever is shorter)
 *    are warm-up; the RSS growth from the end of the warm-up to the end of the run is printed, and
 *    over SOAK_MAX_GROWTH_PERCENT (10) % it is a leak: the script exits 1 (after writing its results).
 *
 *    Under load RSS is a sawtooth (V8 lets the old generation grow to its limit before a full
 *    collection: ~170 → ~290 MB over a minute here, then back), so two raw figures compare two
 *    random points of it. By default (SOAK_SETTLE_GC=1) the service runs with --expose-gc and the
 *    two figures of the verdict are read after a full collection (two collections in the whole
 *    run, at the end of the warm-up and at the end; the raw growth is printed too): what is left
 *    grows only with what the service really keeps. SOAK_SETTLE_GC=0: the raw figures decide.
 *
 * SOAK_GC=1 also runs a full collection after each interval's figures are read: the heap used
 * after it (the live heap) is printed per interval (those collections flatten the RSS curve too).
 *
 * Pinned as the bench: the service on BENCH_SERVER_CPUS (0), the load on BENCH_LOAD_CPUS (1), where
 * taskset and two cores exist. Logging on at BENCH_LOG_LEVEL (info), to /dev/null.
 *
 * Writes bench/results/soak-latest.{json,svg} (the SVG: p99 and RSS over time) and a dated copy
 * <date>-soak-<db>-<cache>.{json,svg}, and prints a markdown summary for docs/performance.md.
 */
'use strict';
const { randomBytes } = require('node:crypto');
const { writeResults } = require('./bench/report');
const { join } = require('node:path');
const { envNumber, pinning, spawnNode, runLoad, json, startService, signIn, stopService, runInfo } = require('./bench/harness');

const DURATION_S = envNumber('SOAK_DURATION_S', 300);
const INTERVAL_S = Math.max(1, envNumber('SOAK_INTERVAL_S', 15));
const WARMUP_S = envNumber('SOAK_WARMUP_S', Math.min(60, 0.2 * DURATION_S));
const MAX_S = Math.max(1, envNumber('SOAK_MAX_S', 10));
const RATE_PERCENT = envNumber('SOAK_RATE_PERCENT', 70);
const MAX_GROWTH_PERCENT = envNumber('SOAK_MAX_GROWTH_PERCENT', 10);
const CONNECTIONS = Math.max(1, envNumber('SOAK_CONNECTIONS', envNumber('BENCH_CONNECTIONS', 50)));
const LOG_LEVEL = process.env.BENCH_LOG_LEVEL ?? 'info';
const GC = process.env.SOAK_GC === '1';
const SETTLE = process.env.SOAK_SETTLE_GC !== '0';
const out = (s) => process.stdout.write(s);
const mb = (n) => n / 1048576;
const fmtInt = (n) => Math.round(n).toLocaleString('en-US');
const fmtMs = (n) => (n == null ? '–' : n < 10 ? n.toFixed(2) : n.toFixed(1));

/** The soak's own load process: resolves with { intervals, done }; onInterval(line) per interval. */
function soakLoad(pin, spec, onInterval) {
  return new Promise((resolve, reject) => {
    const child = spawnNode(pin?.load, [join(__dirname, 'bench', 'soak-load.js'), JSON.stringify(spec)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let buffer = '';
    let done = null;
    const pending = [];
    child.stdout.on('data', (d) => {
      buffer += d;
      let nl;
      while ((nl = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        if (!line.trim()) continue;
        const msg = JSON.parse(line);
        if (msg.type === 'interval') pending.push(onInterval(msg));
        else if (msg.type === 'done') done = msg;
      }
    });
    child.on('error', reject);
    child.on('exit', async (code) => {
      if (code !== 0) return reject(new Error(`soak load runner exited with ${code}`));
      try {
        await Promise.all(pending);
        resolve(done);
      } catch (err) {
        reject(err);
      }
    });
  });
}

const esc = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** Two lines over elapsed time: p99 (ms, left axis) and the service's RSS (MB, right axis); warm-up shaded. */
function svg(results) {
  const pts = results.intervals;
  const W = 760;
  const H = 320;
  const L = 60;
  const R = 70;
  const T = 80;
  const B = 46;
  const pw = W - L - R;
  const ph = H - T - B;
  const xMax = Math.max(results.config.durationS, ...pts.map((p) => p.elapsedS), 1);
  const nice = (v) => {
    if (v <= 0) return 1;
    const e = 10 ** Math.floor(Math.log10(v));
    return [1, 2, 2.5, 5, 10].map((m) => m * e).find((m) => m >= v);
  };
  const p99Max = nice(Math.max(1, ...pts.map((p) => p.p99 ?? 0)) * 1.1);
  const rssVals = pts.map((p) => p.rssMB);
  const rssLo = Math.max(0, Math.floor((Math.min(...rssVals) * 0.9) / 10) * 10);
  const rssHi = rssLo + Math.max(20, Math.ceil((Math.max(...rssVals) * 1.05 - rssLo) / 20) * 20);
  const x = (s) => L + (s / xMax) * pw;
  const y1 = (v) => T + ph - (v / p99Max) * ph;
  const y2 = (v) => T + ph - ((v - rssLo) / Math.max(1, rssHi - rssLo)) * ph;
  const o = [];
  o.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="Helvetica, Arial, sans-serif" font-size="12">`,
  );
  o.push(`<rect width="100%" height="100%" fill="#ffffff"/>`);
  o.push(
    `<text x="12" y="20" font-size="15" font-weight="bold">Soak: p99 and service RSS over time at ${results.config.ratePercent}% of the maximum (${fmtInt(results.rate)} req/s)</text>`,
  );
  const m = results.machine;
  o.push(
    `<text x="12" y="38" fill="#555">${esc(
      `${results.date.slice(0, 16).replace('T', ' ')} UTC · ${results.config.db} + ${results.config.cache} cache · commit ${results.git.commit?.slice(0, 7) ?? '?'}${results.git.srcDirty ? '+' : ''} · ${m.cores} cores · Node ${m.node}`,
    )}</text>`,
  );
  o.push(
    `<text x="12" y="54" fill="${results.pass ? '#2e7d32' : '#d0392b'}">${esc(
      `RSS growth after warm-up (${results.verdictBasis}): ${results.rssGrowthPercent >= 0 ? '+' : ''}${results.rssGrowthPercent.toFixed(1)}% (limit ${results.config.maxGrowthPercent}%) · p99 over the soak ${fmtMs(results.soak.latency.p99)} ms`,
    )}</text>`,
  );
  o.push(`<rect x="${L}" y="${T}" width="${(x(results.config.warmupS) - L).toFixed(1)}" height="${ph}" fill="#f1f1f1"/>`);
  o.push(`<text x="${L + 4}" y="${T + 14}" fill="#888">warm-up</text>`);
  for (let i = 0; i <= 4; i++) {
    const yy = T + (ph * i) / 4;
    o.push(`<line x1="${L}" y1="${yy}" x2="${L + pw}" y2="${yy}" stroke="#e3e3e3"/>`);
    o.push(`<text x="${L - 6}" y="${yy + 4}" text-anchor="end" fill="#3b78c2">${fmtMs(p99Max * (1 - i / 4))}</text>`);
    o.push(`<text x="${L + pw + 6}" y="${yy + 4}" fill="#d0392b">${Math.round(rssHi - ((rssHi - rssLo) * i) / 4)}</text>`);
  }
  const step = nice(xMax / 8);
  for (let s = 0; s <= xMax + 1e-9; s += step)
    o.push(`<text x="${x(s).toFixed(1)}" y="${T + ph + 16}" text-anchor="middle" fill="#555">${s}</text>`);
  o.push(`<text x="${L + pw / 2}" y="${H - 10}" text-anchor="middle" fill="#555">elapsed s</text>`);
  o.push(`<text x="12" y="${T - 6}" fill="#3b78c2">p99 ms</text>`);
  o.push(`<text x="${W - 12}" y="${T - 6}" text-anchor="end" fill="#d0392b">RSS MB</text>`);
  const line = (f, color) =>
    `<polyline fill="none" stroke="${color}" stroke-width="2" points="${pts
      .map((p) => `${x(p.elapsedS).toFixed(1)},${f(p).toFixed(1)}`)
      .join(' ')}"/>`;
  o.push(line((p) => y1(p.p99 ?? 0), '#3b78c2'));
  o.push(line((p) => y2(p.rssMB), '#d0392b'));
  o.push('</svg>');
  return o.join('\n') + '\n';
}

function markdown(r) {
  const m = r.machine;
  const lines = [];
  lines.push(
    `${r.date.slice(0, 10)}, commit ${r.git.commit?.slice(0, 7) ?? '?'}${r.git.srcDirty ? ' (+ local changes)' : ''}, ` +
      `${r.config.db} + ${r.config.cache} cache, ${m.cpuModel}, ${m.cores} cores, Node ${m.node}; ` +
      `${r.pinning ? `service on CPU ${r.pinning.servers}, autocannon on CPU ${r.pinning.load}` : 'not pinned'}; ` +
      `mixed reads (cached list of 25, customer by id, tenant-config, dataview page of 25), ${r.config.connections} connections.`,
  );
  lines.push('');
  lines.push('| soak | figure |');
  lines.push('|---|---:|');
  lines.push(`| maximum of the mix (${r.config.maxS} s) | ${fmtInt(r.max.rps)} req/s, p50 ${fmtMs(r.max.latency.p50)} ms, p99 ${fmtMs(r.max.latency.p99)} ms |`);
  lines.push(
    `| soak rate (${r.config.ratePercent}% of the maximum), ${r.config.durationS} s | ${fmtInt(r.rate)} req/s asked, ${fmtInt(r.soak.rps)} achieved${r.keptUp ? '' : ' ⚠ did not keep up'} |`,
  );
  lines.push(`| latency over the soak (all answers) | p50 ${fmtMs(r.soak.latency.p50)} ms, p99 ${fmtMs(r.soak.latency.p99)} ms |`);
  const first = r.intervals.find((p) => p.elapsedS > r.config.warmupS) ?? r.intervals[0];
  const last = r.intervals[r.intervals.length - 1];
  lines.push(`| p99 of the first interval after warm-up → last interval | ${fmtMs(first?.p99)} → ${fmtMs(last?.p99)} ms |`);
  lines.push(`| errors / timeouts / non-2xx | ${r.soak.errors} / ${r.soak.timeouts} / ${r.soak.non2xx} |`);
  lines.push(`| RSS at start → end of warm-up (${Math.round(r.config.warmupS)} s) → end | ${r.memory.start.rssMB.toFixed(0)} → ${r.memory.warm.rssMB.toFixed(0)} → ${r.memory.end.rssMB.toFixed(0)} MB |`);
  lines.push(`| heap used at end of warm-up → end | ${r.memory.warm.heapUsedMB.toFixed(0)} → ${r.memory.end.heapUsedMB.toFixed(0)} MB |`);
  if (r.memory.warm.liveHeapMB != null && r.memory.end.liveHeapMB != null)
    lines.push(`| live heap (after a full GC) at end of warm-up → end | ${r.memory.warm.liveHeapMB.toFixed(1)} → ${r.memory.end.liveHeapMB.toFixed(1)} MB |`);
  if (r.memory.warm.settledRssMB != null && r.memory.end.settledRssMB != null)
    lines.push(`| RSS after a full GC at end of warm-up → end | ${r.memory.warm.settledRssMB.toFixed(0)} → ${r.memory.end.settledRssMB.toFixed(0)} MB |`);
  lines.push(
    `| RSS growth after warm-up, ${r.verdictBasis} (limit ${r.config.maxGrowthPercent}%) | ${r.rssGrowthPercent >= 0 ? '+' : ''}${r.rssGrowthPercent.toFixed(1)}% ${r.pass ? '✔' : '✘ leak'} |`,
  );
  lines.push('');
  const live = r.config.gc;
  lines.push(`| elapsed s | req/s | p50 ms | p99 ms | errors | non-2xx | RSS MB | heap used MB |${live ? ' live heap MB |' : ''}`);
  lines.push(`|---:|---:|---:|---:|---:|---:|---:|---:|${live ? '---:|' : ''}`);
  for (const p of r.intervals)
    lines.push(
      `| ${Math.round(p.elapsedS)} | ${fmtInt(p.rps)} | ${fmtMs(p.p50)} | ${fmtMs(p.p99)} | ${p.errors + p.timeouts} | ${p.non2xx} | ${p.rssMB.toFixed(0)} | ${p.heapUsedMB.toFixed(0)} |${
        live ? ` ${p.liveHeapMB?.toFixed(1) ?? '–'} |` : ''
      }`,
    );
  return lines.join('\n');
}

async function main() {
  const keyHex = randomBytes(32).toString('hex');
  const secret = randomBytes(48).toString('base64url');
  const pin = pinning();
  const results = {
    ...runInfo(pin),
    config: {
      db: (process.env.BENCH_DB ?? 'sqlite').toLowerCase(),
      cache: process.env.BENCH_CACHE === 'redis' ? 'redis' : 'in-process',
      connections: CONNECTIONS,
      durationS: DURATION_S,
      intervalS: INTERVAL_S,
      warmupS: WARMUP_S,
      maxS: MAX_S,
      ratePercent: RATE_PERCENT,
      maxGrowthPercent: MAX_GROWTH_PERCENT,
      logLevel: LOG_LEVEL,
      gc: GC,
      settleGc: SETTLE,
    },
    max: null,
    rate: null,
    soak: null,
    intervals: [],
    memory: {},
    rssGrowthPercent: null,
    rawRssGrowthPercent: null,
    verdictBasis: null,
    heapGrowthPercent: null,
    pass: null,
  };
  const { service, dir } = startService({
    cpus: pin?.servers,
    keyHex,
    secret,
    logLevel: LOG_LEVEL,
    nodeArgs: GC || SETTLE ? ['--expose-gc'] : [],
  });
  let closed = false;
  try {
    const ready = await service.ready;
    out(
      `Soak: database ${ready.db}, cache ${ready.cache}; ${
        pin ? `service on CPU ${pin.servers}, autocannon on CPU ${pin.load}` : 'not pinned: taskset or a second core missing'
      }; ${CONNECTIONS} connections\n`,
    );
    const ctx = await signIn(ready, keyHex, service);
    const { base, auth, tenantHeader } = ctx;
    const records = (await json(base, { path: '/api/v1/customers?limit=100&sortBy=id', headers: auth }, [200])).data.records;
    const parts = [
      { kind: 'fixed', method: 'GET', path: '/api/v1/customers?limit=25', headers: auth },
      { kind: 'rotate', headers: auth, params: { paths: records.map((r) => `/api/v1/customers/${r.id}`) } },
      { kind: 'fixed', method: 'GET', path: '/api/v1/auth/tenant-config', headers: { 'x-tenant-id': tenantHeader } },
      { kind: 'fixed', method: 'GET', path: '/api/v1/dataviews/customers_grid/data?pageSize=25', headers: auth },
    ];
    for (const p of parts.filter((q) => q.kind === 'fixed')) await json(base, p, [200]);
    const mix = { kind: 'mix', headers: auth, params: { parts }, origin: base, connections: CONNECTIONS };

    out(`\n1. Maximum of the mix: 3 s warm-up + ${MAX_S} s at full speed … `);
    results.max = await runLoad(pin, { ...mix, warmupS: 3, durationS: MAX_S });
    out(`${fmtInt(results.max.rps)} req/s, p50 ${fmtMs(results.max.latency.p50)} ms, p99 ${fmtMs(results.max.latency.p99)} ms\n`);
    if (results.max.non2xx || results.max.errors)
      throw new Error(`the maximum run had ${results.max.non2xx} non-2xx and ${results.max.errors} errors: ${JSON.stringify(results.max.statusCodes)}`);
    results.rate = Math.max(1, Math.round((results.max.rps * RATE_PERCENT) / 100));

    // Let the service finish the maximum run's last answers before the soak's first memory figure.
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const memory = async (gc = GC) => {
      const u = await service.call('memory', { gc });
      const m = { rssMB: mb(u.rss), heapUsedMB: mb(u.heapUsed), heapTotalMB: mb(u.heapTotal), externalMB: mb(u.external) };
      if (u.heapUsedAfterGc != null) {
        m.liveHeapMB = mb(u.heapUsedAfterGc);
        m.settledRssMB = mb(u.rssAfterGc);
      }
      return m;
    };
    results.memory.start = await memory();
    out(
      `\n2. Soak: ${DURATION_S} s at ${fmtInt(results.rate)} req/s (${RATE_PERCENT}% of the maximum), a line every ${INTERVAL_S} s; ` +
        `the first ${Math.round(WARMUP_S)} s are warm-up (RSS at start ${results.memory.start.rssMB.toFixed(1)} MB)\n\n`,
    );
    out(
      `${'elapsed s'.padStart(9)} ${'req/s'.padStart(8)} ${'p50 ms'.padStart(8)} ${'p99 ms'.padStart(8)} ${'errors'.padStart(7)} ${'non-2xx'.padStart(8)} ${'RSS MB'.padStart(8)} ${'heap MB'.padStart(8)}${GC ? ` ${'live MB'.padStart(8)}` : ''}\n`,
    );
    const warmTimer = setTimeout(async () => {
      try {
        results.memory.warm = await memory(GC || SETTLE);
      } catch {
        // the verdict falls back to the first interval after the warm-up
      }
    }, WARMUP_S * 1000);
    results.soak = await soakLoad(
      pin,
      { ...mix, rate: results.rate, durationS: DURATION_S, intervalS: INTERVAL_S },
      async (p) => {
        const mem = await memory();
        const row = { ...p, ...mem };
        results.intervals.push(row);
        out(
          `${pad(Math.round(p.elapsedS), 9)} ${pad(fmtInt(p.rps), 8)} ${pad(fmtMs(p.p50), 8)} ${pad(fmtMs(p.p99), 8)} ${pad(p.errors + p.timeouts, 7)} ${pad(p.non2xx, 8)} ${pad(mem.rssMB.toFixed(1), 8)} ${pad(mem.heapUsedMB.toFixed(1), 8)}${mem.liveHeapMB != null ? ` ${pad(mem.liveHeapMB.toFixed(1), 8)}` : ''}\n`,
        );
      },
    );
    clearTimeout(warmTimer);
    results.memory.end = await memory(GC || SETTLE);
    results.intervals.sort((a, b) => a.elapsedS - b.elapsedS);
    if (!results.memory.warm) {
      const first = results.intervals.find((p) => p.elapsedS >= WARMUP_S) ?? results.intervals[0];
      const { rssMB, heapUsedMB, heapTotalMB, externalMB, liveHeapMB, settledRssMB } = first;
      results.memory.warm = { rssMB, heapUsedMB, heapTotalMB, externalMB, liveHeapMB, settledRssMB };
    }
    const { warm, end } = results.memory;
    const growth = (a, b) => (100 * (b - a)) / a;
    results.rawRssGrowthPercent = growth(warm.rssMB, end.rssMB);
    const settled = warm.settledRssMB != null && end.settledRssMB != null;
    results.verdictBasis = settled ? 'RSS after a full GC' : 'RSS';
    results.rssGrowthPercent = settled ? growth(warm.settledRssMB, end.settledRssMB) : results.rawRssGrowthPercent;
    results.heapGrowthPercent = growth(warm.heapUsedMB, end.heapUsedMB);
    results.pass = results.rssGrowthPercent <= MAX_GROWTH_PERCENT;
    results.keptUp = results.soak.rps >= 0.9 * results.rate;
    out(
      `\nOver the soak: ${fmtInt(results.soak.rps)} req/s, p50 ${fmtMs(results.soak.latency.p50)} ms, p99 ${fmtMs(results.soak.latency.p99)} ms, ` +
        `${results.soak.errors} errors, ${results.soak.timeouts} timeouts, ${results.soak.non2xx} non-2xx\n`,
    );
    if (!results.keptUp)
      out(`⚠ under 90% of the ${fmtInt(results.rate)} req/s asked: the service (or a busy machine) did not keep up; the latencies include the backlog\n`);
    const signed = (n) => `${n >= 0 ? '+' : ''}${n.toFixed(1)}%`;
    out(
      `RSS from the end of the warm-up to the end: ${warm.rssMB.toFixed(1)} → ${end.rssMB.toFixed(1)} MB = ${signed(results.rawRssGrowthPercent)}` +
        `${settled ? `; after a full GC ${warm.settledRssMB.toFixed(1)} → ${end.settledRssMB.toFixed(1)} MB = ${signed(results.rssGrowthPercent)}` : ''}\n`,
    );
    out(
      `RSS growth after warm-up (${results.verdictBasis}): ${signed(results.rssGrowthPercent)} ` +
        `(heap used ${warm.heapUsedMB.toFixed(1)} → ${end.heapUsedMB.toFixed(1)} MB${
          warm.liveHeapMB != null && end.liveHeapMB != null
            ? `, live heap after a full GC ${warm.liveHeapMB.toFixed(1)} → ${end.liveHeapMB.toFixed(1)} MB`
            : ''
        }) — ${results.pass ? 'PASS' : `FAIL: over ${MAX_GROWTH_PERCENT}%, a leak to find`}\n`,
    );
    await service.call('close');
    closed = true;
  } finally {
    await stopService(service, dir, { close: !closed });
  }

  const names = writeResults(results, { kind: 'soak', chart: svg(results) });
  out(`\nResults: ${names.map((n) => `${n}.{json,svg}`).join(', ')}\n\n${markdown(results)}\n`);
  if (!results.pass) process.exitCode = 1;
}

const pad = (s, n) => String(s).padStart(n);

main().catch((err) => {
  process.stderr.write(`${err.stack ?? err}\n`);
  process.exit(1);
});
