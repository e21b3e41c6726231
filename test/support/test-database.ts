import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { DatabaseConfig, loadConfig } from '../../src/config/config.schema';
import { createDataSource, ensureDatabaseExists } from '../../src/database/data-source.factory';
import { TEST_REDIS_DB } from './redis-keys';

export type TestDialect = 'sqlite' | 'postgres' | 'mariadb';

/** The dialect this test run targets: TEST_DB=sqlite (default) | postgres | mariadb. */
export function testDialect(): TestDialect {
  const v = (process.env.TEST_DB ?? 'sqlite').toLowerCase();
  if (v === 'sqlite' || v === 'postgres' || v === 'mariadb') return v;
  throw new Error(`TEST_DB must be sqlite, postgres or mariadb (got ${v})`);
}

/** The machine's Redis, for the tests that are about Redis itself and run on every set-up. */
export function realRedisUrl(): string {
  return process.env.TEST_REDIS_URL ?? `redis://127.0.0.1:6379/${TEST_REDIS_DB}`;
}

/** Redis URL for tests that run against Redis (TEST_CACHE=redis), otherwise undefined = in-process. */
export function testCacheUrl(): string | undefined {
  return (process.env.TEST_CACHE ?? '').toLowerCase() === 'redis'
    ? (process.env.TEST_REDIS_URL ?? `redis://127.0.0.1:6379/${TEST_REDIS_DB}`)
    : undefined;
}

export const TEST_SECRETS = {
  JWT_SECRET: 'test-jwt-secret-that-is-long-enough-0123456789',
  TENANT_ENCRYPTION_KEY: '7f3a1c9e5b2d4f6a8c0e1b3d5f7a9c2e4b6d8f0a1c3e5b7d9f2a4c6e8b0d1f3a',
};

export interface TestDatabase {
  dialect: TestDialect;
  /** Environment variables that point the app at this database. */
  env: Record<string, string>;
  config: DatabaseConfig;
  drop(): Promise<void>;
}

/**
 * A database of its own for one test file (STYLE: files run in any order). Refuses any database
 * whose name lacks "test", so a test can never touch a real one.
 */
export async function createTestDatabase(
  label: string,
  dialect: TestDialect = testDialect(),
): Promise<TestDatabase> {
  const safe = label
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .slice(0, 30);
  const name = `mtb_test_${safe}_${randomBytes(3).toString('hex')}`;
  if (!name.includes('test')) throw new Error(`Refusing to use database ${name}: its name lacks "test"`);
  const env: Record<string, string> =
    dialect === 'sqlite'
      ? { DB_TYPE: 'sqlite', DB_NAME: join(tmpdir(), `${name}.sqlite`) }
      : dialect === 'postgres'
        ? {
            DB_TYPE: 'postgres',
            DB_HOST: '127.0.0.1',
            DB_PORT: '5432',
            DB_USER: 'postgres',
            DB_PASSWORD: '',
            DB_NAME: name,
          }
        : {
            DB_TYPE: 'mariadb',
            DB_HOST: '127.0.0.1',
            DB_PORT: '3306',
            DB_USER: 'root',
            DB_PASSWORD: '',
            DB_NAME: name,
          };
  env.DB_POOL_MAX = '5';
  env.DB_POOL_MIN = '0';
  const config = loadConfig({ ...TEST_SECRETS, NODE_ENV: 'test', ...env }).db;
  await ensureDatabaseExists(config);
  return {
    dialect,
    env,
    config,
    drop: async () => {
      if (dialect === 'sqlite') {
        for (const suffix of ['', '-wal', '-shm']) rmSync(`${config.name}${suffix}`, { force: true });
        return;
      }
      const admin = createDataSource({ ...config, name: dialect === 'postgres' ? 'postgres' : '' });
      await admin.initialize();
      try {
        const force = dialect === 'postgres' ? ' WITH (FORCE)' : '';
        await admin.query(`DROP DATABASE IF EXISTS ${admin.driver.escape(name)}${force}`);
      } finally {
        await admin.destroy();
      }
    },
  };
}

/** An initialised DataSource on the test database, migrations applied. */
export async function migratedDataSource(db: TestDatabase): Promise<DataSource> {
  const ds = createDataSource(db.config);
  await ds.initialize();
  await ds.runMigrations({ transaction: 'each' });
  return ds;
}
