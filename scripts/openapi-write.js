#!/usr/bin/env node
'use strict';
/**
 * Writes the service's OpenAPI document, exactly as GET /api-docs/json serves it, to a file
 * (default client/openapi.json) without a server: the built app (dist/) on the embedded default
 * (SQLite file in a temp dir, demo seed, in-process cache), started in process and asked once.
 *   npm run openapi:write [-- <file>]
 */
const { mkdtempSync, rmSync, writeFileSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join, resolve } = require('node:path');

const dist = (p) => require(join(__dirname, '..', 'dist', p));

async function main() {
  const out = resolve(process.argv[2] ?? join(__dirname, '..', 'client', 'openapi.json'));
  const dir = mkdtempSync(join(tmpdir(), 'mtb-openapi-'));
  const { loadConfig } = dist('config/config.schema.js');
  const { createApp } = dist('bootstrap.js');
  const { StartupService } = dist('health/startup.service.js');
  const { randomBytes } = require('node:crypto');
  const config = loadConfig({
    // Throw-away secrets: nothing signed or encrypted here outlives the process.
    JWT_SECRET: randomBytes(48).toString('base64url'),
    TENANT_ENCRYPTION_KEY: randomBytes(32).toString('hex'),
    NODE_ENV: 'development',
    DB_NAME: join(dir, 'openapi.sqlite'),
    SEED_DEMO: 'true',
    LOG_LEVEL: 'error',
    WORKFLOW_WORKER: 'off',
  });
  const app = await createApp(config, { logger: false });
  try {
    await app.init();
    await app.getHttpAdapter().getInstance().ready();
    await app.get(StartupService).settled();
    const res = await app.getHttpAdapter().getInstance().inject({ url: '/api-docs/json' });
    if (res.statusCode !== 200) throw new Error(`GET /api-docs/json answered ${res.statusCode}`);
    writeFileSync(out, JSON.stringify(JSON.parse(res.body), null, 2) + '\n');
    process.stdout.write(`OpenAPI document written to ${out}\n`);
  } finally {
    await app.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`openapi:write failed: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  },
);
