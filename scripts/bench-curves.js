#!/usr/bin/env node
/**
 * Cost curves of a list read (issue 14 #3). Run: npm run bench:curves (builds first). Loopback
 * only; bounded in time.
 *
 * Starts the built service as `npm run bench` does (scripts/bench/service.js), on PostgreSQL by
 * default here (BENCH_DB=postgres, in a database of its own, dropped afterwards; BENCH_DB=sqlite
 * for the embedded default, or mariadb; BENCH_CACHE=redis), signs in as tenant 1's administrator
 * and measures GET /api/v1/customers:
 *
 * (a) by page size, CURVES_PAGE_SIZES (25,100,500): the cached page (the same request every time)
 *     and uncached pages (every request another skip/sortOrder, the tenant's list pages cleared
 *     five times a cycle, as the bench's uncached list; the share of cache hits is reported);
 * (b) by table size, CURVES_TABLE_SIZES (1000,100000): tenant 1's customers are filled up to each
 *     size in turn (service.js's fillCustomers: INSERT … SELECT generate_series on PostgreSQL,
 *     batches elsewhere, then (VACUUM) ANALYZE), with CURVES_OTHER_ROWS (200000) customers of another
 *     tenant in the same table, so the tenant predicate has rows to skip.
 *
 * Per point: req/s of 2xx answers (under event-loop pressure the service sheds load with 503
 * OVERLOADED: those are counted and flagged, never as list reads), p50 and p99 under load
 * (CURVES_WARMUP_S (2) + CURVES_DURATION_S (5), CURVES_CONNECTIONS (BENCH_CONNECTIONS, 50)
 * connections, service and autocannon pinned as the bench: BENCH_SERVER_CPUS / BENCH_LOAD_CPUS;
 * the database server is not pinned), and the sequential latency: p50 (and p90) of
 * CURVES_SEQUENTIAL (200) single requests one after the other. The uncached pages sort by id, skip
 * 0…99: the deepest of them shows what the tenant predicate costs when the page is read through
 * the primary key.
 *
 * It also lists the indexes on demo_customers and, at each table size, the statements the list
 * sends (captured in the service: the page and its COUNT) with their plans: EXPLAIN (ANALYZE,
 * BUFFERS) on PostgreSQL, EXPLAIN QUERY PLAN on SQLite, EXPLAIN on MariaDB; a sequential scan of
 * demo_customers is flagged.
 *
 * CURVES_EXTRA_INDEXES=cus_tenant_id,cus_id[;col,col…]: a what-if: these indexes are created in the
 * bench's own database before anything is measured (the migrations are not changed), to see what
 * an index would buy (written to curves-whatif-latest.json, never curves-latest.json).
 *
 * Writes bench/results/curves-latest.json and a dated copy <date>-curves-<db>-<cache>.json, and
 * prints a markdown table.
 */
'use strict';
const { randomBytes } = require('node:crypto');
const { writeResults } = require('./bench/report');
const { envNumber, pinning, runLoad, request, startService, signIn, stopService, runInfo } = require('./bench/harness');

const DB = (process.env.BENCH_DB || 'postgres').toLowerCase();
const list = (name, fallback) =>
  (process.env[name] || fallback)
    .split(',')
    .map((s) => Number(s.trim()))
    .filter((n) => Number.isInteger(n) && n > 0);
const PAGE_SIZES = list('CURVES_PAGE_SIZES', '25,100,500');
const TABLE_SIZES = list('CURVES_TABLE_SIZES', '1000,100000').sort((a, b) => a - b);
const OTHER_ROWS = envNumber('CURVES_OTHER_ROWS', 200_000);
const DURATION_S = envNumber('CURVES_DURATION_S', 5);
const WARMUP_S = envNumber('CURVES_WARMUP_S', 2);
const CONNECTIONS = Math.max(1, envNumber('CURVES_CONNECTIONS', envNumber('BENCH_CONNECTIONS', 50)));
const SEQUENTIAL = Math.max(1, envNumber('CURVES_SEQUENTIAL', 200));
const LOG_LEVEL = process.env.BENCH_LOG_LEVEL ?? 'info';
const EXTRA_INDEXES = (process.env.CURVES_EXTRA_INDEXES || '')
  .split(';')
  .map((cols) => cols.split(',').map((c) => c.trim()).filter(Boolean))
  .filter((cols) => cols.length > 0);
for (const cols of EXTRA_INDEXES)
  for (const c of cols) if (!/^cus_\w+$/.test(c)) throw new Error(`CURVES_EXTRA_INDEXES: ${c} is not a demo_customers column`);
const SKIPS = 100; // uncached pages: skip 0…99 × asc/desc = 200 distinct pages per page size
const EXPLAIN_PATHS = ['/api/v1/customers?limit=25', `/api/v1/customers?limit=25&skip=${SKIPS - 1}&sortBy=id&sortOrder=asc`];
const out = (s) => process.stdout.write(s);
const pad = (s, n) => String(s).padStart(n);
const fmtInt = (n) => Math.round(n).toLocaleString('en-US');
const fmtMs = (n) => (n == null ? '–' : n < 10 ? n.toFixed(2) : n.toFixed(1));

function quantile(values, q) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A request of the script's own, retried while the service sheds load (503 OVERLOADED: after a
 * load run it can still be working off the backlog), for at most 60 s.
 */
async function patient(base, req, expected) {
  for (let waited = 0; ; waited += 1000) {
    const r = await request(base, req);
    if (r.status !== 503 || waited >= 60_000) {
      if (!expected.includes(r.status))
        throw new Error(`${req.method ?? 'GET'} ${req.path} answered ${r.status}: ${r.bytes.toString().slice(0, 300)}`);
      return JSON.parse(r.bytes.toString());
    }
    await sleep(1000);
  }
}

/** `n` requests one after the other; `pathOf(i)` the i-th path. Latencies in ms (a 503 is waited out and sent again, untimed). */
async function sequential(base, headers, pathOf, n) {
  const times = [];
  let shed = 0;
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    const r = await request(base, { path: pathOf(i), headers });
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    if (r.status === 503 && shed < 60) {
      shed++;
      await sleep(1000);
      i--;
      continue;
    }
    if (r.status !== 200) throw new Error(`GET ${pathOf(i)} answered ${r.status}: ${r.bytes.toString().slice(0, 300)}`);
    times.push(ms);
  }
  return { n, p50: quantile(times, 0.5), p90: quantile(times, 0.9), max: Math.max(...times), shed };
}

async function indexesOf(service) {
  if (DB === 'postgres')
    return (
      await service.call('sql', {
        sql: "SELECT indexname AS name, indexdef AS definition FROM pg_indexes WHERE tablename = 'demo_customers' ORDER BY indexname",
      })
    ).map((r) => ({ name: r.name, definition: r.definition }));
  if (DB === 'sqlite')
    return (
      await service.call('sql', {
        sql: "SELECT name, sql AS definition FROM sqlite_master WHERE type = 'index' AND tbl_name = 'demo_customers' ORDER BY name",
      })
    ).map((r) => ({ name: r.name, definition: r.definition ?? '(automatic: primary key / unique constraint)' }));
  const rows = await service.call('sql', { sql: 'SHOW INDEX FROM demo_customers' });
  const byName = new Map();
  for (const r of rows) {
    if (!byName.has(r.Key_name)) byName.set(r.Key_name, []);
    byName.get(r.Key_name)[r.Seq_in_index - 1] = r.Column_name;
  }
  return [...byName].map(([name, cols]) => ({ name, definition: `(${cols.join(', ')})` }));
}

/** The statements of one uncached list request, captured in the service, each with its plan. */
async function explainList(ctx, path) {
  const { base, auth, jsonAuth, service } = ctx;
  await patient(base, { method: 'POST', path: '/api/v1/admin/cache/clear', headers: jsonAuth, body: '{"scope":"lists"}' }, [200]);
  await service.call('sqlCaptureStart', { match: 'demo_customers' });
  await patient(base, { path, headers: auth }, [200]);
  const statements = await service.call('sqlCaptureStop');
  const plans = [];
  for (const st of statements) {
    if (!/^\s*select/i.test(st.sql)) continue;
    const prefix = DB === 'postgres' ? 'EXPLAIN (ANALYZE, BUFFERS) ' : DB === 'sqlite' ? 'EXPLAIN QUERY PLAN ' : 'EXPLAIN ';
    const rows = await service.call('sql', { sql: prefix + st.sql, params: st.params });
    const plan =
      DB === 'postgres'
        ? rows.map((r) => r['QUERY PLAN']).join('\n')
        : DB === 'sqlite'
          ? rows.map((r) => `${r.id}|${r.parent}| ${r.detail}`).join('\n')
          : rows.map((r) => `${r.table}: type=${r.type} key=${r.key} rows=${r.rows} ${r.Extra ?? ''}`).join('\n');
    const seqScan =
      DB === 'postgres'
        ? /Seq Scan on demo_customers/.test(plan)
        : DB === 'sqlite'
          ? /SCAN (TABLE )?demo_customers(?! USING)/.test(plan)
          : /type=ALL/.test(plan);
    const indexes = [
      ...new Set(
        [...plan.matchAll(/(?:Index(?: Only)? Scan(?: Backward)? using|Bitmap Index Scan on|USING (?:COVERING )?INDEX|key=)\s*"?(\w+)"?/g)].map(
          (m) => m[1],
        ),
      ),
    ].filter((n) => n !== 'NULL');
    // PostgreSQL: the rows read and thrown away by a filter (other tenants' rows, deleted rows;
    // per loop: a parallel scan's workers each report theirs).
    const removed = [...plan.matchAll(/Rows Removed by Filter: (\d+)/g)].map((m) => Number(m[1]));
    plans.push({
      path,
      statement: /COUNT\(/i.test(st.sql) ? 'count' : 'page',
      sql: st.sql,
      params: st.params,
      plan,
      seqScan,
      indexes,
      rowsRemovedByFilter: removed.length ? Math.max(...removed) : null,
    });
  }
  return plans;
}

async function main() {
  const keyHex = randomBytes(32).toString('hex');
  const secret = randomBytes(48).toString('base64url');
  const pin = pinning();
  const results = {
    ...runInfo(pin),
    config: {
      db: DB,
      cache: process.env.BENCH_CACHE === 'redis' ? 'redis' : 'in-process',
      pageSizes: PAGE_SIZES,
      tableSizes: TABLE_SIZES,
      otherTenantRows: OTHER_ROWS,
      extraIndexes: EXTRA_INDEXES,
      connections: CONNECTIONS,
      warmupS: WARMUP_S,
      durationS: DURATION_S,
      sequential: SEQUENTIAL,
      logLevel: LOG_LEVEL,
    },
    indexes: [],
    fills: [],
    explains: [],
    points: [],
  };
  const { service, dir } = startService({ cpus: pin?.servers, keyHex, secret, logLevel: LOG_LEVEL, env: { BENCH_DB: DB } });
  let closed = false;
  try {
    const ready = await service.ready;
    out(
      `List read cost curves: database ${ready.db}, cache ${ready.cache}; ${
        pin ? `service on CPU ${pin.servers}, autocannon on CPU ${pin.load}` : 'not pinned: taskset or a second core missing'
      }; ${CONNECTIONS} connections, ${WARMUP_S} s warm-up + ${DURATION_S} s per point, sequential p50 of ${SEQUENTIAL} requests\n`,
    );
    const ctx = await signIn(ready, keyHex, service);
    const { base, auth, jsonAuth } = ctx;
    const clearLists = () =>
      patient(base, { method: 'POST', path: '/api/v1/admin/cache/clear', headers: jsonAuth, body: '{"scope":"lists"}' }, [200]);

    for (const [i, cols] of EXTRA_INDEXES.entries())
      await service.call('sql', { sql: `CREATE INDEX bench_extra_${i} ON demo_customers (${cols.join(', ')})` });
    results.indexes = await indexesOf(service);
    out('\nIndexes on demo_customers:\n');
    for (const i of results.indexes) out(`  ${i.name}: ${i.definition}\n`);

    const other = (await service.call('sql', { sql: 'SELECT tnt_id FROM app_tenants WHERE tnt_id <> 1 ORDER BY tnt_id' }))[0]?.tnt_id;
    if (other != null && OTHER_ROWS > 0) {
      const f = await service.call('fillCustomers', { tenantId: other, total: OTHER_ROWS });
      results.fills.push({ tenantId: Number(other), total: OTHER_ROWS, ...f });
      out(`\nTenant ${other}: ${fmtInt(f.inserted)} customers inserted (${fmtInt(f.ms)} ms), so the tenant predicate has rows to skip\n`);
    }

    out(
      `\n${'tenant 1 rows'.padStart(13)} ${'page'.padStart(5)} ${'list'.padEnd(9)} ${'2xx/s'.padStart(8)} ${'p50 ms'.padStart(7)} ${'p99 ms'.padStart(7)} ${'seq p50'.padStart(8)} ${'seq p90'.padStart(8)}  notes\n`,
    );
    for (const size of TABLE_SIZES) {
      const f = await service.call('fillCustomers', { tenantId: 1, total: size });
      results.fills.push({ tenantId: 1, total: size, ...f });
      await clearLists();
      const total = (await patient(base, { path: '/api/v1/customers?limit=1', headers: auth }, [200])).data.total;
      const tableRows = Number((await service.call('sql', { sql: 'SELECT COUNT(*) AS n FROM demo_customers' }))[0].n);
      out(`(tenant 1: ${fmtInt(total)} customers listed, ${fmtInt(tableRows)} rows in demo_customers; filled in ${fmtInt(f.ms)} ms)\n`);

      for (const limit of PAGE_SIZES) {
        for (const cached of [true, false]) {
          const row = { tableSize: size, listed: total, tableRows, pageSize: limit, cached };
          let spec;
          if (cached) {
            const path = `/api/v1/customers?limit=${limit}`;
            await patient(base, { path, headers: auth }, [200]);
            spec = { kind: 'fixed', method: 'GET', path, headers: auth };
            row.load = await runLoad(pin, { ...spec, origin: base, connections: CONNECTIONS, warmupS: WARMUP_S, durationS: DURATION_S });
            row.sequential = await sequential(base, auth, () => path, SEQUENTIAL);
          } else {
            if (total < limit + SKIPS) throw new Error(`tenant 1 lists ${total} customers: too few for uncached pages of ${limit}`);
            const clear = { url: `${base}/api/v1/admin/cache/clear`, headers: jsonAuth, body: '{"scope":"lists"}' };
            spec = {
              kind: 'uncachedList',
              headers: auth,
              params: {
                entityPath: '/api/v1/customers',
                limits: [limit],
                skips: Array.from({ length: SKIPS }, (_, i) => i),
                sortBy: ['id'],
                clear,
              },
            };
            await clearLists();
            row.load = await runLoad(pin, { ...spec, origin: base, connections: CONNECTIONS, warmupS: WARMUP_S, durationS: DURATION_S });
            await clearLists();
            // Every request another page (skip × order), so each one is a miss.
            row.sequential = await sequential(
              base,
              auth,
              (i) => `/api/v1/customers?limit=${limit}&skip=${i % SKIPS}&sortBy=id&sortOrder=${Math.floor(i / SKIPS) % 2 ? 'desc' : 'asc'}`,
              SEQUENTIAL,
            );
          }
          const notes = [];
          const l = row.load;
          // Answers other than 200 (503 OVERLOADED when the service sheds load) are no list read.
          row.okRps = l.total > 0 ? (l.rps * (l.total - l.non2xx)) / l.total : 0;
          if (l.non2xx || l.errors || l.timeouts)
            notes.push(`⚠ ${l.non2xx} non-2xx (${JSON.stringify(l.statusCodes)}), ${l.errors} errors, ${l.timeouts} timeouts`);
          if (l.stats && l.stats.hits + l.stats.misses > 0)
            notes.push(`${((100 * l.stats.hits) / (l.stats.hits + l.stats.misses)).toFixed(1)}% cache hits`);
          if (l.stats?.clearFailures) notes.push(`${l.stats.clearFailures} failed clears`);
          if (row.sequential.shed) notes.push(`${row.sequential.shed} sequential requests shed (503) and sent again`);
          row.notes = notes;
          results.points.push(row);
          out(
            `${pad(fmtInt(size), 13)} ${pad(limit, 5)} ${(cached ? 'cached' : 'uncached').padEnd(9)} ${pad(fmtInt(row.okRps), 8)} ${pad(fmtMs(l.latency.p50), 7)} ${pad(fmtMs(l.latency.p99), 7)} ${pad(fmtMs(row.sequential.p50), 8)} ${pad(fmtMs(row.sequential.p90), 8)}  ${notes.join('; ')}\n`,
          );
        }
      }

      // The first page as the cached list asks for it, and the deepest page the uncached runs ask for.
      const plans = [];
      for (const path of EXPLAIN_PATHS) plans.push(...(await explainList(ctx, path)));
      results.explains.push({ tableSize: size, listed: total, tableRows, plans });
      for (const p of plans)
        out(
          `  plan, ${p.statement} of ${p.path}: ${p.seqScan ? '⚠ SEQUENTIAL SCAN of demo_customers' : 'no sequential scan'}; ` +
            `indexes used: ${p.indexes.join(', ') || 'none'}${p.rowsRemovedByFilter != null ? `; rows removed by filter: ${fmtInt(p.rowsRemovedByFilter)}` : ''}\n`,
        );
    }

    const last = results.explains[results.explains.length - 1];
    if (last) {
      out(`\nThe list's statements at ${fmtInt(last.tableSize)} rows of tenant 1 (${fmtInt(last.tableRows)} in the table), with their plans:\n`);
      for (const p of last.plans)
        out(`\nGET ${p.path} (${p.statement}):\n${p.sql}\n  parameters: ${JSON.stringify(p.params)}\n${p.plan.replace(/^/gm, '    ')}\n`);
    }
    await service.call('close');
    closed = true;
  } finally {
    await stopService(service, dir, { close: !closed });
  }

  // A what-if run (CURVES_EXTRA_INDEXES) never replaces the latest figures of the schema as migrated.
  const kind = EXTRA_INDEXES.length ? 'curves-whatif' : 'curves';
  const names = writeResults(results, { kind, chart: null });
  out(`\nResults: ${names.map((n) => `${n}.json`).join(', ')}\n\n${markdown(results)}\n`);
}

function markdown(r) {
  const m = r.machine;
  const lines = [];
  lines.push(
    `${r.date.slice(0, 10)}, commit ${r.git.commit?.slice(0, 7) ?? '?'}${r.git.srcDirty ? ' (+ local changes)' : ''}, ` +
      `${r.config.db} + ${r.config.cache} cache, ${m.cpuModel}, ${m.cores} cores, Node ${m.node}; ` +
      `${r.pinning ? `service on CPU ${r.pinning.servers}, autocannon on CPU ${r.pinning.load}` : 'not pinned'}; ` +
      `${r.config.connections} connections, ${r.config.warmupS} s warm-up + ${r.config.durationS} s per point; ` +
      `sequential: p50 of ${r.config.sequential} single requests; ${fmtInt(r.config.otherTenantRows)} customers of another tenant in the table` +
      `${r.config.extraIndexes.length ? `; what-if indexes added: ${r.config.extraIndexes.map((c) => `(${c.join(', ')})`).join(', ')}` : ''}.`,
  );
  lines.push('');
  lines.push('| tenant 1 customers (table rows) | page size | list | req/s (2xx) | p50 ms | p99 ms | sequential p50 ms |');
  lines.push('|---:|---:|---|---:|---:|---:|---:|');
  for (const p of r.points)
    lines.push(
      `| ${fmtInt(p.listed)} (${fmtInt(p.tableRows)}) | ${p.pageSize} | ${p.cached ? 'cached' : 'uncached'}${p.notes.length ? ` (${p.notes.join('; ')})` : ''} | ${fmtInt(p.okRps)} | ${fmtMs(p.load.latency.p50)} | ${fmtMs(p.load.latency.p99)} | ${fmtMs(p.sequential.p50)} |`,
    );
  lines.push('');
  lines.push(`Indexes on demo_customers: ${r.indexes.map((i) => `\`${i.definition.replace(/^CREATE (UNIQUE )?INDEX \S+ ON \S+ USING /, '')}\``).join(', ')}.`);
  for (const e of r.explains)
    lines.push(
      `At ${fmtInt(e.listed)} customers of tenant 1 (${fmtInt(e.tableRows)} rows): ${e.plans
        .map(
          (p) =>
            `\`${p.path.replace('/api/v1/customers', '')}\` ${p.statement}: ${p.seqScan ? '**sequential scan**' : 'no sequential scan'}` +
            `${p.indexes.length ? `, ${p.indexes.join(', ')}` : ''}${p.rowsRemovedByFilter != null ? `, ${fmtInt(p.rowsRemovedByFilter)} rows removed by filter` : ''}`,
        )
        .join('; ')}.`,
    );
  return lines.join('\n');
}

main().catch((err) => {
  process.stderr.write(`${err.stack ?? err}\n`);
  process.exit(1);
});
