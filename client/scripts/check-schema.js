#!/usr/bin/env node
'use strict';
/**
 * Fails (exit 1) when src/schema.d.ts is not exactly what scripts/generate-types.js (openapi-typescript
 * with binary strings typed as Blob) makes of openapi.json: the committed types must be regenerated
 * whenever the committed document changes.
 *   npm run check:types -w client        (fix: npm run generate:types -w client)
 */
const { readFileSync } = require('node:fs');
const { join } = require('node:path');
const { generate } = require('./generate-types');

generate().then(
  (fresh) => {
    const committed = readFileSync(join(__dirname, '..', 'src', 'schema.d.ts'), 'utf8');
    if (fresh !== committed) {
      process.stderr.write(
        'client/src/schema.d.ts is stale: it differs from what scripts/generate-types.js makes of client/openapi.json.\n' +
          'Run `npm run generate:types -w client` (or `npm run generate -w client` to refresh the document too).\n',
      );
      process.exit(1);
    }
    process.stdout.write('client/src/schema.d.ts matches client/openapi.json\n');
  },
  (err) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  },
);
