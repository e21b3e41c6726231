/**
 * `npm run migration:run`: creates the configured database if needed and applies pending
 * migrations, each in its own transaction, without starting the service.
 */
import { configFromProcessEnv } from '../../config/environment';
import { createDataSource, ensureDatabaseExists } from '../data-source.factory';

async function main(): Promise<void> {
  const { db } = configFromProcessEnv();
  const target = db.type === 'sqlite' ? db.name : `${db.name} on ${db.host}:${db.port}`;
  process.stdout.write(`migrate: ${db.type} database ${target}\n`);
  if (await ensureDatabaseExists(db)) process.stdout.write(`migrate: created database ${db.name}\n`);
  const dataSource = createDataSource(db);
  await dataSource.initialize();
  try {
    const applied = await dataSource.runMigrations({ transaction: 'each' });
    for (const m of applied) process.stdout.write(`migrate: applied ${m.name}\n`);
    process.stdout.write(
      applied.length === 0 ? 'migrate: up to date\n' : `migrate: ${applied.length} applied\n`,
    );
  } finally {
    await dataSource.destroy();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`migrate failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});
