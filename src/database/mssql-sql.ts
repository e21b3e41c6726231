import { errorMessage } from '../common/errors/error-message';
import { randomBytes } from 'node:crypto';
import { DataSource, QueryRunner } from 'typeorm';
import { DatabaseConfig, loadConfig } from '../config/config.schema';
import { createDataSource } from './data-source.factory';

/**
 * SQL Server without a server: the real `mssql` driver and TypeORM's real SqlServerDriver /
 * SqlServerQueryRunner, but a DataSource that is never initialised, so no pool and no socket
 * exist. Used to check the SQL that the mssql path generates (migrations, query builders) on
 * machines where SQL Server cannot run. Runtime code only: no test dependency.
 */

type Env = Record<string, string | undefined>;

/**
 * The DB_* configuration for DB_TYPE=mssql as the real config loader produces it from `env`
 * (defaults: 127.0.0.1:1433, user sa, database mtb, encrypt on). Only the `db` section is
 * returned; the JWT / tenant keys loadConfig insists on are throw-away random values.
 */
export function mssqlDatabaseConfig(env: Env = {}): DatabaseConfig {
  const config = loadConfig(
    { ...env, NODE_ENV: 'test', DB_TYPE: 'mssql' },
    {
      devSecrets: () => ({
        jwtSecret: randomBytes(32).toString('hex'),
        tenantEncryptionKey: randomBytes(32).toString('hex'),
      }),
    },
  );
  return config.db;
}

/**
 * A DataSource with the application's own mssql options (dataSourceOptions), NOT initialised.
 * Query builders and query runners created from it generate SQL Server SQL; anything that
 * would actually run a statement fails with TypeORM's "Driver not Connected".
 */
export function mssqlDataSource(env: Env = {}): DataSource {
  return createDataSource(mssqlDatabaseConfig(env));
}

export interface GeneratedSql {
  /** The statements in execution order. */
  up: string[];
  /** TypeORM's inverse statements, in the order it would run them to undo `up`. */
  down: string[];
}

/**
 * Runs `work` (e.g. a migration's `up`) on a query runner in TypeORM's SQL-in-memory mode and
 * returns the SQL it would have executed. In that mode QueryRunner.executeQueries only records
 * statements; anything that reads the database first (hasTable, getTable, createTable with
 * ifNotExist = true, dropTable with ifExist = true, ...) still calls `query`, which rejects on a
 * DataSource that was never initialised, so such work fails loudly instead of guessing.
 */
export async function generateSql(
  ds: DataSource,
  work: (qr: QueryRunner) => Promise<void>,
): Promise<GeneratedSql> {
  if (ds.isInitialized) throw new Error('generateSql expects a DataSource that is not connected');
  const qr = ds.createQueryRunner();
  try {
    qr.enableSqlMemory();
    try {
      await work(qr);
    } catch (err) {
      throw new Error(
        `Generating SQL offline failed; the work probably needs a live database ` + `(${errorMessage(err)})`,
        { cause: err },
      );
    }
    const memory = qr.getMemorySql();
    for (const q of [...memory.upQueries, ...memory.downQueries]) {
      if (q.parameters !== undefined && q.parameters.length > 0) {
        throw new Error(`Unexpected bound parameters in generated DDL: ${q.query}`);
      }
    }
    return {
      up: memory.upQueries.map((q) => q.query),
      // executeMemoryDownSql replays downQueries last-first; return them in that order.
      down: [...memory.downQueries].reverse().map((q) => q.query),
    };
  } finally {
    qr.disableSqlMemory();
    await qr.release();
  }
}
