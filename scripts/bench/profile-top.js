#!/usr/bin/env node
'use strict';
/**
 * The top functions of a V8 .cpuprofile by self time and by inclusive time, as shares of the busy
 * (non-idle) samples: node scripts/bench/profile-top.js <file.cpuprofile> [count] [filter]
 * `filter` keeps only frames whose url contains it (e.g. /dist/ for the service's own code).
 * PROFILE_SKIP_MS=<ms> leaves out the samples of the first <ms> (start-up, seeding).
 */
const { readFileSync } = require('node:fs');

const [file, countArg, filter] = process.argv.slice(2);
if (!file) {
  process.stderr.write('usage: profile-top.js <file.cpuprofile> [count] [url filter]\n');
  process.exit(2);
}
const count = Number(countArg ?? 30);
const profile = JSON.parse(readFileSync(file, 'utf8'));
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const hits = new Map();
const skipUs = Number(process.env.PROFILE_SKIP_MS ?? 0) * 1000;
let t = 0;
profile.samples.forEach((id, i) => {
  t += profile.timeDeltas[i] ?? 0;
  if (t >= skipUs) hits.set(id, (hits.get(id) ?? 0) + 1);
});

const name = (n) => {
  const f = n.callFrame;
  const url = f.url.replace(/^file:\/\//, '').replace(/.*node_modules\//, '~/').replace(/.*\/dist\//, 'dist/');
  return `${f.functionName || '(anonymous)'} ${url}:${f.lineNumber + 1}`;
};
const IDLE = new Set(['(idle)', '(program)', '(garbage collector)']);
let busy = 0;
const self = new Map();
const inclusive = new Map();
for (const [id, n] of hits) {
  const node = byId.get(id);
  if (IDLE.has(node.callFrame.functionName) && node.callFrame.functionName !== '(garbage collector)') continue;
  busy += n;
  self.set(name(node), (self.get(name(node)) ?? 0) + n);
  const seen = new Set();
  for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
    const key = name(byId.get(cur));
    if (seen.has(key)) continue;
    seen.add(key);
    inclusive.set(key, (inclusive.get(key) ?? 0) + n);
  }
}
const top = (map, title) => {
  process.stdout.write(`\n${title} (share of ${busy} busy samples)\n`);
  [...map.entries()]
    .filter(([k]) => !filter || k.includes(filter))
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .forEach(([k, v]) => process.stdout.write(`${((100 * v) / busy).toFixed(1).padStart(5)}%  ${k}\n`));
};
top(self, 'Self time');
top(inclusive, 'Inclusive time');
