#!/usr/bin/env node
'use strict';
/**
 * The typed client (`client/`, @mtb/client) used as an integrator uses it (issue 20): a scratch
 * project outside the repository links the built package, a small program is compiled with
 * `tsc --strict` (it must type-check; its @ts-expect-error lines must stay errors) and run against
 * the service, started here on a temporary SQLite database with the demo data on a free port:
 * sign-in, a typed list, the workflows with `[0].code`, a save with If-Match, a stale save → CONFLICT,
 * imports of a CSV string and of a Blob, a typed dataview page and a typed live row (issue 34).
 *   node scripts/client-scratch-check.js        (CI: .ci/run)
 */
const { execFileSync, spawn } = require('node:child_process');
const { randomBytes } = require('node:crypto');
const { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } = require('node:fs');
const { createServer } = require('node:net');
const { tmpdir } = require('node:os');
const { join } = require('node:path');

const ROOT = join(__dirname, '..');
const PASSWORD = 'Scratch-Passw0rd!';

const PROGRAM = `import { ApiError, createApiClient, unwrap } from '@mtb/client';

async function main(): Promise<void> {
  const [baseUrl, tenantHeader, password] = process.argv.slice(2);
  const client = createApiClient({ baseUrl, tenantHeader });
  await client.signIn('admin@acme.test', password);

  const page = await unwrap(client.api.GET('/api/v1/customers', { params: { query: { limit: 5, sortBy: 'name' } } }));
  const first = page.records[0];
  // Optional: a profile may project a field out (the read schema requires only the key and lastModified).
  const name: string | undefined = first.name;
  const total: number = page.total;

  const workflows = await unwrap(client.api.GET('/api/v1/workflows'));
  const code: string = workflows[0].code;
  const raw = await client.api.GET('/api/v1/workflows');
  // @ts-expect-error the body is the envelope {success, data, meta}, not the array
  const wrong = raw.data?.[0];
  if (wrong !== undefined) throw new Error('the raw body was an array');

  const customer = await client.getRecord('customers', first.id);
  const credit = (customer.credit_limit ?? 0) + 1;
  const saved = await client.saveRecord('customers', customer.id, { credit_limit: credit }, customer.lastModified);
  if (saved.credit_limit !== credit) throw new Error('the save did not answer the new value');
  let conflict = '';
  try {
    await client.saveRecord('customers', customer.id, { credit_limit: credit + 1 }, customer.lastModified);
  } catch (e) {
    if (!(e instanceof ApiError)) throw e;
    conflict = e.code;
  }
  if (conflict !== 'CONFLICT') throw new Error('a stale save answered ' + (conflict || 'success'));

  // Imports (issue 34): a CSV string goes as text/csv, bytes as the multipart part \`file\`.
  const fromText = await client.imports.upload('customers', 'name,email,tier\\nScratch One,one@scratch.example,gold\\n', {
    onError: 'abort',
  });
  const textJob = await client.imports.wait(fromText.importId, { intervalMs: 50 });
  const fromBytes = await client.imports.upload('customers', new Blob(['Full name,Mail\\nScratch Two,two@scratch.example\\n']), {
    mapping: { 'Full name': 'name', Mail: 'email' },
  });
  const bytesJob = await client.imports.wait(fromBytes.importId, { intervalMs: 50 });
  const outcome: 'PENDING' | 'RUNNING' | 'COMPLETED' | 'FAILED' | 'CANCELLED' = bytesJob.status;
  if (textJob.created !== 1 || outcome !== 'COMPLETED' || bytesJob.created !== 1)
    throw new Error('the imports answered ' + JSON.stringify([textJob, bytesJob]));
  // @ts-expect-error a number is no file
  if (Date.now() < 0) await client.imports.upload('customers', 42);

  // A dataview page keeps its rows and its pagination together; rows have the Customer schema.
  const grid = await client.dataviews.page<'customers'>('customers_grid', {
    filters: [{ fieldCode: 'email', operator: 'ends_with', value: '@scratch.example' }],
    sort: [{ fieldCode: 'name', direction: 'asc' }],
  });
  const tier: 'bronze' | 'silver' | 'gold' | null | undefined = grid.rows[0]?.tier;
  const gridTotal = 'total' in grid.pagination ? grid.pagination.total : -1;
  // @ts-expect-error credit_limit is a number
  const notText: string = grid.rows[0].credit_limit;
  if (gridTotal !== 2 || tier !== 'gold' || grid.rows[1]?.name !== 'Scratch Two' || notText === 'x')
    throw new Error('the grid page answered ' + JSON.stringify(grid));

  // Live changes: rows typed by the entity (Customer); a save while the stream is open shows up.
  const stop = new AbortController();
  const stream = client.changes('customers', { signal: stop.signal });
  const firstEvent = stream.next();
  let version = saved.lastModified;
  let liveName: string | undefined;
  const seen = firstEvent.then((r) => (r.done || r.value.event === 'reset' ? undefined : r.value.data.row?.name));
  for (let i = 0; i < 20 && liveName === undefined; i++) {
    version = (await client.saveRecord('customers', customer.id, { name: 'Scratch live ' + i }, version)).lastModified;
    liveName = await Promise.race([seen, new Promise<undefined>((r) => setTimeout(r, 500, undefined))]);
  }
  stop.abort();
  if (liveName === undefined || !liveName.startsWith('Scratch live')) throw new Error('no live change arrived');

  await client.signOut();
  process.stdout.write(JSON.stringify({ name, total, code, saved: saved.lastModified, conflict, gridTotal, liveName }) + '\\n');
}

main().catch((err: unknown) => {
  process.stderr.write(String(err instanceof Error ? err.stack : err) + '\\n');
  process.exit(1);
});
`;

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

async function waitReady(url, child) {
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null) throw new Error(`the service exited with ${child.exitCode}`);
    try {
      if ((await fetch(`${url}/readyz`)).status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error('the service did not become ready in 60 s');
}

async function main() {
  const run = (cmd, args, opts = {}) => execFileSync(cmd, args, { cwd: ROOT, stdio: 'inherit', ...opts });
  run(process.execPath, [join(ROOT, 'scripts', 'build-if-stale.js'), '--quiet']);
  run('npm', ['run', '-s', 'build', '-w', 'client']);

  const scratch = mkdtempSync(join(tmpdir(), 'mtb-client-scratch-'));
  let service;
  try {
    // The project: its own package.json and tsconfig, @mtb/client linked as `npm link` would.
    mkdirSync(join(scratch, 'node_modules', '@mtb'), { recursive: true });
    symlinkSync(join(ROOT, 'client'), join(scratch, 'node_modules', '@mtb', 'client'), 'dir');
    writeFileSync(join(scratch, 'package.json'), JSON.stringify({ name: 'scratch', private: true, type: 'commonjs' }));
    writeFileSync(join(scratch, 'main.ts'), PROGRAM);
    const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    run(process.execPath, [
      tsc,
      '--strict',
      '--target', 'es2022',
      '--module', 'nodenext',
      '--moduleResolution', 'nodenext',
      '--lib', 'es2022,dom',
      '--types', 'node',
      '--typeRoots', join(ROOT, 'node_modules', '@types'),
      '--skipLibCheck',
      '--outDir', join(scratch, 'out'),
      join(scratch, 'main.ts'),
    ], { cwd: scratch });

    const port = await freePort();
    const key = randomBytes(32).toString('hex');
    service = spawn(process.execPath, [join(ROOT, 'dist', 'main.js')], {
      cwd: scratch,
      stdio: ['ignore', 'ignore', 'inherit'],
      env: {
        PATH: process.env.PATH,
        NODE_ENV: 'development',
        API_PORT: String(port),
        API_HOST: '127.0.0.1',
        DB_NAME: join(scratch, 'service.sqlite'),
        EXPORT_DIR: join(scratch, 'exports'),
        SEED_DEMO: 'true',
        DEMO_PASSWORD: PASSWORD,
        JWT_SECRET: randomBytes(48).toString('base64url'),
        TENANT_ENCRYPTION_KEY: key,
        LOG_LEVEL: 'error',
      },
    });
    const url = `http://127.0.0.1:${port}`;
    await waitReady(url, service);
    const { encryptTenantHeader } = require(join(ROOT, 'dist', 'tenant', 'tenant-header.crypto.js'));
    run(process.execPath, [join(scratch, 'out', 'main.js'), url, encryptTenantHeader('1', key), PASSWORD], {
      cwd: scratch,
    });
    process.stdout.write(`client scratch check: compiled with tsc --strict and ran against ${url}: passed\n`);
  } finally {
    if (service && service.exitCode === null) {
      service.kill('SIGTERM');
      await new Promise((r) => service.once('exit', r));
    }
    rmSync(scratch, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`client scratch check failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
