import { resolve } from 'node:path';
import type { DataSourceOptions } from 'typeorm';
import type { DatabaseConfig, DbType } from '../../config/config.schema';
import { dataSourceOptions } from '../data-source.factory';

/**
 * The decrypted `con_connection_string` (D3) is a URL:
 *
 *   postgres://user:pass@host:5432/db        (also postgresql://)
 *   mysql://user:pass@host:3306/db           mariadb://…
 *   mssql://user:pass@host:1433/db           (also sqlserver://)
 *   sqlite:///absolute/path/file.sqlite      sqlite:./relative/file.sqlite (relative to the cwd)
 *
 * User name and password are percent-decoded. Optional query parameters: `poolMax`, `poolMin`
 * (all server dialects), `encrypt`, `trustServerCertificate` (mssql only); any other parameter
 * is refused so that a typo is not silently ignored. Parsing errors never repeat the URL, which
 * holds a password.
 */
export const EXTERNAL_POOL_MAX = 10;

export class ConnectionUrlError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConnectionUrlError';
  }
}

export interface ParsedConnectionUrl {
  type: DbType;
  host: string;
  port: number;
  user: string;
  password: string;
  /** Database name; for sqlite the absolute file path. */
  name: string;
  poolMax?: number;
  poolMin?: number;
  encrypt?: boolean;
  trustServerCertificate?: boolean;
}

const SCHEMES: Record<string, DbType> = {
  postgres: 'postgres',
  postgresql: 'postgres',
  mysql: 'mysql',
  mariadb: 'mariadb',
  mssql: 'mssql',
  sqlserver: 'mssql',
  sqlite: 'sqlite',
};

const DEFAULT_PORTS: Record<Exclude<DbType, 'sqlite'>, number> = {
  postgres: 5432,
  mysql: 3306,
  mariadb: 3306,
  mssql: 1433,
};

const DEFAULT_USERS: Record<Exclude<DbType, 'sqlite'>, string> = {
  postgres: 'postgres',
  mysql: 'root',
  mariadb: 'root',
  mssql: 'sa',
};

function decode(part: string, what: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw new ConnectionUrlError(`the ${what} has a malformed percent-encoding`);
  }
}

function positiveInt(value: string, param: string, min: number): number {
  if (!/^\d{1,6}$/.test(value) || Number(value) < min) {
    throw new ConnectionUrlError(`query parameter ${param} must be an integer >= ${min}`);
  }
  return Number(value);
}

function bool(value: string, param: string): boolean {
  const v = value.toLowerCase();
  if (['true', '1', 'yes'].includes(v)) return true;
  if (['false', '0', 'no'].includes(v)) return false;
  throw new ConnectionUrlError(`query parameter ${param} must be true or false`);
}

function parseSqlite(rest: string): ParsedConnectionUrl {
  let path = rest;
  if (path.startsWith('//')) {
    path = path.slice(2);
    if (!path.startsWith('/')) {
      throw new ConnectionUrlError('sqlite URLs are sqlite:///absolute/path or sqlite:./relative/path');
    }
  }
  path = decode(path, 'sqlite path');
  if (path === '' || path === ':memory:' || path.endsWith('/')) {
    throw new ConnectionUrlError('a sqlite URL needs a database file path');
  }
  return { type: 'sqlite', host: '', port: 0, user: '', password: '', name: resolve(path) };
}

/** Parses a decrypted connection URL; throws ConnectionUrlError. */
export function parseConnectionUrl(raw: string): ParsedConnectionUrl {
  const value = raw.trim();
  const schemeMatch = /^([a-z][a-z0-9+.-]*):/i.exec(value);
  if (!schemeMatch) throw new ConnectionUrlError('not a URL (expected <scheme>://…)');
  const scheme = schemeMatch[1].toLowerCase();
  const type = SCHEMES[scheme];
  if (!type) {
    throw new ConnectionUrlError(
      `unsupported scheme "${scheme}" (supported: ${Object.keys(SCHEMES).join(', ')})`,
    );
  }
  if (type === 'sqlite') return parseSqlite(value.slice(schemeMatch[0].length));

  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConnectionUrlError(`malformed ${scheme} URL`);
  }
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  if (host === '' || !value.slice(schemeMatch[0].length).startsWith('//')) {
    throw new ConnectionUrlError(
      `the ${scheme} URL has no host (expected ${scheme}://user:pass@host:port/db)`,
    );
  }
  const name = decode(url.pathname.replace(/^\//, ''), 'database name');
  if (name === '' || name.includes('/')) {
    throw new ConnectionUrlError(`the ${scheme} URL needs exactly one database name after the host`);
  }
  if (url.hash) throw new ConnectionUrlError(`the ${scheme} URL must not have a #fragment`);
  const parsed: ParsedConnectionUrl = {
    type,
    host,
    port: url.port ? Number(url.port) : DEFAULT_PORTS[type],
    user: decode(url.username, 'user name') || DEFAULT_USERS[type],
    password: decode(url.password, 'password'),
    name,
  };
  for (const [key, v] of url.searchParams) {
    switch (key) {
      case 'poolMax':
        parsed.poolMax = positiveInt(v, key, 1);
        break;
      case 'poolMin':
        parsed.poolMin = positiveInt(v, key, 0);
        break;
      case 'encrypt':
      case 'trustServerCertificate':
        if (type !== 'mssql') throw new ConnectionUrlError(`query parameter ${key} applies to mssql only`);
        parsed[key] = bool(v, key);
        break;
      default:
        throw new ConnectionUrlError(
          `unknown query parameter "${key}" (supported: poolMax, poolMin, encrypt, trustServerCertificate)`,
        );
    }
  }
  if (parsed.poolMin !== undefined && parsed.poolMin > (parsed.poolMax ?? EXTERNAL_POOL_MAX)) {
    throw new ConnectionUrlError('query parameter poolMin must not exceed poolMax');
  }
  return parsed;
}

/**
 * A DatabaseConfig for an external pool: the URL's target, a smaller pool (at most
 * EXTERNAL_POOL_MAX unless the URL says poolMax, no idle minimum), SQL_EXTERNAL_CONNECT_TIMEOUT_MS
 * per attempt, and the configuration database's retry limits and pool timeouts.
 */
export function externalDatabaseConfig(parsed: ParsedConnectionUrl, base: DatabaseConfig): DatabaseConfig {
  const max = parsed.poolMax ?? Math.min(EXTERNAL_POOL_MAX, base.pool.max);
  return {
    ...base,
    type: parsed.type,
    host: parsed.host,
    port: parsed.port,
    user: parsed.user,
    password: parsed.password,
    name: parsed.name,
    runMigrations: false,
    pool: { ...base.pool, max, min: Math.min(parsed.poolMin ?? 0, max) },
    mssql: {
      encrypt: parsed.encrypt ?? base.mssql.encrypt,
      trustServerCertificate: parsed.trustServerCertificate ?? base.mssql.trustServerCertificate,
    },
    connectionTimeoutMs: base.externalConnectTimeoutMs,
  };
}

/**
 * TypeORM options of an external pool: dataSourceOptions() of the dialect, without the
 * configuration database's migrations (they must never run on someone else's database); a sqlite
 * file must already exist.
 */
export function externalDataSourceOptions(db: DatabaseConfig): DataSourceOptions {
  const options = { ...dataSourceOptions(db), migrations: [] };
  return options.type === 'better-sqlite3' ? { ...options, fileMustExist: true } : options;
}

/** Where a connection points, for logs: never the password. */
export function describeTarget(db: DatabaseConfig): string {
  return db.type === 'sqlite'
    ? `sqlite ${db.name}`
    : `${db.type} ${db.user}@${db.host}:${db.port}/${db.name}`;
}

/** con_connection_type values the service can open, and the URL schemes each accepts. */
const CONNECTION_TYPES: Record<string, readonly DbType[]> = {
  postgresql: ['postgres'],
  postgres: ['postgres'],
  mysql: ['mysql', 'mariadb'],
  mariadb: ['mariadb', 'mysql'],
  mssql: ['mssql'],
  sqlserver: ['mssql'],
  sqlite: ['sqlite'],
};

/**
 * Checks con_connection_type against the URL's dialect (case-insensitive). Returns the problem,
 * or undefined when they agree. MySQL and MariaDB accept each other's scheme (one driver).
 */
export function connectionTypeProblem(connectionType: string, urlType: DbType): string | undefined {
  const key = connectionType.trim().toLowerCase();
  const accepted = CONNECTION_TYPES[key];
  if (!accepted) {
    return `con_connection_type "${connectionType}" is not supported (supported: ${Object.keys(CONNECTION_TYPES).join(', ')})`;
  }
  if (!accepted.includes(urlType)) {
    return `con_connection_type "${connectionType}" does not match the URL scheme (${urlType})`;
  }
  return undefined;
}

/** The con_connection_type to store for a URL's dialect (used by the CLI's hint). */
export function connectionTypeFor(type: DbType): string {
  return type === 'postgres' ? 'postgresql' : type;
}
