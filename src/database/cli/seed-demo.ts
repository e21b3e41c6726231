/**
 * `npm run seed:demo`: creates the configured database if needed, applies pending migrations and
 * seeds the demo data set (docs/demo-data.md). Safe to run again: the seed is idempotent.
 */
import { configFromProcessEnv } from '../../config/environment';
import { createDataSource, ensureDatabaseExists } from '../data-source.factory';
import { DEV_DEMO_PASSWORD } from '../seed/demo-data';
import { seedDemo } from '../seed/demo-seed';

function out(msg: string): void {
  process.stdout.write(`${msg}\n`);
}

function err(msg: string): void {
  process.stderr.write(`${msg}\n`);
}

async function main(): Promise<number> {
  const config = configFromProcessEnv();
  if (config.isProduction && !config.demo.password) {
    err('seed-demo: DEMO_PASSWORD is required in production; nothing was seeded.');
    return 1;
  }
  const db = config.db;
  const target = db.type === 'sqlite' ? db.name : `${db.name} on ${db.host}:${db.port}`;
  out(`seed-demo: ${db.type} database ${target}`);

  if (await ensureDatabaseExists(db)) out(`seed-demo: created database ${db.name}`);
  const dataSource = createDataSource(db);
  await dataSource.initialize();
  try {
    const migrations = await dataSource.runMigrations({ transaction: 'each' });
    out(`seed-demo: ${migrations.length} migration(s) applied`);
    const { inserted } = await seedDemo(dataSource, {
      password: config.demo.password ?? DEV_DEMO_PASSWORD,
      log: (msg) => out(`seed-demo:   ${msg}`),
    });
    const total = Object.values(inserted).reduce((sum, n) => sum + n, 0);
    out(
      total === 0
        ? 'seed-demo: already seeded, nothing inserted'
        : `seed-demo: done, ${total} row(s) inserted`,
    );
  } finally {
    await dataSource.destroy();
  }
  if (!config.demo.password) {
    out(
      `seed-demo: demo users sign in with the development password "${DEV_DEMO_PASSWORD}" (set DEMO_PASSWORD to change it)`,
    );
  }
  return 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    err(`seed-demo failed: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 1;
  },
);
