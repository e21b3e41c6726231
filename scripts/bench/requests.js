'use strict';
/**
 * The request sequences of the HTTP scenarios, as autocannon `requests` arrays. Loaded by the load
 * runner (load.js), in the load generator's process: per-request state (counters, the update pool,
 * the cache-miss check) lives here, never in the server under test.
 *
 * A sequence is built from a plain, JSON-serialisable spec ({ kind, method, path, headers, body,
 * params }) so the orchestrator can hand it over on the command line. The same spec is sent to the
 * service and to the bare Fastify server; only `params.service` differs (side tasks such as the
 * periodic list-cache clear run against the service only).
 */

/** The same request every time: autocannon builds its bytes once. */
function fixed(spec) {
  return () => [{ method: spec.method, path: spec.path, headers: spec.headers, body: spec.body }];
}

/** GET of one path from a list, in turn (single-row reads over many ids). */
function rotate(spec) {
  const paths = spec.params.paths;
  let i = 0;
  return () => [
    {
      method: 'GET',
      path: paths[0],
      headers: spec.headers,
      setupRequest: (req) => ({ ...req, path: paths[i++ % paths.length] }),
    },
  ];
}

/**
 * Uncached list pages: every request a (limit, skip, sortBy, sortOrder) combination, in turn, so
 * consecutive requests never share the D27 cache key; the combinations repeat after `cycle`
 * requests, so the runner clears the tenant's list pages (POST /api/v1/admin/cache/clear, scope
 * lists) five times per cycle: a key is cleared between two uses as long as a clear is answered
 * within four fifths of a cycle (under load the clear queues behind the other requests).
 * `meta.retrievedAt` tells a miss (computed after the request was built) from a hit (computed
 * before): the hits are counted and reported.
 */
function uncachedList(spec) {
  const { entityPath, limits, skips, sortBy, clear } = spec.params;
  const combos = [];
  for (const limit of limits)
    for (const skip of skips)
      for (const field of sortBy)
        for (const order of ['asc', 'desc'])
          combos.push(`${entityPath}?limit=${limit}&skip=${skip}&sortBy=${field}&sortOrder=${order}`);
  const clearEvery = Math.max(1, Math.floor(combos.length / 5));
  const stats = { cycle: combos.length, clearEvery, clears: 0, clearFailures: 0, hits: 0, misses: 0 };
  let i = 0;
  const fireClear = () => {
    stats.clears++;
    fetch(clear.url, { method: 'POST', headers: clear.headers, body: clear.body })
      .then(async (res) => {
        await res.arrayBuffer();
        if (res.status !== 200) stats.clearFailures++;
      })
      .catch(() => stats.clearFailures++);
  };
  const requests = () => [
    {
      method: 'GET',
      path: combos[0],
      headers: spec.headers,
      setupRequest: (req, context) => {
        if (clear && i > 0 && i % clearEvery === 0) fireClear();
        context.builtAt = Date.now();
        return { ...req, path: combos[i++ % combos.length] };
      },
      // The body is only read to check the miss; the bare server's copy is never a miss.
      onResponse: clear
        ? (status, body, context) => {
            const m = /"retrievedAt":"([^"]+)"/.exec(body);
            if (!m || status !== 200) return;
            if (Date.parse(m[1]) < context.builtAt - 5) stats.hits++;
            else stats.misses++;
          }
        : undefined,
    },
  ];
  requests.stats = () => stats;
  return requests;
}

/** POST of a new record with a unique e-mail each time. */
function create(spec) {
  const { path, prefix } = spec.params;
  let n = 0;
  return () => [
    {
      method: 'POST',
      path,
      headers: spec.headers,
      setupRequest: (req) => {
        n++;
        return {
          ...req,
          body: JSON.stringify({
            name: `Bench ${n}`,
            email: `${prefix}${n}@acme.example`,
            tier: 'gold',
            credit_limit: n % 100000,
          }),
        };
      },
    },
  ];
}

/**
 * PUT of a record as read, with one field edited (the read-edit-save round trip of docs/entities-and-profiles.md, D42):
 * a pool of rows, each read once before the run; a connection takes a row, sends it back with its
 * lastModified and a new credit_limit, and returns the row to the pool with the whole record the
 * save answered (its new lastModified). A row is only ever in one request at a time, so no 409.
 */
function update(spec) {
  const { rows, pathPrefix } = spec.params;
  const pool = rows.map((r) => ({ id: r.id, record: r }));
  const stats = { conflicts: 0, poolEmpty: 0 };
  let n = 0;
  const requests = () => [
    {
      method: 'PUT',
      path: `${pathPrefix}${pool[0].id}`,
      headers: spec.headers,
      setupRequest: (req, context) => {
        let item = pool.shift();
        if (!item) {
          stats.poolEmpty++;
          item = { ...rows[n % rows.length], record: rows[n % rows.length] };
        }
        context.item = item;
        n++;
        return {
          ...req,
          path: `${pathPrefix}${item.id}`,
          body: JSON.stringify({ ...item.record, credit_limit: 1000 + (n % 100000) }),
        };
      },
      onResponse: (status, body, context) => {
        const item = context.item;
        if (!item) return;
        context.item = undefined;
        try {
          const parsed = JSON.parse(body);
          if (status === 200) item.record = parsed.data;
          else if (status === 409) {
            stats.conflicts++;
            item.record = { ...item.record, lastModified: parsed.error.details.lastModified };
          }
        } catch {
          // keep the last record; the next save shows whether it is still current
        }
        pool.push(item);
      },
    },
  ];
  requests.stats = () => stats;
  return requests;
}

/**
 * Several sequences in one (the soak's mixed read load): `params.parts` are specs of the kinds
 * above; each connection sends their requests in turn (autocannon cycles through the array).
 * `.stats()` merges the parts' counters.
 */
function mix(spec) {
  const parts = spec.params.parts.map((part) => build({ headers: spec.headers, ...part }));
  const requests = () => parts.flatMap((p) => p());
  if (parts.some((p) => p.stats))
    requests.stats = () => Object.assign({}, ...parts.filter((p) => p.stats).map((p) => p.stats()));
  return requests;
}

const KINDS = { fixed, rotate, uncachedList, create, update, mix };

/** A function that returns a fresh `requests` array (state shared between calls); `.stats()` optional. */
function build(spec) {
  const kind = KINDS[spec.kind];
  if (!kind) throw new Error(`unknown request kind ${spec.kind}`);
  return kind(spec);
}

module.exports = { build };
