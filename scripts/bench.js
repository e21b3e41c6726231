#!/usr/bin/env node
/**
 * Benchmarks (issue 14). Run: npm run bench (builds first). Loopback only; bounded in time.
 *
 * 1. Micro-benchmarks of the per-request cost of the tenant header and JWT verification
 *    (BENCH_MICRO=0 skips them).
 * 2. HTTP scenarios, each measured twice side by side: against the built service (scripts/bench/
 *    service.js: the embedded default — SQLite in a temp dir + in-process cache, demo seed — or
 *    BENCH_DB=postgres|mariadb on 127.0.0.1 in a database of its own, dropped afterwards, and/or
 *    BENCH_CACHE=redis on the local Redis) and against bare Fastify answering the exact bytes the
 *    service answered for that scenario (scripts/bench/bare.js). The ratio req/s(service) ÷
 *    req/s(bare) is the figure to watch: both run in the same conditions, a busy or slow machine
 *    moves both. Where taskset exists and there are two cores or more, both servers run on
 *    BENCH_SERVER_CPUS (default 0) and autocannon, in a process of its own (scripts/bench/load.js),
 *    on BENCH_LOAD_CPUS (default 1). Each run: BENCH_WARMUP_S (2) of warm-up, then BENCH_DURATION_S
 *    (6) measured, BENCH_CONNECTIONS (50) connections.
 * 3. Dataview exports of 10,000 rows (csv, excel, pdf): time, file size, the service's peak RSS
 *    (BENCH_EXPORTS=0 skips them).
 *
 * The process helpers (pinning, the IPC children, the load runner, starting the service and signing
 * in) are in scripts/bench/harness.js, shared with scripts/soak.js and scripts/bench-curves.js.
 *
 * Writes bench/results/latest.{json,svg}, latest-<db>-<cache>.{json,svg} and a dated copy, and
 * prints a markdown table. BENCH_ONLY=healthz,list-cached,…,exports runs only those (and writes
 * nothing).
 */
'use strict';
const { createSecretKey, randomBytes } = require('node:crypto');
const jsonwebtoken = require('jsonwebtoken');
const { JwtService } = require('@nestjs/jwt');
const { machineInfo, gitInfo, markdown, writeResults } = require('./bench/report');
const { dist, envNumber, pinning, ipcChild, runLoad, request, json, startService, signIn, stopService } = require(
  './bench/harness',
);

const { encryptTenantHeader, decryptTenantHeader } = dist('tenant/tenant-header.crypto.js');
const { TenantHeaderService } = dist('tenant/tenant-header.service.js');
const { loadConfig } = dist('config/config.schema.js');

const DURATION_S = envNumber('BENCH_DURATION_S', 4);
const WARMUP_S = envNumber('BENCH_WARMUP_S', 2);
const CONNECTIONS = envNumber('BENCH_CONNECTIONS', 50);
const ROUNDS = Math.max(1, envNumber('BENCH_ROUNDS', 3));
// Logging stays on as in production (an access line per request, at info), written to /dev/null.
const LOG_LEVEL = process.env.BENCH_LOG_LEVEL ?? 'info';
// BENCH_PROFILE=<dir>: the service runs with --cpu-prof; its .cpuprofile lands in <dir> at the end
// (open it in Chrome DevTools or speedscope; scripts/bench/profile-top.js prints the top functions).
const PROFILE_DIR = process.env.BENCH_PROFILE || null;
const ONLY = process.env.BENCH_ONLY ? new Set(process.env.BENCH_ONLY.split(',').map((s) => s.trim())) : null;
const out = (s) => process.stdout.write(s);

// ---------------------------------------------------------------------------------------------
// Micro-benchmarks (in this process)
// ---------------------------------------------------------------------------------------------

function opsPerSecond(label, fn, ms = 1500) {
  for (let i = 0; i < 200; i++) fn(); // warm-up
  let n = 0;
  const end = process.hrtime.bigint() + BigInt(ms) * 1_000_000n;
  while (process.hrtime.bigint() < end) {
    for (let i = 0; i < 50; i++) fn();
    n += 50;
  }
  const rate = Math.round(n / (ms / 1000));
  out(
    `${label.padEnd(58)} ${rate.toLocaleString('en-US').padStart(12)} ops/s  ${(1e6 / rate).toFixed(2).padStart(8)} µs/op\n`,
  );
  return { label, opsPerSecond: rate, microsPerOp: 1e6 / rate };
}

function micro(keyHex, secret) {
  const results = [];
  const header = encryptTenantHeader(1, keyHex);
  out('\nTenant header (x-tenant-id)\n');
  results.push(
    opsPerSecond('decrypt (HKDF + AES-256-GCM + checks), uncached', () => decryptTenantHeader(header, keyHex)),
  );
  const config = loadConfig({ JWT_SECRET: secret, TENANT_ENCRYPTION_KEY: keyHex, NODE_ENV: 'test' });
  const headers = new TenantHeaderService(config);
  results.push(opsPerSecond('TenantHeaderService.resolve, LRU hit (per request)', () => headers.resolve(header)));

  out('\nJWT verification (HS256)\n');
  const payload = { sub: '1', user_id: 1, tenant_id: '1', jti: 'x', exp: Math.floor(Date.now() / 1000) + 3600 };
  const token = jsonwebtoken.sign(payload, secret, { algorithm: 'HS256' });
  results.push(
    opsPerSecond('jsonwebtoken.verify, string secret', () =>
      jsonwebtoken.verify(token, secret, { algorithms: ['HS256'] }),
    ),
  );
  const keyObject = createSecretKey(Buffer.from(secret, 'utf8'));
  results.push(
    opsPerSecond('jsonwebtoken.verify, KeyObject secret', () =>
      jsonwebtoken.verify(token, keyObject, { algorithms: ['HS256'] }),
    ),
  );
  const jwt = new JwtService({ secret: keyObject, verifyOptions: { algorithms: ['HS256'], clockTolerance: 5 } });
  results.push(opsPerSecond('@nestjs/jwt JwtService.verify as configured (KeyObject)', () => jwt.verify(token)));
  return results;
}

// ---------------------------------------------------------------------------------------------
// Scenarios
// ---------------------------------------------------------------------------------------------

/**
 * The scenarios, in run order. Each: id, label, method, route (the pattern the bare server
 * registers), target (issue 14's ratio, if any), and prepare() → { spec, sample }: the load
 * spec (requests.js) and one representative request, whose answer is the bytes bare Fastify serves.
 */
function scenarios(ctx) {
  const { base, tenantHeader, auth, jsonAuth, service } = ctx;
  const fixed = (req) => ({ spec: { kind: 'fixed', ...req }, sample: req });
  return [
    {
      id: 'healthz',
      label: 'GET /healthz',
      method: 'GET',
      route: '/healthz',
      target: 0.6,
      prepare: async () => fixed({ method: 'GET', path: '/healthz', headers: {} }),
    },
    {
      id: 'tenant-config',
      label: 'tenant-config (x-tenant-id)',
      method: 'GET',
      route: '/api/v1/auth/tenant-config',
      target: 0.5,
      prepare: async () =>
        fixed({ method: 'GET', path: '/api/v1/auth/tenant-config', headers: { 'x-tenant-id': tenantHeader } }),
    },
    {
      id: 'profile',
      label: 'profile (tenant + JWT guards + 1 query)',
      method: 'GET',
      route: '/api/v1/auth/profile',
      prepare: async () => fixed({ method: 'GET', path: '/api/v1/auth/profile', headers: auth }),
    },
    {
      id: 'list-cached',
      label: 'list of 25 customers, cached',
      method: 'GET',
      route: '/api/v1/customers',
      target: 0.35,
      prepare: async () => fixed({ method: 'GET', path: '/api/v1/customers?limit=25', headers: auth }),
    },
    {
      id: 'list-uncached',
      label: 'list of 24-26 customers, uncached',
      method: 'GET',
      route: '/api/v1/customers',
      prepare: async () => {
        const total = (await json(base, { path: '/api/v1/customers?limit=1', headers: auth }, [200])).data.total;
        const limits = [24, 25, 26];
        const sortBy = ['id', 'name', 'email', 'tier', 'credit_limit'];
        const skips = [];
        for (let s = 0; s + 26 <= total && s < 100; s++) skips.push(s);
        if (skips.length === 0) throw new Error(`customers has ${total} rows: too few for the uncached list`);
        for (const field of sortBy)
          await json(base, { path: `/api/v1/customers?limit=25&sortBy=${field}`, headers: auth }, [200]);
        const clear = { url: `${base}/api/v1/admin/cache/clear`, headers: jsonAuth, body: '{"scope":"lists"}' };
        const params = { entityPath: '/api/v1/customers', limits, skips, sortBy };
        return {
          // The checks above and the sample request cached some of the combinations.
          beforeService: () =>
            json(base, { method: 'POST', path: '/api/v1/admin/cache/clear', headers: jsonAuth, body: clear.body }, [200]),
          spec: { kind: 'uncachedList', headers: auth, params: { ...params, clear } },
          bareSpec: { kind: 'uncachedList', headers: auth, params: { ...params, clear: null } },
          sample: { method: 'GET', path: `/api/v1/customers?limit=25&skip=0&sortBy=name&sortOrder=desc`, headers: auth },
        };
      },
    },
    {
      id: 'get-one',
      label: 'one customer by id, uncached',
      method: 'GET',
      route: '/api/v1/customers/:id',
      prepare: async () => {
        const records = (await json(base, { path: '/api/v1/customers?limit=100&sortBy=id', headers: auth }, [200])).data
          .records;
        const paths = records.map((r) => `/api/v1/customers/${r.id}`);
        return {
          spec: { kind: 'rotate', headers: auth, params: { paths } },
          sample: { method: 'GET', path: paths[Math.floor(paths.length / 2)], headers: auth },
        };
      },
    },
    {
      id: 'dataview',
      label: 'dataview data page of 25 (customers_grid)',
      method: 'GET',
      route: '/api/v1/dataviews/customers_grid/data',
      prepare: async () =>
        fixed({ method: 'GET', path: '/api/v1/dataviews/customers_grid/data?pageSize=25', headers: auth }),
    },
    {
      id: 'create',
      label: 'create a customer (unique e-mail, audit)',
      method: 'POST',
      route: '/api/v1/customers',
      prepare: async () => {
        const prefix = `bench-new-${process.pid}-`;
        return {
          spec: { kind: 'create', headers: jsonAuth, params: { path: '/api/v1/customers', prefix } },
          sample: {
            method: 'POST',
            path: '/api/v1/customers',
            headers: jsonAuth,
            body: JSON.stringify({ name: 'Bench 0', email: `${prefix}0@acme.example`, tier: 'gold', credit_limit: 0 }),
          },
        };
      },
      // Leave the table as the seed made it for what follows (the exports count their rows).
      after: async () => {
        const r = await service.call('sql', { sql: "DELETE FROM demo_customers WHERE cus_email LIKE 'bench-new-%'" });
        return r;
      },
    },
    {
      id: 'update',
      label: 'update a customer (read-edit-save, compare-and-set)',
      method: 'PUT',
      route: '/api/v1/customers/:id',
      prepare: async () => {
        // Rows of the update pool (a few per connection, so a row is never in two requests at
        // once), each read first: the read gives the lastModified the save needs (D42).
        const rows = [];
        for (let i = 0; i <= Math.max(4 * CONNECTIONS, 20); i++) {
          const created = await json(
            base,
            {
              method: 'POST',
              path: '/api/v1/customers',
              headers: jsonAuth,
              body: JSON.stringify({ name: `Update ${i}`, email: `bench-upd-${process.pid}-${i}@acme.example`, tier: 'silver', credit_limit: i }),
            },
            [201],
          );
          rows.push((await json(base, { path: `/api/v1/customers/${created.data.id}`, headers: auth }, [200])).data);
        }
        const sampleRow = rows.pop();
        return {
          spec: { kind: 'update', headers: jsonAuth, params: { rows, pathPrefix: '/api/v1/customers/' } },
          // Each round's load runner starts from the rows as they are now: read them again, so the
          // first save of a row carries its current lastModified (the previous round changed it).
          beforeService: async () => {
            for (let i = 0; i < rows.length; i++)
              rows[i] = (await json(base, { path: `/api/v1/customers/${rows[i].id}`, headers: auth }, [200])).data;
          },
          sample: {
            method: 'PUT',
            path: `/api/v1/customers/${sampleRow.id}`,
            headers: jsonAuth,
            body: JSON.stringify({ ...sampleRow, credit_limit: 999 }),
          },
        };
      },
    },
    {
      id: 'signin',
      label: 'sign-in (argon2id verify, by design)',
      method: 'POST',
      route: '/api/v1/auth/signin',
      // argon2 runs on libuv's 4 threads: more connections only queue (and a warm-up's backlog of
      // 50 verifications would spill into the measured run).
      connections: Math.min(CONNECTIONS, 4),
      prepare: async () =>
        fixed({
          method: 'POST',
          path: '/api/v1/auth/signin',
          headers: { 'content-type': 'application/json', 'x-tenant-id': tenantHeader },
          body: ctx.signinBody,
        }),
    },
  ];
}

async function exportsOf(ctx) {
  const { base, auth, jsonAuth, service } = ctx;
  out('\nDataview exports (customers_grid, 10,000 rows)\n');
  await service.call('exportRows', { total: 10_100 });
  const results = [];
  const mb = (n) => Math.round(n / 1048576);
  for (const format of ['csv', 'excel', 'pdf']) {
    const { rss: before } = await service.call('rssStart');
    const t0 = process.hrtime.bigint();
    const res = await fetch(`${base}/api/v1/dataviews/customers_grid/export`, {
      method: 'POST',
      headers: jsonAuth,
      body: JSON.stringify({ format }),
    });
    const body = await res.json();
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    if (res.status !== 200) throw new Error(`export ${format} answered ${res.status}: ${JSON.stringify(body)}`);
    const file = await fetch(`${base}${body.data.downloadUrl}`, { headers: auth });
    const bytes = (await file.arrayBuffer()).byteLength;
    const { peak } = await service.call('rssStop');
    const e = { format, ms, fileKB: Math.round(bytes / 1024), rssBeforeMB: mb(before), rssPeakMB: mb(peak) };
    results.push(e);
    out(
      `${`export ${format} (10,000 rows)`.padEnd(58)} ${ms.toFixed(0)} ms  file ${e.fileKB} KB  RSS ${e.rssBeforeMB} → peak ${e.rssPeakMB} MB\n`,
    );
  }
  return results;
}

/**
 * The rounds' summary: the service's and bare Fastify's runs of the round whose ratio is the median
 * (its latencies are the ones reported), with req/s replaced by the medians of all rounds, and the
 * median ratio.
 */
function medianRound(rounds) {
  const median = (xs) => {
    const v = [...xs].sort((a, b) => a - b);
    return v.length % 2 ? v[(v.length - 1) / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
  };
  const withRatio = rounds.filter((r) => r.ratio != null);
  const ratio = withRatio.length > 0 ? median(withRatio.map((r) => r.ratio)) : null;
  const mid = [...withRatio].sort((a, b) => a.ratio - b.ratio)[Math.floor((withRatio.length - 1) / 2)] ?? rounds[0];
  return {
    serviceRun: { ...mid.service, rps: median(rounds.map((r) => r.service.rps)) },
    bareRun: { ...mid.bare, rps: median(rounds.map((r) => r.bare.rps)) },
    ratio,
  };
}

const pad = (s, n) => String(s).padStart(n);
const fmt = (n) => Math.round(n).toLocaleString('en-US');

async function main() {
  const keyHex = randomBytes(32).toString('hex');
  const secret = randomBytes(48).toString('base64url');
  const date = new Date().toISOString();
  const results = {
    date,
    git: gitInfo(),
    machine: machineInfo(),
    pinning: pinning(),
    config: {
      db: (process.env.BENCH_DB ?? 'sqlite').toLowerCase(),
      cache: process.env.BENCH_CACHE === 'redis' ? 'redis' : 'in-process',
      connections: CONNECTIONS,
      warmupS: WARMUP_S,
      durationS: DURATION_S,
      rounds: ROUNDS,
      logLevel: LOG_LEVEL,
      only: ONLY ? [...ONLY] : null,
    },
    startupMs: null,
    micro: [],
    scenarios: [],
    exports: [],
  };
  if (process.env.BENCH_MICRO !== '0') results.micro = micro(keyHex, secret);

  const pin = results.pinning;
  out(
    `\nHTTP: the service and bare Fastify serving the same bytes, side by side (${
      pin ? `servers on CPU ${pin.servers}, autocannon on CPU ${pin.load}` : 'not pinned: taskset or a second core missing'
    }; ${CONNECTIONS} connections, ${WARMUP_S} s warm-up, then ${ROUNDS} alternating runs of ${DURATION_S} s on each; medians)\n`,
  );
  const { service, dir } = startService({
    cpus: pin?.servers,
    keyHex,
    secret,
    logLevel: LOG_LEVEL,
    nodeArgs: PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`] : [],
  });
  let bare;
  try {
    const ready = await service.ready;
    results.startupMs = ready.startupMs;
    out(`(database ${ready.db}, cache ${ready.cache}; service start to ready ${fmt(ready.startupMs)} ms)\n`);
    const ctx = await signIn(ready, keyHex, service);
    const { base } = ctx;

    const list = scenarios(ctx).filter((s) => !ONLY || ONLY.has(s.id));
    // Prepare each scenario and capture the service's answer to its sample request: bare Fastify
    // serves those bytes. (Prepared lazily, just before the scenario runs, so a scenario's rows do
    // not change the table the ones before it read.)
    out(
      `\n${'scenario'.padEnd(52)} ${'service req/s'.padStart(13)} ${'p50'.padStart(7)} ${'p99'.padStart(7)}  ${'bare req/s'.padStart(10)} ${'p50'.padStart(6)}  ratio\n`,
    );
    for (const s of list) {
      const prepared = await s.prepare();
      const captured = await request(base, prepared.sample);
      if (captured.status < 200 || captured.status > 299)
        throw new Error(`${s.id}: sample request answered ${captured.status}: ${captured.bytes.toString().slice(0, 300)}`);
      const bareServer = ipcChild('bare.js', pin?.servers, {});
      bare = bareServer;
      bareServer.child.send({
        scenarios: [
          {
            id: s.id,
            method: s.method,
            route: s.route,
            status: captured.status,
            contentType: captured.contentType,
            bodyBase64: captured.bytes.toString('base64'),
          },
        ],
      });
      const bareReady = await bareServer.ready;
      if (bareReady.error) throw new Error(bareReady.error);
      // BENCH_ROUNDS runs against each server, alternating (service, bare, service, bare, …): a
      // neighbour's burst on this shared VM then hits one pair, not a whole side. The figures are
      // the medians; the ratio is the median of the rounds' ratios (each of two adjacent runs).
      const rounds = [];
      for (let r = 0; r < ROUNDS; r++) {
        const common = {
          connections: s.connections ?? CONNECTIONS,
          warmupS: r === 0 ? WARMUP_S : 0,
          durationS: DURATION_S,
        };
        if (prepared.beforeService) await prepared.beforeService();
        const serviceRound = await runLoad(pin, { ...common, ...prepared.spec, origin: base });
        if (s.after) await s.after();
        const bareRound = await runLoad(pin, {
          ...common,
          ...(prepared.bareSpec ?? prepared.spec),
          origin: `http://127.0.0.1:${bareReady.ports[s.id]}`,
        });
        rounds.push({ service: serviceRound, bare: bareRound, ratio: bareRound.rps > 0 ? serviceRound.rps / bareRound.rps : null });
      }
      const { serviceRun, bareRun, ratio } = medianRound(rounds);
      bareServer.child.disconnect();
      bare = undefined;
      const row = {
        id: s.id,
        label: s.label,
        method: s.method,
        route: s.route,
        samplePath: prepared.sample.path,
        responseBytes: captured.bytes.length,
        contentType: captured.contentType,
        target: s.target ?? null,
        service: serviceRun,
        bare: bareRun,
        connections: s.connections ?? CONNECTIONS,
        ratio,
        rounds: rounds.map((r) => ({ service: r.service.rps, bare: r.bare.rps, ratio: r.ratio })),
      };
      results.scenarios.push(row);
      out(
        `${s.label.padEnd(52)} ${pad(fmt(serviceRun.rps), 13)} ${pad(serviceRun.latency.p50, 7)} ${pad(serviceRun.latency.p99, 7)}  ${pad(fmt(bareRun.rps), 10)} ${pad(bareRun.latency.p50, 6)}  ${ratio == null ? '–' : ratio.toFixed(4)}\n`,
      );
      const problems = [];
      if (serviceRun.non2xx) problems.push(`${serviceRun.non2xx} non-2xx (${JSON.stringify(serviceRun.statusCodes)})`);
      if (serviceRun.errors || serviceRun.timeouts) problems.push(`${serviceRun.errors} errors, ${serviceRun.timeouts} timeouts`);
      if (serviceRun.stats?.hits) {
        const { hits, misses } = serviceRun.stats;
        problems.push(`${hits} of ${hits + misses} list answers came from the cache (${((100 * hits) / (hits + misses)).toFixed(1)}%)`);
      }
      if (serviceRun.stats?.clearFailures) problems.push(`${serviceRun.stats.clearFailures} failed cache clears`);
      if (serviceRun.stats?.conflicts) problems.push(`${serviceRun.stats.conflicts} update conflicts`);
      if (problems.length > 0) out(`  ⚠ ${problems.join('; ')}\n`);
    }

    if (process.env.BENCH_EXPORTS !== '0' && (!ONLY || ONLY.has('exports'))) results.exports = await exportsOf(ctx);
    await service.call('close');
  } finally {
    if (bare && bare.child.exitCode === null) bare.child.kill();
    await stopService(service, dir);
  }

  const table = markdown(results);
  if (ONLY) out('\nPartial run (BENCH_ONLY): no results written.\n');
  else {
    const written = writeResults(results);
    out(`\nResults: ${written.map((p) => `${p}.{json,svg}`).join(', ')}\n`);
  }
  out(`\n${table}\n`);
}

main().catch((err) => {
  process.stderr.write(`${err.stack ?? err}\n`);
  process.exit(1);
});
