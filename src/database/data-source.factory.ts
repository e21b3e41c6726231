import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DataSource, DataSourceOptions } from 'typeorm';
import type { DatabaseConfig } from '../config/config.schema';
import { MIGRATIONS } from './migrations';
import { bindSqliteIntegers } from './dialect/sqlite-binding';
import { trackSqliteTransactions } from './dialect/sqlite-transactions';

export const MIGRATIONS_TABLE = 'app_migrations';

/** TypeORM options for one DB_TYPE (D1). Schema comes only from migrations: synchronize stays off. */
export function dataSourceOptions(db: DatabaseConfig): DataSourceOptions {
  const common = {
    synchronize: false,
    logging: false,
    migrations: MIGRATIONS,
    migrationsTableName: MIGRATIONS_TABLE,
  } as const;
  switch (db.type) {
    case 'sqlite':
      if (db.name !== ':memory:') mkdirSync(dirname(db.name), { recursive: true });
      return {
        ...common,
        type: 'better-sqlite3',
        database: db.name,
        // WAL lets readers run beside the single writer; busy timeout instead of SQLITE_BUSY errors.
        prepareDatabase: (conn: { pragma(sql: string): unknown }) => {
          conn.pragma('journal_mode = WAL');
          conn.pragma('busy_timeout = 5000');
          conn.pragma('foreign_keys = ON');
        },
      };
    case 'postgres':
      return {
        ...common,
        type: 'postgres',
        host: db.host,
        port: db.port,
        username: db.user,
        password: db.password,
        database: db.name,
        poolSize: db.pool.max,
        connectTimeoutMS: db.connectionTimeoutMs,
        extra: { min: db.pool.min, idleTimeoutMillis: db.pool.idleTimeoutMs },
      };
    case 'mariadb':
    case 'mysql':
      return {
        ...common,
        type: db.type,
        host: db.host,
        port: db.port,
        username: db.user,
        password: db.password,
        database: db.name,
        charset: 'utf8mb4_unicode_ci',
        timezone: 'Z',
        poolSize: db.pool.max,
        connectTimeout: db.connectionTimeoutMs,
        extra: { maxIdle: db.pool.min, idleTimeout: db.pool.idleTimeoutMs },
      };
    case 'mssql':
      return {
        ...common,
        type: 'mssql',
        host: db.host,
        port: db.port,
        username: db.user,
        password: db.password,
        database: db.name,
        connectionTimeout: db.connectionTimeoutMs,
        options: { encrypt: db.mssql.encrypt, trustServerCertificate: db.mssql.trustServerCertificate },
        pool: {
          max: db.pool.max,
          min: db.pool.min,
          idleTimeoutMillis: db.pool.idleTimeoutMs,
          acquireTimeoutMillis: db.pool.acquireTimeoutMs,
        },
      };
  }
}

export function createDataSource(db: DatabaseConfig): DataSource {
  return trackSqliteTransactions(bindSqliteIntegers(new DataSource(dataSourceOptions(db))));
}

/**
 * Creates the configured database on a server dialect when it does not exist yet, so that a new
 * operator only has to point DB_* at a server. Connects to the server's maintenance database.
 */
export async function ensureDatabaseExists(db: DatabaseConfig): Promise<boolean> {
  if (db.type === 'sqlite') return false;
  const admin: DatabaseConfig = {
    ...db,
    name: db.type === 'postgres' ? 'postgres' : db.type === 'mssql' ? 'master' : '',
    pool: { ...db.pool, max: 1, min: 0 },
  };
  const ds = createDataSource(admin);
  await ds.initialize();
  try {
    if (db.type === 'postgres') {
      const rows = await ds.query<unknown[]>('SELECT 1 FROM pg_database WHERE datname = $1', [db.name]);
      if (rows.length > 0) return false;
      await ds.query(`CREATE DATABASE ${ds.driver.escape(db.name)}`);
      return true;
    }
    if (db.type === 'mssql') {
      const rows = await ds.query<unknown[]>('SELECT 1 AS x WHERE DB_ID(@0) IS NOT NULL', [db.name]);
      if (rows.length > 0) return false;
      await ds.query(`CREATE DATABASE ${ds.driver.escape(db.name)}`);
      return true;
    }
    const rows = await ds.query<unknown[]>(
      'SELECT 1 FROM information_schema.schemata WHERE schema_name = ?',
      [db.name],
    );
    if (rows.length > 0) return false;
    await ds.query(
      `CREATE DATABASE ${ds.driver.escape(db.name)} CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`,
    );
    return true;
  } finally {
    await ds.destroy();
  }
}
