#!/usr/bin/env node
'use strict';
/**
 * The service under test, in a process of its own (pinned by the orchestrator): the built app
 * (dist/), configured as scripts/bench.js always has — the embedded default (SQLite file in a
 * temp dir + in-process cache) with the demo seed, or BENCH_DB=postgres|mariadb and
 * BENCH_CACHE=redis — listening on a free loopback port. Talks to the orchestrator over IPC:
 * sends { ready, port, startupMs }, then answers commands { id, cmd, ... } with { id, result } or
 * { id, error }.
 */
const { readFileSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');
const { monitorEventLoopDelay, performance } = require('node:perf_hooks');

const dist = (p) => require(join(__dirname, '..', '..', 'dist', p));

async function main() {
  const { loadConfig } = dist('config/config.schema.js');
  const { createApp } = dist('bootstrap.js');
  const { StartupService } = dist('health/startup.service.js');
  const { ensureDatabaseExists, createDataSource } = dist('database/data-source.factory.js');
  const { DatabaseService } = dist('database/database.service.js');

  const dir = process.env.BENCH_DIR;
  const benchDb = (process.env.BENCH_DB ?? 'sqlite').toLowerCase();
  const dbName = `mtb_bench_${process.pid}`;
  const dbEnv =
    benchDb === 'postgres'
      ? { DB_TYPE: 'postgres', DB_HOST: '127.0.0.1', DB_USER: 'postgres', DB_NAME: dbName }
      : benchDb === 'mariadb'
        ? { DB_TYPE: 'mariadb', DB_HOST: '127.0.0.1', DB_USER: 'root', DB_NAME: dbName }
        : { DB_NAME: join(dir, 'bench.sqlite') };
  const appConfig = loadConfig({
    JWT_SECRET: process.env.BENCH_JWT_SECRET,
    TENANT_ENCRYPTION_KEY: process.env.BENCH_KEY_HEX,
    NODE_ENV: 'test',
    ...dbEnv,
    ...(process.env.BENCH_CACHE === 'redis'
      ? { CACHE_URL: 'redis://127.0.0.1:6379/0', CACHE_KEY_PREFIX: `bench-${process.pid}` }
      : {}),
    SEED_DEMO: 'true',
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info',
    LOG_FORMAT: 'json',
    // The limits are not what is measured: one client address sends every request.
    RATE_LIMIT_POINTS: '100000000',
    PUBLIC_RATE_LIMIT_POINTS: '100000000',
    ADDRESS_FAILURE_POINTS: '100000000',
    // Further variables of a script (bench-exports.js: the export limits), as JSON.
    ...(process.env.BENCH_SERVICE_ENV ? JSON.parse(process.env.BENCH_SERVICE_ENV) : {}),
  });
  await ensureDatabaseExists(appConfig.db);
  const app = await createApp(appConfig, { logger: false });
  await app.listen({ port: 0, host: '127.0.0.1' });
  await app.get(StartupService).settled();
  // From the process's start (Node's own boot included) to ready, demo seed included.
  const startupMs = performance.now();
  const ds = app.get(DatabaseService).dataSource;

  let sampler;
  let capture = null;
  let peak = 0;
  let hwm = false;
  let loop;
  const commands = {
    /** A statement of the bench's own (row counts, removing the rows the create scenario made, EXPLAIN). */
    sql: async ({ sql, params }) => ds.query(sql, params),
    /**
     * process.memoryUsage() of the service (the soak's RSS and heap over time); with `gc` and the
     * service started with --expose-gc, also the heap used and the RSS after a full collection.
     */
    memory: async ({ gc }) => {
      const usage = process.memoryUsage();
      if (gc && typeof global.gc === 'function') {
        global.gc();
        // V8 hands the freed pages back to the system shortly after the collection, not during it.
        await new Promise((resolve) => setTimeout(resolve, 500));
        const after = process.memoryUsage();
        usage.heapUsedAfterGc = after.heapUsed;
        usage.rssAfterGc = after.rss;
      }
      return usage;
    },
    /**
     * Customers of tenant `tenantId` up to `total` rows (bench-curves.js): on PostgreSQL one
     * INSERT … SELECT generate_series, elsewhere batches of 500 through the query builder; then
     * the planner's statistics are refreshed (VACUUM ANALYZE on PostgreSQL, ANALYZE elsewhere), so
     * EXPLAIN sees the table as it is.
     */
    fillCustomers: async ({ tenantId, total }) => {
      const t0 = performance.now();
      const live = Number(
        (await ds.query(`SELECT COUNT(*) AS n FROM demo_customers WHERE cus_tenant_id = ${Number(tenantId)}`))[0].n,
      );
      const inserted = Math.max(0, total - live);
      if (inserted > 0 && benchDb === 'postgres') {
        await ds.query(
          `INSERT INTO demo_customers (cus_tenant_id, cus_name, cus_email, cus_phone, cus_tier, cus_credit_limit,
             cus_status, cus_is_deleted, cus_last_modified)
           SELECT $1::int, 'Curve ' || g, 'curve-' || $1::int || '-' || g || '@acme.example',
             '+1 555 ' || lpad(g::text, 7, '0'), (ARRAY['bronze','silver','gold'])[1 + g % 3], g % 100000,
             1, false, now()
           FROM generate_series($2::int, $3::int) AS g`,
          [Number(tenantId), live, total - 1],
        );
      } else if (inserted > 0) {
        const stamp = new Date().toISOString().replace('T', ' ').replace('Z', '');
        for (let start = live; start < total; start += 500) {
          const chunk = [];
          for (let i = start; i < Math.min(total, start + 500); i++)
            chunk.push({
              cus_tenant_id: Number(tenantId),
              cus_name: `Curve ${i}`,
              cus_email: `curve-${tenantId}-${i}@acme.example`,
              cus_phone: `+1 555 ${String(i).padStart(7, '0')}`,
              cus_tier: ['bronze', 'silver', 'gold'][i % 3],
              cus_credit_limit: i % 100000,
              cus_status: 1,
              cus_is_deleted: 0,
              cus_last_modified: stamp,
            });
          await ds.createQueryBuilder().insert().into('demo_customers', Object.keys(chunk[0])).values(chunk).execute();
        }
      }
      // VACUUM as autovacuum would: the visibility map lets PostgreSQL answer COUNT from an index only.
      if (benchDb === 'postgres') await ds.query('VACUUM ANALYZE demo_customers');
      else if (benchDb === 'sqlite') await ds.query('ANALYZE');
      else await ds.query('ANALYZE TABLE demo_customers');
      return { live, inserted, ms: performance.now() - t0 };
    },
    /**
     * The statements the service sends while capturing (bench-curves.js: the list query, to
     * EXPLAIN): every query runner's query() is wrapped once; statements matching `match` (a
     * regular expression) are kept, with their parameters, until sqlCaptureStop returns them.
     */
    sqlCaptureStart: async ({ match }) => {
      const proto = Object.getPrototypeOf(ds.driver.createQueryRunner('master'));
      if (!proto.__benchWrapped) {
        const original = proto.query;
        proto.query = function (query, parameters, ...rest) {
          if (capture && capture.match.test(query)) capture.statements.push({ sql: query, params: parameters ?? [] });
          return original.call(this, query, parameters, ...rest);
        };
        proto.__benchWrapped = true;
      }
      capture = { match: new RegExp(match ?? '.', 'i'), statements: [] };
      return {};
    },
    sqlCaptureStop: async () => {
      const statements = capture?.statements ?? [];
      capture = null;
      return statements;
    },
    /** Customers of tenant 1 up to 10,100 rows (the export scenarios' 10,000 rows once filtered). */
    exportRows: async ({ total }) => {
      const live = Number(
        (await ds.query('SELECT COUNT(*) AS n FROM demo_customers WHERE cus_tenant_id = 1'))[0].n,
      );
      const stamp = new Date().toISOString().replace('T', ' ').replace('Z', '');
      const extra = [];
      for (let i = live; i < total; i++)
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
      return { live, inserted: extra.length };
    },
    // Peak RSS while an export runs. On Linux the kernel's own high-water mark (VmHWM), reset
    // first through clear_refs, so a peak inside synchronous work is not missed; elsewhere a 5 ms
    // sampler on the event loop (which does miss those).
    rssStart: async () => {
      const rss = process.memoryUsage().rss;
      try {
        writeFileSync('/proc/self/clear_refs', '5');
        hwm = true;
      } catch {
        hwm = false;
        peak = rss;
        sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
      }
      return { rss };
    },
    rssStop: async () => {
      const rss = process.memoryUsage().rss;
      if (hwm) {
        const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
        return { rss, peak: m ? Number(m[1]) * 1024 : rss, source: 'VmHWM' };
      }
      clearInterval(sampler);
      return { rss, peak: Math.max(peak, rss), source: 'sampled' };
    },
    // The event loop's delay while a scenario runs (perf_hooks), in ms: what a request waits
    // before the service even looks at it.
    loopStart: async () => {
      loop?.disable();
      loop = monitorEventLoopDelay({ resolution: 5 });
      loop.enable();
      return {};
    },
    loopStop: async () => {
      loop.disable();
      const ms = (ns) => Math.round(ns / 1e5) / 10;
      return { p50: ms(loop.percentile(50)), p99: ms(loop.percentile(99)), max: ms(loop.max) };
    },
    // The process's CPU time so far (µs, user + system): the CPU cost of a load is the difference.
    cpuUsage: async () => {
      const u = process.cpuUsage();
      return { userUs: u.user, systemUs: u.system };
    },
    close: async () => {
      await app.close();
      if (benchDb !== 'sqlite') {
        // Drop the bench database through the server's own admin connection.
        const admin = createDataSource({
          ...appConfig.db,
          name: benchDb === 'postgres' ? 'postgres' : 'mysql',
        });
        await admin.initialize();
        await admin.query(`DROP DATABASE IF EXISTS ${admin.driver.escape(appConfig.db.name)}`);
        await admin.destroy();
      }
      return {};
    },
  };
  process.on('message', async (msg) => {
    try {
      const result = await commands[msg.cmd](msg);
      process.send({ id: msg.id, result });
      if (msg.cmd === 'close') process.disconnect();
    } catch (err) {
      process.send({ id: msg.id, error: String(err.stack ?? err) });
    }
  });
  process.send({
    ready: true,
    port: app.getHttpServer().address().port,
    startupMs,
    db: benchDb,
    cache: process.env.BENCH_CACHE === 'redis' ? 'redis' : 'in-process',
  });
}

process.on('disconnect', () => setTimeout(() => process.exit(0), 100).unref());
main().catch((err) => {
  process.stderr.write(`${err.stack ?? err}\n`);
  process.exit(1);
});
