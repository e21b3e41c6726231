#!/usr/bin/env node
'use strict';
/**
 * Sums the contract check's reports (CONTRACT_REPORT_DIR, one JSON file per e2e app; see
 * test/support/contract/contract-recorder.ts): answers checked, violations by kind, operations and
 * statuses touched. Exits 1 when any answer violated the document.
 *   node scripts/contract-summary.js <dir>
 */
const { readdirSync, readFileSync } = require('node:fs');
const { join } = require('node:path');

const dir = process.argv[2];
if (!dir) {
  process.stderr.write('usage: contract-summary.js <CONTRACT_REPORT_DIR>\n');
  process.exit(2);
}
let files = [];
try {
  files = readdirSync(dir).filter((f) => f.endsWith('.json'));
} catch {
  files = [];
}
let exchanges = 0;
let unchecked = 0;
const violations = [];
const touched = new Map();
for (const f of files) {
  const r = JSON.parse(readFileSync(join(dir, f), 'utf8'));
  exchanges += r.exchanges;
  unchecked += r.unchecked ?? 0;
  violations.push(...r.violations.map((v) => ({ ...v, app: r.label })));
  for (const [op, statuses] of Object.entries(r.touched)) {
    const set = touched.get(op) ?? new Set();
    statuses.forEach((s) => set.add(s));
    touched.set(op, set);
  }
}
const kinds = new Map();
for (const v of violations) {
  const kind = `[${v.side}] ${v.operation} ${v.status}: ${v.message.replace(/\d+/g, 'N').slice(0, 140)}`;
  kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
}
const statuses = [...touched.values()].reduce((n, s) => n + s.size, 0);
console.log(
  `contract: ${exchanges} answers checked in ${files.length} apps (${unchecked} unchecked: the app never ` +
    `served its document), ${violations.length} violations ` +
    `(${kinds.size} kinds), ${touched.size} operations and ${statuses} operation statuses touched`,
);
for (const [kind, n] of [...kinds].sort((a, b) => b[1] - a[1])) console.log(`  ${String(n).padStart(5)} × ${kind}`);
process.exit(violations.length > 0 ? 1 : 0);
