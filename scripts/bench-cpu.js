#!/usr/bin/env node
'use strict';
/**
 * CPU time per request (issue 14): the service's own CPU time (user + system, process.cpuUsage)
 * spent answering a fixed number of requests, per request. On a shared VM req/s moves ±20% from
 * one run to the next with the neighbours; CPU µs per request moves far less, so this is the
 * figure to compare two builds by (A/B), the ratios of `npm run bench` the one to report.
 *
 *   npm run bench:cpu                      # every scenario below, CPU_REQUESTS (20,000) each, 3 rounds
 *   CPU_ONLY=healthz,get-one npm run bench:cpu
 *   BENCH_PROFILE=/tmp/prof CPU_ONLY=tenant-config npm run bench:cpu   # with the service's CPU profile
 *
 * Same service as the bench (scripts/bench/service.js: embedded default, BENCH_DB / BENCH_CACHE),
 * pinned like it; 50 connections (BENCH_CONNECTIONS). Prints, per scenario, the median of
 * CPU_ROUNDS rounds in µs per request and the req/s seen meanwhile. Loopback only; bounded.
 */
const { spawnSync } = require('node:child_process');
const { randomBytes } = require('node:crypto');
const autocannon = require('autocannon');
const { envNumber, pinning, startService, signIn, stopService } = require('./bench/harness');
const { build } = require('./bench/requests');

const REQUESTS = envNumber('CPU_REQUESTS', 20000);
const ROUNDS = Math.max(1, envNumber('CPU_ROUNDS', 3));
const CONNECTIONS = envNumber('BENCH_CONNECTIONS', 50);
const ONLY = process.env.CPU_ONLY ? new Set(process.env.CPU_ONLY.split(',').map((s) => s.trim())) : null;

function scenarios({ base, tenantHeader, auth, jsonAuth }) {
  // The grid right after a write: 750 (limit, skip, sort) combinations of the first 50 customers in
  // turn, the tenant's list pages dropped every 150 requests (the clears' own cost included).
  const uncached = {
    kind: 'uncachedList',
    headers: auth,
    params: {
      entityPath: '/api/v1/customers',
      limits: [24, 25, 26],
      skips: Array.from({ length: 25 }, (_, i) => i),
      sortBy: ['id', 'name', 'email', 'tier', 'credit_limit'],
      clear: { url: `${base}/api/v1/admin/cache/clear`, headers: jsonAuth, body: '{"scope":"lists"}' },
    },
  };
  return [
    { id: 'healthz', path: '/healthz', headers: {} },
    { id: 'tenant-config', path: '/api/v1/auth/tenant-config', headers: { 'x-tenant-id': tenantHeader } },
    { id: 'profile', path: '/api/v1/auth/profile', headers: auth },
    { id: 'list-cached', path: '/api/v1/customers?limit=25', headers: auth },
    { id: 'list-uncached', spec: uncached },
    // 40 customers by id in turn: the record is read from the database every time.
    { id: 'get-one', paths: Array.from({ length: 40 }, (_, i) => `/api/v1/customers/${i + 1}`), headers: auth },
    { id: 'dataview', path: '/api/v1/dataviews/customers_grid/data?page=0&pageSize=25', headers: auth },
  ];
}

function load(base, s, amount, cpus) {
  return new Promise((resolve, reject) => {
    let i = 0;
    const requests = s.spec
      ? build(s.spec)()
      : s.paths
        ? [{ method: 'GET', headers: s.headers, setupRequest: (req) => ({ ...req, path: s.paths[i++ % s.paths.length] }) }]
        : [{ method: 'GET', path: s.path, headers: s.headers }];
    autocannon({ url: base, connections: CONNECTIONS, amount, requests }, (err, r) => (err ? reject(err) : resolve(r)));
  });
}

async function main() {
  const pin = pinning();
  // autocannon runs in this process: on the load core, away from the service's.
  if (pin) spawnSync('taskset', ['-p', '-c', pin.load, String(process.pid)], { stdio: 'ignore' });
  const keyHex = randomBytes(32).toString('hex');
  const secret = randomBytes(48).toString('base64url');
  // BENCH_PROFILE=<dir>: the service runs with --cpu-prof (as in `npm run bench`); read it with
  // scripts/bench/profile-top.js.
  const nodeArgs = process.env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : [];
  const { service, dir } = startService({ cpus: pin?.servers, keyHex, secret, logLevel: process.env.BENCH_LOG_LEVEL ?? 'info', nodeArgs });
  try {
    const ready = await service.ready;
    const ctx = await signIn(ready, keyHex, service);
    process.stdout.write(`CPU µs per request (database ${ready.db}, cache ${ready.cache}; ${REQUESTS} requests × ${ROUNDS} rounds)\n`);
    for (const s of scenarios(ctx).filter((x) => !ONLY || ONLY.has(x.id))) {
      await load(ctx.base, s, Math.min(2000, REQUESTS), pin?.load); // warm-up
      const per = [];
      let rps = [];
      for (let r = 0; r < ROUNDS; r++) {
        const a = await service.call('cpuUsage');
        const res = await load(ctx.base, s, REQUESTS, pin?.load);
        const b = await service.call('cpuUsage');
        if (res.non2xx > 0) throw new Error(`${s.id}: ${res.non2xx} non-2xx answers`);
        per.push((b.userUs + b.systemUs - a.userUs - a.systemUs) / res.requests.total);
        rps.push(res.requests.average);
      }
      per.sort((x, y) => x - y);
      rps.sort((x, y) => x - y);
      const mid = (v) => v[Math.floor(v.length / 2)];
      process.stdout.write(
        `${s.id.padEnd(16)} ${mid(per).toFixed(1).padStart(8)} µs/request  (rounds ${per.map((x) => x.toFixed(1)).join(', ')})  ~${Math.round(mid(rps))} req/s\n`,
      );
    }
    await service.call('close');
  } finally {
    await stopService(service, dir);
  }
}

main().catch((err) => {
  process.stderr.write(`${err.stack ?? err}\n`);
  process.exit(1);
});
