'use strict';
/**
 * The process helpers the measurement scripts share (scripts/bench.js, scripts/soak.js,
 * scripts/bench-curves.js): CPU pinning with taskset, Node children with an IPC channel (the
 * service under test, bare Fastify), the pinned load runner (load.js), HTTP helpers, and starting
 * the built service (service.js) and signing in as the demo tenant's administrator.
 */
const { spawn, spawnSync } = require('node:child_process');
const { mkdtempSync, rmSync } = require('node:fs');
const os = require('node:os');
const { join } = require('node:path');

const dist = (p) => require(join(__dirname, '..', '..', 'dist', p));

const envNumber = (name, fallback) => {
  const v = process.env[name];
  if (v === undefined || v === '') return fallback;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) throw new Error(`${name} must be a number ≥ 0, not ${v}`);
  return n;
};

// ---------------------------------------------------------------------------------------------
// Processes: pinning, the servers, the load runner
// ---------------------------------------------------------------------------------------------

function pinning() {
  const cores = os.availableParallelism ? os.availableParallelism() : os.cpus().length;
  if (cores < 2) return null;
  const probe = spawnSync('taskset', ['-p', String(process.pid)], { stdio: 'ignore' });
  if (probe.error || probe.status !== 0) return null;
  return { servers: process.env.BENCH_SERVER_CPUS ?? '0', load: process.env.BENCH_LOAD_CPUS ?? '1' };
}

function spawnNode(cpus, args, options) {
  return cpus
    ? spawn('taskset', ['-c', cpus, process.execPath, ...args], options)
    : spawn(process.execPath, args, options);
}

/** A child (a script of scripts/bench/) with an IPC channel: `ready` (its first message) and `call(cmd, payload)`. */
function ipcChild(script, cpus, env, stdout = 'inherit', nodeArgs = []) {
  const child = spawnNode(cpus, [...nodeArgs, join(__dirname, script)], {
    env: { ...process.env, ...env },
    stdio: ['ignore', stdout, 'inherit', 'ipc'],
  });
  let next = 0;
  const pending = new Map();
  let onFirst;
  const ready = new Promise((resolve, reject) => {
    onFirst = resolve;
    child.once('exit', (code) => reject(new Error(`${script} exited (${code}) before it was ready`)));
    child.once('error', reject);
  });
  let first = true;
  child.on('message', (msg) => {
    if (first) {
      first = false;
      onFirst(msg);
      return;
    }
    const p = pending.get(msg.id);
    if (!p) return;
    pending.delete(msg.id);
    if (msg.error) p.reject(new Error(msg.error));
    else p.resolve(msg.result);
  });
  child.on('exit', () => {
    for (const p of pending.values()) p.reject(new Error(`${script} exited`));
    pending.clear();
  });
  const call = (cmd, payload = {}) =>
    new Promise((resolve, reject) => {
      const id = ++next;
      pending.set(id, { resolve, reject });
      child.send({ id, cmd, ...payload });
    });
  return { child, ready, call };
}

/** One load run against one server in the pinned load process (load.js): warm-up + measured run. */
function runLoad(pin, spec) {
  return new Promise((resolve, reject) => {
    const child = spawnNode(pin?.load, [join(__dirname, 'load.js'), JSON.stringify(spec)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let stdout = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`load runner exited with ${code}`));
      try {
        resolve(JSON.parse(stdout.trim().split('\n').pop()));
      } catch (err) {
        reject(err);
      }
    });
  });
}

// ---------------------------------------------------------------------------------------------
// HTTP
// ---------------------------------------------------------------------------------------------

async function request(base, { method = 'GET', path, headers = {}, body }) {
  const res = await fetch(`${base}${path}`, { method, headers, body });
  const bytes = Buffer.from(await res.arrayBuffer());
  return { status: res.status, contentType: res.headers.get('content-type') ?? 'application/octet-stream', bytes };
}

async function json(base, req, expected) {
  const r = await request(base, req);
  if (!expected.includes(r.status))
    throw new Error(`${req.method ?? 'GET'} ${req.path} answered ${r.status}: ${r.bytes.toString().slice(0, 300)}`);
  return JSON.parse(r.bytes.toString());
}

/**
 * Creates `rows` customers of the demo tenant in one bulk request (`label` in their names and
 * e-mails); their { id, lastModified } in order. The bulk limit must allow `rows`.
 */
async function createCustomers(ctx, rows, label) {
  const stamp = Date.now();
  const created = await json(
    ctx.base,
    {
      method: 'POST',
      path: '/api/v1/customers/bulk',
      headers: ctx.jsonAuth,
      body: JSON.stringify({
        operation: 'create',
        records: Array.from({ length: rows }, (_, i) => ({
          name: `${label} ${i}`,
          email: `${label.toLowerCase().replace(/\W+/g, '-')}-${stamp}-${i}@acme.example`,
          tier: 'silver',
          credit_limit: 1000,
        })),
      }),
    },
    [200],
  );
  return created.data.results.map((r) => ({ id: r.id, lastModified: r.lastModified }));
}

// ---------------------------------------------------------------------------------------------
// The service under test
// ---------------------------------------------------------------------------------------------

/**
 * Starts service.js (pinned to `cpus`) in a temp dir of its own: { service, dir }. The caller
 * awaits service.ready and ends with stopService(service, dir). BENCH_DB / BENCH_CACHE are read by
 * service.js from the environment (`env` may set them).
 */
function startService({ cpus, keyHex, secret, logLevel = 'info', nodeArgs = [], env = {} }) {
  const dir = mkdtempSync(join(os.tmpdir(), 'mtb-bench-'));
  const service = ipcChild(
    'service.js',
    cpus,
    { BENCH_DIR: dir, BENCH_KEY_HEX: keyHex, BENCH_JWT_SECRET: secret, BENCH_LOG_LEVEL: logLevel, ...env },
    'ignore',
    nodeArgs,
  );
  return { service, dir };
}

/**
 * Signs in as the demo tenant's administrator on a ready service: { base, tenantHeader, auth,
 * jsonAuth, signinBody } (`service` is added when given).
 */
async function signIn(ready, keyHex, service) {
  const { encryptTenantHeader } = dist('tenant/tenant-header.crypto.js');
  const base = `http://127.0.0.1:${ready.port}`;
  const tenantHeader = encryptTenantHeader(1, keyHex);
  const signinBody = JSON.stringify({
    email_id: 'admin@acme.test',
    password: dist('database/seed/demo-data.js').DEV_DEMO_PASSWORD,
  });
  const signin = await json(
    base,
    { method: 'POST', path: '/api/v1/auth/signin', headers: { 'content-type': 'application/json', 'x-tenant-id': tenantHeader }, body: signinBody },
    [200],
  );
  const auth = { 'x-tenant-id': tenantHeader, authorization: `Bearer ${signin.data.token}` };
  return { base, tenantHeader, auth, jsonAuth: { ...auth, 'content-type': 'application/json' }, service, signinBody };
}

/**
 * Ends the service (asks it to leave, kills it after 5 s) and removes its temp dir. With
 * `close: true` the service is first asked to close (which drops its PostgreSQL/MariaDB database)
 * if it is still there: for the scripts' error paths (bench.js closes it itself).
 */
async function stopService(service, dir, { close = false } = {}) {
  if (close && service.child.connected) {
    await Promise.race([service.call('close').catch(() => {}), new Promise((resolve) => setTimeout(resolve, 15000))]);
  }
  if (service.child.exitCode === null) {
    await new Promise((resolve) => {
      const timer = setTimeout(() => {
        service.child.kill();
        resolve();
      }, 5000);
      service.child.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
      if (service.child.connected) service.child.disconnect();
    });
  }
  rmSync(dir, { recursive: true, force: true });
}

/** What every results file starts with: when, which commit, which machine, which cores. */
function runInfo(pin) {
  const { machineInfo, gitInfo } = require('./report');
  return { date: new Date().toISOString(), git: gitInfo(), machine: machineInfo(), pinning: pin };
}

module.exports = { dist, envNumber, runInfo, pinning, spawnNode, ipcChild, runLoad, request, json, createCustomers, startService, signIn, stopService };
