#!/usr/bin/env node
/**
 * Micro-benchmark of the per-request cost of the tenant guard and the JWT guard, and HTTP
 * benchmarks of protected routes (profile, entity list) against the probe baseline. Run: npm run bench
 * (builds first). Loopback only; bounded in time.
 *
 * BENCH_DB=postgres|mariadb runs the HTTP part on that server (127.0.0.1, a database of its own,
 * dropped afterwards) instead of the embedded SQLite file; BENCH_CACHE=redis on the local Redis.
 */
'use strict';
const { createSecretKey, randomBytes } = require('node:crypto');
const { mkdtempSync, rmSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const jsonwebtoken = require('jsonwebtoken');
const { JwtService } = require('@nestjs/jwt');
const { execFile } = require('node:child_process');

const dist = (p) => require(join(__dirname, '..', 'dist', p));
const { encryptTenantHeader, decryptTenantHeader } = dist('tenant/tenant-header.crypto.js');
const { TenantHeaderService } = dist('tenant/tenant-header.service.js');
const { loadConfig } = dist('config/config.schema.js');

function opsPerSecond(label, fn, ms = 1500) {
  for (let i = 0; i < 200; i++) fn(); // warm-up
  let n = 0;
  const end = process.hrtime.bigint() + BigInt(ms) * 1_000_000n;
  while (process.hrtime.bigint() < end) {
    for (let i = 0; i < 50; i++) fn();
    n += 50;
  }
  const rate = Math.round(n / (ms / 1000));
  process.stdout.write(
    `${label.padEnd(58)} ${rate.toLocaleString('en-US').padStart(12)} ops/s  ${(1e6 / rate).toFixed(2).padStart(8)} µs/op\n`,
  );
  return rate;
}

/** autocannon in a process of its own, so the load generator does not share the server's event loop. */
function autocannon(url, headers) {
  const args = [require.resolve('autocannon/autocannon.js'), '-c', '50', '-d', '5', '-j'];
  for (const [k, v] of Object.entries(headers)) args.push('-H', `${k}=${v}`);
  args.push(url);
  return new Promise((resolve, reject) =>
    execFile(process.execPath, args, { maxBuffer: 16 * 1024 * 1024 }, (err, stdout) =>
      err ? reject(err) : resolve(JSON.parse(stdout)),
    ),
  );
}

async function http(label, url, headers) {
  const result = await autocannon(url, headers);
  process.stdout.write(
    `${label.padEnd(58)} ${Math.round(result.requests.average).toLocaleString('en-US').padStart(12)} req/s  p50 ${result.latency.p50} ms  p99 ${result.latency.p99} ms  non-2xx ${result.non2xx}\n`,
  );
  return result;
}

/** p50/p90/p99 of a list of request times (ms). */
function report(label, times) {
  const sorted = [...times].sort((a, b) => a - b);
  const pct = (p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))].toFixed(2);
  process.stdout.write(`${label.padEnd(58)} p50 ${pct(50)} ms  p90 ${pct(90)} ms  p99 ${pct(99)} ms\n`);
}

async function main() {
  const keyHex = randomBytes(32).toString('hex');
  const secret = randomBytes(48).toString('base64url');
  const header = encryptTenantHeader(1, keyHex);

  process.stdout.write('\nTenant header (x-tenant-id)\n');
  opsPerSecond('decrypt (HKDF + AES-256-GCM + checks), uncached', () => decryptTenantHeader(header, keyHex));
  const config = loadConfig({ JWT_SECRET: secret, TENANT_ENCRYPTION_KEY: keyHex, NODE_ENV: 'test' });
  const headers = new TenantHeaderService(config);
  opsPerSecond('TenantHeaderService.resolve, LRU hit (per request)', () => headers.resolve(header));

  process.stdout.write('\nJWT verification (HS256)\n');
  const payload = {
    sub: '1',
    user_id: 1,
    tenant_id: '1',
    jti: 'x',
    exp: Math.floor(Date.now() / 1000) + 3600,
  };
  const token = jsonwebtoken.sign(payload, secret, { algorithm: 'HS256' });
  opsPerSecond('jsonwebtoken.verify, string secret', () =>
    jsonwebtoken.verify(token, secret, { algorithms: ['HS256'] }),
  );
  const keyObject = createSecretKey(Buffer.from(secret, 'utf8'));
  opsPerSecond('jsonwebtoken.verify, KeyObject secret', () =>
    jsonwebtoken.verify(token, keyObject, { algorithms: ['HS256'] }),
  );
  const jwt = new JwtService({
    secret: keyObject,
    verifyOptions: { algorithms: ['HS256'], clockTolerance: 5 },
  });
  opsPerSecond('@nestjs/jwt JwtService.verify as configured (KeyObject)', () => jwt.verify(token));

  process.stdout.write('\nHTTP (loopback, autocannon in its own process, 50 connections, 5 s each)\n');
  const dir = mkdtempSync(join(tmpdir(), 'mtb-bench-'));
  const { createApp } = dist('bootstrap.js');
  const { StartupService } = dist('health/startup.service.js');
  const benchDb = (process.env.BENCH_DB ?? 'sqlite').toLowerCase();
  const dbEnv =
    benchDb === 'postgres'
      ? {
          DB_TYPE: 'postgres',
          DB_HOST: '127.0.0.1',
          DB_USER: 'postgres',
          DB_NAME: `mtb_bench_${process.pid}`,
        }
      : benchDb === 'mariadb'
        ? { DB_TYPE: 'mariadb', DB_HOST: '127.0.0.1', DB_USER: 'root', DB_NAME: `mtb_bench_${process.pid}` }
        : { DB_NAME: join(dir, 'bench.sqlite') };
  const appConfig = loadConfig({
    JWT_SECRET: secret,
    TENANT_ENCRYPTION_KEY: keyHex,
    NODE_ENV: 'test',
    ...dbEnv,
    ...(process.env.BENCH_CACHE === 'redis'
      ? { CACHE_URL: 'redis://127.0.0.1:6379/0', CACHE_KEY_PREFIX: `bench-${process.pid}` }
      : {}),
    SEED_DEMO: 'true',
    LOG_LEVEL: 'error',
    LOG_FORMAT: 'json',
    // The limits are not what is measured: one client address sends every request.
    RATE_LIMIT_POINTS: '100000000',
    PUBLIC_RATE_LIMIT_POINTS: '100000000',
    ADDRESS_FAILURE_POINTS: '100000000',
  });
  const { ensureDatabaseExists, createDataSource } = dist('database/data-source.factory.js');
  await ensureDatabaseExists(appConfig.db);
  process.stdout.write(
    `(database ${benchDb}, cache ${process.env.BENCH_CACHE === 'redis' ? 'redis' : 'in-process'})\n`,
  );
  const app = await createApp(appConfig, { logger: false });
  await app.listen({ port: 0, host: '127.0.0.1' });
  await app.get(StartupService).settled();
  const base = `http://127.0.0.1:${app.getHttpServer().address().port}`;
  const demoHeader = encryptTenantHeader(1, keyHex);
  const signin = await fetch(`${base}/api/v1/auth/signin`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-tenant-id': demoHeader },
    body: JSON.stringify({
      email_id: 'admin@acme.test',
      password: dist('database/seed/demo-data.js').DEV_DEMO_PASSWORD,
    }),
  }).then((r) => r.json());
  await http('GET /healthz (no guards; baseline)', `${base}/healthz`, {});
  await http('GET /api/v1/auth/tenant-config (tenant guard)', `${base}/api/v1/auth/tenant-config`, {
    'x-tenant-id': demoHeader,
  });
  await http('GET /api/v1/auth/profile (tenant + JWT guards + 1 query)', `${base}/api/v1/auth/profile`, {
    'x-tenant-id': demoHeader,
    authorization: `Bearer ${signin.data.token}`,
  });
  const auth = { 'x-tenant-id': demoHeader, authorization: `Bearer ${signin.data.token}` };
  await http(
    'GET /api/v1/customers?limit=25 (entity list, cache hit)',
    `${base}/api/v1/customers?limit=25`,
    auth,
  );

  // Uncached list reads: every request a different page, so the D27 cache never answers.
  process.stdout.write('\nEntity list read, uncached (200 sequential requests, distinct pages)\n');
  const times = [];
  for (let i = 0; i < 200; i++) {
    const t0 = process.hrtime.bigint();
    const res = await fetch(
      `${base}/api/v1/orders?limit=25&skip=${i % 90}&sortBy=amount&sortOrder=${i % 2 ? 'asc' : 'desc'}&filters[status]=${['new', 'paid', 'shipped', 'cancelled'][i % 4]}`,
      { headers: auth },
    );
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`list read answered ${res.status}`);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  report('GET /api/v1/orders (filter + sort + page), uncached', times);

  // Writes: validation, unique-value lock and check, value set, INSERT/UPDATE, audit row, cache drop.
  process.stdout.write('\nEntity writes (200 sequential requests each)\n');
  const json = { ...auth, 'content-type': 'application/json' };
  const created = [];
  const createTimes = [];
  for (let i = 0; i < 200; i++) {
    const t0 = process.hrtime.bigint();
    const res = await fetch(`${base}/api/v1/customers`, {
      method: 'POST',
      headers: json,
      body: JSON.stringify({
        name: `Bench ${i}`,
        email: `bench-${i}@acme.example`,
        tier: 'gold',
        credit_limit: i,
      }),
    });
    const body = await res.json();
    if (res.status !== 201) throw new Error(`create answered ${res.status}`);
    createTimes.push(Number(process.hrtime.bigint() - t0) / 1e6);
    created.push(body.data);
  }
  report('POST /api/v1/customers (unique e-mail, value set, audit)', createTimes);
  const updateTimes = [];
  for (const c of created) {
    const t0 = process.hrtime.bigint();
    const res = await fetch(`${base}/api/v1/customers/${c.id}`, {
      method: 'PUT',
      headers: json,
      body: JSON.stringify({
        credit_limit: 1000,
        email: `bench-moved-${c.id}@acme.example`,
        lastModified: c.lastModified,
      }),
    });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`update answered ${res.status}`);
    updateTimes.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  report('PUT /api/v1/customers/:id (compare-and-set, new e-mail)', updateTimes);

  // Exports (issue 11): 10,000 rows of customers_grid in each format, with the time of the export
  // request and the process's peak RSS while it runs (the service runs in this process).
  process.stdout.write('\nDataview exports (customers_grid, 10,000 rows)\n');
  const { DatabaseService } = dist('database/database.service.js');
  const ds = app.get(DatabaseService).dataSource;
  const live = Number(
    (await ds.query('SELECT COUNT(*) AS n FROM demo_customers WHERE cus_tenant_id = 1'))[0].n,
  );
  const stamp = new Date().toISOString().replace('T', ' ').replace('Z', '');
  const extra = [];
  for (let i = live; i < 10_100; i++)
    extra.push({
      cus_tenant_id: 1,
      cus_name: `Export ${i}`,
      cus_email: `export-${i}@acme.example`,
      cus_phone: `+1 555 ${String(i).padStart(7, '0')}`,
      cus_tier: ['bronze', 'silver', 'gold'][i % 3],
      cus_credit_limit: i,
      cus_status: 1,
      cus_is_deleted: 0,
      cus_last_modified: stamp,
    });
  for (let i = 0; i < extra.length; i += 500) {
    const chunk = extra.slice(i, i + 500);
    await ds
      .createQueryBuilder()
      .insert()
      .into('demo_customers', Object.keys(chunk[0]))
      .values(chunk)
      .execute();
  }
  for (const format of ['csv', 'excel', 'pdf']) {
    const before = process.memoryUsage().rss;
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
    const t0 = process.hrtime.bigint();
    const res = await fetch(`${base}/api/v1/dataviews/customers_grid/export`, {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ format }),
    });
    const body = await res.json();
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    if (res.status !== 200)
      throw new Error(`export ${format} answered ${res.status}: ${JSON.stringify(body)}`);
    const file = await fetch(`${base}${body.data.downloadUrl}`, { headers: auth });
    const bytes = (await file.arrayBuffer()).byteLength;
    clearInterval(sampler);
    const mb = (n) => (n / 1048576).toFixed(0);
    process.stdout.write(
      `${`export ${format} (10,000 rows)`.padEnd(58)} ${ms.toFixed(0)} ms  file ${(bytes / 1024).toFixed(0)} KB  RSS ${mb(before)} → peak ${mb(peak)} MB\n`,
    );
  }
  await app.close();
  if (benchDb !== 'sqlite') {
    // Drop the bench database through the server's own admin connection.
    const admin = createDataSource({ ...appConfig.db, name: benchDb === 'postgres' ? 'postgres' : 'mysql' });
    await admin.initialize();
    await admin.query(`DROP DATABASE IF EXISTS ${admin.driver.escape(appConfig.db.name)}`);
    await admin.destroy();
  }
  rmSync(dir, { recursive: true, force: true });
}

main().catch((err) => {
  process.stderr.write(`${err.stack ?? err}\n`);
  process.exit(1);
});
