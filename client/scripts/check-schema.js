#!/usr/bin/env node
'use strict';
/**
 * Fails (exit 1) when src/schema.d.ts is not exactly what openapi-typescript makes of openapi.json:
 * the committed types must be regenerated whenever the committed document changes.
 *   npm run check:types -w client        (fix: npm run generate:types -w client)
 */
const { execFileSync } = require('node:child_process');
const { mkdtempSync, readFileSync, rmSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { dirname, join } = require('node:path');

const clientDir = join(__dirname, '..');
const cli = join(
  dirname(require.resolve('openapi-typescript/package.json', { paths: [clientDir] })),
  'bin',
  'cli.js',
);
const dir = mkdtempSync(join(tmpdir(), 'mtb-client-schema-'));
try {
  const fresh = join(dir, 'schema.d.ts');
  execFileSync(process.execPath, [cli, join(clientDir, 'openapi.json'), '-o', fresh], { stdio: 'pipe' });
  const committed = readFileSync(join(clientDir, 'src', 'schema.d.ts'), 'utf8');
  if (readFileSync(fresh, 'utf8') !== committed) {
    process.stderr.write(
      'client/src/schema.d.ts is stale: it differs from what openapi-typescript generates from client/openapi.json.\n' +
        'Run `npm run generate:types -w client` (or `npm run generate -w client` to refresh the document too).\n',
    );
    process.exit(1);
  }
  process.stdout.write('client/src/schema.d.ts matches client/openapi.json\n');
} finally {
  rmSync(dir, { recursive: true, force: true });
}
