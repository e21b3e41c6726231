#!/usr/bin/env node
'use strict';
/**
 * The load generator of one scenario against one server, in a process of its own (the orchestrator
 * pins it to a core of its own with taskset): a warm-up run, whose figures are dropped, then the
 * measured run. Argument: a JSON spec (see requests.js) with origin, connections, warmupS,
 * durationS. Prints the figures as one JSON line on stdout.
 */
const autocannon = require('autocannon');
const { build } = require('./requests');

async function run(spec, requests, duration) {
  return autocannon({
    url: spec.origin,
    connections: spec.connections,
    pipelining: 1,
    duration,
    timeout: 30,
    requests: requests(),
  });
}

async function main() {
  const spec = JSON.parse(process.argv[2]);
  const requests = build(spec);
  if (spec.warmupS > 0) {
    const warm = await run(spec, requests, spec.warmupS);
    // The server still answers the warm-up's last requests after autocannon has hung up: let it
    // finish them before the measured run (at most 5 s).
    await new Promise((resolve) => setTimeout(resolve, Math.min(5000, warm.latency.max || 0)));
  }
  const before = requests.stats ? JSON.stringify(requests.stats()) : null;
  const r = await run(spec, requests, spec.durationS);
  const statsBefore = before ? JSON.parse(before) : null;
  const statsAfter = requests.stats ? requests.stats() : null;
  // Counters of the measured run only (the warm-up's are subtracted).
  let stats = null;
  if (statsAfter) {
    stats = {};
    for (const [k, v] of Object.entries(statsAfter))
      stats[k] = ['cycle', 'clearEvery'].includes(k) ? v : v - (statsBefore[k] ?? 0);
  }
  process.stdout.write(
    `${JSON.stringify({
      rps: r.requests.average,
      total: r.requests.total,
      durationS: r.duration,
      latency: {
        average: r.latency.average,
        p50: r.latency.p50,
        p90: r.latency.p90,
        p99: r.latency.p99,
        max: r.latency.max,
      },
      bytesPerSec: r.throughput.average,
      non2xx: r.non2xx,
      errors: r.errors,
      timeouts: r.timeouts,
      statusCodes: r.statusCodeStats,
      stats,
    })}\n`,
  );
}

main().catch((err) => {
  process.stderr.write(`${err.stack ?? err}\n`);
  process.exit(1);
});
