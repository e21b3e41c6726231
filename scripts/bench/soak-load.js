#!/usr/bin/env node
'use strict';
/**
 * The soak's load generator, in a process of its own (pinned like load.js): one autocannon run of
 * spec.durationS at spec.rate requests per second over all connections (autocannon's overallRate),
 * with the request sequence of spec (requests.js). Every spec.intervalS it prints one JSON line on
 * stdout with that interval's figures ({ type: 'interval', elapsedS, requests, rps, p50, p99, max,
 * non2xx, errors, timeouts }: latencies of the answers received in the interval, in ms), and at
 * the end one line { type: 'done', … } with the figures of the whole run.
 */
const autocannon = require('autocannon');
const { build } = require('./requests');

function percentile(sorted, q) {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

async function main() {
  const spec = JSON.parse(process.argv[2]);
  const requests = build(spec);
  const emit = (o) => process.stdout.write(`${JSON.stringify(o)}\n`);
  let times = [];
  const all = [];
  let non2xx = 0;
  let errors = 0;
  let timeouts = 0;
  const started = Date.now();
  let last = started;
  const flush = () => {
    const now = Date.now();
    const sorted = Float64Array.from(times).sort();
    emit({
      type: 'interval',
      elapsedS: (now - started) / 1000,
      requests: sorted.length,
      rps: sorted.length / ((now - last) / 1000),
      p50: percentile(sorted, 0.5),
      p99: percentile(sorted, 0.99),
      max: sorted.length ? sorted[sorted.length - 1] : null,
      non2xx,
      errors,
      timeouts,
    });
    times = [];
    non2xx = errors = timeouts = 0;
    last = now;
  };
  const instance = autocannon({
    url: spec.origin,
    connections: spec.connections,
    pipelining: 1,
    duration: spec.durationS,
    overallRate: spec.rate,
    timeout: 30,
    requests: requests(),
  });
  instance.on('response', (_client, statusCode, _bytes, responseTime) => {
    times.push(responseTime);
    all.push(responseTime);
    if (statusCode < 200 || statusCode > 299) non2xx++;
  });
  instance.on('reqError', (err) => {
    if (err && err.code === 'REQUEST_TIMEOUT') timeouts++;
    else errors++;
  });
  const timer = setInterval(flush, spec.intervalS * 1000);
  const r = await instance;
  clearInterval(timer);
  // The tail since the last full interval (reported when it is at least a second long).
  if (Date.now() - last >= 1000) flush();
  emit({
    type: 'done',
    rps: r.requests.average,
    total: r.requests.total,
    durationS: r.duration,
    // The answers' own times, as the intervals report them (autocannon's figures at a fixed rate
    // also count the requests it could not send on time: kept as autocannonLatency).
    latency: (() => {
      const sorted = Float64Array.from(all).sort();
      return {
        p50: percentile(sorted, 0.5),
        p90: percentile(sorted, 0.9),
        p99: percentile(sorted, 0.99),
        max: sorted.length ? sorted[sorted.length - 1] : null,
      };
    })(),
    autocannonLatency: { average: r.latency.average, p50: r.latency.p50, p90: r.latency.p90, p99: r.latency.p99, max: r.latency.max },
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    statusCodes: r.statusCodeStats,
  });
}

main().catch((err) => {
  process.stderr.write(`${err.stack ?? err}\n`);
  process.exit(1);
});
