/**
 * The one place that reads the environment (STYLE: "process.env is read in one place").
 * Every variable of spec §8 and DECISIONS.md is declared here with its default; `loadConfig`
 * validates all of them and reports every bad one at once.
 */
export type DbType = 'sqlite' | 'postgres' | 'mariadb' | 'mysql' | 'mssql';
export type NodeEnv = 'development' | 'production' | 'test';
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export interface DatabaseConfig {
  type: DbType;
  host: string;
  port: number;
  user: string;
  password: string;
  /** Database name; for sqlite the file path. */
  name: string;
  runMigrations: boolean;
  pool: { max: number; min: number; idleTimeoutMs: number; acquireTimeoutMs: number };
  mssql: { encrypt: boolean; trustServerCertificate: boolean };
  connectionTimeoutMs: number;
  connectMaxAttempts: number;
  concurrentWaitTimeoutMs: number;
  resumeMaxWaitMs: number;
  externalConnectTimeoutMs: number;
}

export interface AppConfig {
  nodeEnv: NodeEnv;
  isProduction: boolean;
  api: {
    host: string;
    port: number;
    publicUrl: string | undefined;
    bodyLimitBytes: number;
    shutdownTimeoutMs: number;
  };
  log: { level: LogLevel; pretty: boolean };
  db: DatabaseConfig;
  cache: { url: string | undefined; keyPrefix: string; startupMaxAttempts: number; startupRetryMs: number };
  auth: { jwtSecret: string; jwtExpiresIn: string; tenantHeaderMaxAgeS: number };
  crypto: { tenantEncryptionKey: string; connectionEncryptionKey: string };
  rateLimit: { points: number; windowS: number };
  /** Entity writes: how long a write waits for the lock of a unique value (value-lock.ts). */
  writes: { lockTimeoutMs: number };
  exports: { ttlS: number; dir: string };
  smtpUrl: string | undefined;
  /** From address of the service's mail (MAIL_FROM). */
  mailFrom: string;
  demo: { seed: boolean; password: string | undefined };
  metricsEnabled: boolean;
  /** The tenant reverse proxy (`npm run proxy`, D7); the service itself does not read it. */
  proxy: {
    host: string;
    port: number;
    /** Base URL of the service the proxy forwards to. */
    upstream: string;
    /** `<tenant_code>.<baseDomain>` names a tenant. */
    baseDomain: string;
    tenantCacheTtlS: number;
    tenantMissTtlS: number;
  };
  /** Names of secrets that were generated for development because none were set. */
  generatedSecrets: string[];
}

/** One variable: its default and a description (the .env.example line). */
export interface VariableSpec {
  name: string;
  description: string;
  default?: string;
  secret?: boolean;
}

export const VARIABLES: readonly VariableSpec[] = [
  { name: 'NODE_ENV', default: 'development', description: 'development | production | test' },
  { name: 'API_HOST', default: '0.0.0.0', description: 'Interface the HTTP server binds to' },
  { name: 'API_PORT', default: '8008', description: 'HTTP port (spec §8)' },
  {
    name: 'PUBLIC_URL',
    description: 'URL printed in the banner and docs; defaults to http://localhost:API_PORT',
  },
  { name: 'LOG_LEVEL', default: 'info', description: 'debug | info | warn | error' },
  {
    name: 'LOG_FORMAT',
    default: 'auto',
    description: 'json | pretty | auto (pretty on a terminal outside production)',
  },
  { name: 'DB_TYPE', default: 'sqlite', description: 'sqlite | postgres | mariadb | mysql | mssql (D1)' },
  { name: 'DB_HOST', default: '127.0.0.1', description: 'Database host (server dialects)' },
  { name: 'DB_PORT', description: 'Database port; defaults to 5432 / 3306 / 1433 by dialect' },
  { name: 'DB_USER', description: 'Database user; defaults to postgres / root / sa by dialect' },
  { name: 'DB_PASSWORD', default: '', description: 'Database password', secret: true },
  {
    name: 'DB_NAME',
    description: 'Database name; for sqlite the file (default ./data/app.sqlite, else mtb)',
  },
  { name: 'DB_RUN_MIGRATIONS', default: 'true', description: 'Run pending migrations at start-up' },
  { name: 'DB_POOL_MAX', default: '100', description: 'Connection pool maximum (spec §8 example)' },
  { name: 'DB_POOL_MIN', default: '10', description: 'Connection pool minimum' },
  { name: 'DB_POOL_IDLE_TIMEOUT_MS', default: '30000', description: 'Idle connection timeout' },
  { name: 'DB_POOL_ACQUIRE_TIMEOUT_MS', default: '60000', description: 'Pool acquire timeout' },
  { name: 'DB_ENCRYPT', default: 'true', description: 'SQL Server: encrypt the connection' },
  {
    name: 'DB_TRUST_SERVER_CERTIFICATE',
    default: 'false',
    description: 'SQL Server: accept a self-signed certificate',
  },
  { name: 'SQL_CONNECTION_TIMEOUT', default: '120000', description: 'Per connect attempt, ms' },
  {
    name: 'SQL_CONNECT_MAX_ATTEMPTS',
    default: '25',
    description: 'Connect attempts on transient errors, with backoff',
  },
  {
    name: 'SQL_CONCURRENT_WAIT_TIMEOUT_MS',
    default: '180000',
    description: 'Wait for a connect already in progress, ms',
  },
  {
    name: 'SQL_RESUME_MAX_WAIT_MS',
    default: '180000',
    description: 'Total time the externalDbs routine may retry, ms',
  },
  {
    name: 'SQL_EXTERNAL_CONNECT_TIMEOUT_MS',
    description: 'Connect timeout for external connections; falls back to SQL_CONNECTION_TIMEOUT',
  },
  {
    name: 'CACHE_URL',
    description: 'redis://host:port/db for Redis; unset = in-process cache (D2)',
    secret: true,
  },
  { name: 'CACHE_KEY_PREFIX', default: 'mtb', description: 'Prefix of every cache key (D2)' },
  {
    name: 'CACHE_STARTUP_MAX_ATTEMPTS',
    default: '20',
    description: 'Connect + PING attempts at start-up (spec §3.3)',
  },
  {
    name: 'CACHE_STARTUP_RETRY_MS',
    default: '500',
    description: 'First retry delay of the cache start-up loop (doubles, max 5 s)',
  },
  {
    name: 'JWT_SECRET',
    description: 'HS256 secret, at least 32 bytes outside development (D13)',
    secret: true,
  },
  { name: 'JWT_EXPIRES_IN', default: '24h', description: 'Token lifetime: seconds or 30m / 24h / 7d' },
  {
    name: 'TENANT_ENCRYPTION_KEY',
    description: '32-byte key, 64 hex chars or base64; shared with the proxy (D5)',
    secret: true,
  },
  {
    name: 'CONNECTION_ENCRYPTION_KEY',
    description: 'Key for app_connections strings; falls back to TENANT_ENCRYPTION_KEY (D3)',
    secret: true,
  },
  {
    name: 'TENANT_HEADER_MAX_AGE_S',
    default: '0',
    description: 'Reject tenant headers older than this; 0 = off (D6)',
  },
  { name: 'RATE_LIMIT_POINTS', default: '1000', description: 'Requests per tenant per window (D39)' },
  { name: 'RATE_LIMIT_WINDOW_S', default: '10', description: 'Rate-limit window, seconds (D39)' },
  { name: 'BODY_LIMIT_BYTES', default: '1048576', description: 'Largest request body; larger → 413 (D39)' },
  {
    name: 'WRITE_LOCK_TIMEOUT_MS',
    default: '10000',
    description: 'Longest wait of an entity write for the lock of a unique value; then 409',
  },
  { name: 'EXPORT_TTL_S', default: '3600', description: 'How long exports stay downloadable (D32)' },
  {
    name: 'EXPORT_DIR',
    default: './data/exports',
    description: 'Where exports are kept in the embedded default (D32)',
  },
  { name: 'SMTP_URL', description: 'smtp://user:pass@host:port for sign-up mail (D15)', secret: true },
  {
    name: 'MAIL_FROM',
    default: 'no-reply@localhost',
    description: 'Sender (From) of sign-up mail: address or "Name <address>" (D15)',
  },
  {
    name: 'SEED_DEMO',
    default: 'auto',
    description: 'Seed DEMO.md data at start-up: auto (embedded sqlite outside production) | true | false',
  },
  {
    name: 'DEMO_PASSWORD',
    description: 'Password of the demo users; required to seed in production',
    secret: true,
  },
  {
    name: 'SHUTDOWN_TIMEOUT_MS',
    default: '10000',
    description: 'Longest graceful shutdown before the process exits',
  },
  { name: 'METRICS_ENABLED', default: 'true', description: 'Serve Prometheus metrics at /metrics' },
  {
    name: 'PROXY_HOST',
    default: '0.0.0.0',
    description: 'Tenant proxy (npm run proxy, D7): interface it binds to',
  },
  { name: 'PROXY_PORT', default: '8080', description: 'Tenant proxy: HTTP port' },
  {
    name: 'PROXY_UPSTREAM',
    description: 'Tenant proxy: URL of the service; defaults to http://127.0.0.1:API_PORT',
  },
  {
    name: 'PROXY_BASE_DOMAIN',
    default: 'localhost',
    description: 'Tenant proxy: Host <tenant_code>.<this> selects the tenant',
  },
  {
    name: 'PROXY_TENANT_CACHE_TTL_S',
    default: '30',
    description: 'Tenant proxy: how long a tenant code lookup is cached, seconds',
  },
  {
    name: 'PROXY_TENANT_MISS_TTL_S',
    default: '5',
    description: 'Tenant proxy: how long an unknown or inactive tenant code is cached, seconds',
  },
];

export class ConfigValidationError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigValidationError';
  }
}

type Env = Record<string, string | undefined>;

const DEFAULT_PORTS: Record<DbType, number> = {
  sqlite: 0,
  postgres: 5432,
  mariadb: 3306,
  mysql: 3306,
  mssql: 1433,
};
const DEFAULT_USERS: Record<DbType, string> = {
  sqlite: '',
  postgres: 'postgres',
  mariadb: 'root',
  mysql: 'root',
  mssql: 'sa',
};

/** Parses `30`, `30s`, `15m`, `24h`, `7d` into seconds; undefined when malformed. */
export function parseDurationSeconds(value: string): number | undefined {
  const m = /^(\d+)\s*(s|m|h|d)?$/.exec(value.trim());
  if (!m) return undefined;
  const n = Number(m[1]);
  const unit = m[2] ?? 's';
  const factor = { s: 1, m: 60, h: 3600, d: 86400 }[unit] ?? 1;
  const seconds = n * factor;
  return seconds > 0 ? seconds : undefined;
}

/** Decodes a 32-byte key given as 64 hex characters or base64; undefined otherwise (D5). */
export function decodeKey32(value: string | undefined): Buffer | undefined {
  if (!value) return undefined;
  const v = value.trim();
  if (/^[0-9a-fA-F]{64}$/.test(v)) return Buffer.from(v, 'hex');
  if (/^[A-Za-z0-9+/]{43}=?$/.test(v) || /^[A-Za-z0-9_-]{43}$/.test(v)) {
    const buf = Buffer.from(v, 'base64');
    if (buf.length === 32) return buf;
  }
  return undefined;
}

class Reader {
  readonly problems: string[] = [];
  constructor(private readonly env: Env) {}

  raw(name: string): string | undefined {
    const v = this.env[name];
    if (v === undefined || v.trim() === '') {
      return VARIABLES.find((x) => x.name === name)?.default;
    }
    return v.trim();
  }

  str(name: string): string | undefined {
    return this.raw(name);
  }

  oneOf<T extends string>(name: string, allowed: readonly T[]): T {
    const v = this.raw(name) ?? allowed[0];
    if (!(allowed as readonly string[]).includes(v)) {
      this.problems.push(`${name}: must be one of ${allowed.join(', ')} (got "${v}")`);
      return allowed[0];
    }
    return v as T;
  }

  int(name: string, opts: { min?: number; max?: number; fallback?: number } = {}): number {
    const v = this.raw(name);
    if (v === undefined) return opts.fallback ?? 0;
    if (!/^-?\d+$/.test(v)) {
      this.problems.push(`${name}: must be an integer (got "${v}")`);
      return opts.fallback ?? 0;
    }
    const n = Number(v);
    if ((opts.min !== undefined && n < opts.min) || (opts.max !== undefined && n > opts.max)) {
      this.problems.push(`${name}: must be between ${opts.min ?? '-∞'} and ${opts.max ?? '∞'} (got ${n})`);
    }
    return n;
  }

  bool(name: string): boolean {
    const v = (this.raw(name) ?? 'false').toLowerCase();
    if (['true', '1', 'yes', 'on'].includes(v)) return true;
    if (['false', '0', 'no', 'off'].includes(v)) return false;
    this.problems.push(`${name}: must be true or false (got "${v}")`);
    return false;
  }
}

export interface LoadConfigOptions {
  /** Supplies development secrets when JWT_SECRET / TENANT_ENCRYPTION_KEY are unset (not in production). */
  devSecrets?: () => { jwtSecret: string; tenantEncryptionKey: string };
  isTty?: boolean;
}

export function loadConfig(env: Env, options: LoadConfigOptions = {}): AppConfig {
  const r = new Reader(env);
  const nodeEnv = r.oneOf<NodeEnv>('NODE_ENV', ['development', 'production', 'test']);
  const isProduction = nodeEnv === 'production';
  const dbType = r.oneOf<DbType>('DB_TYPE', ['sqlite', 'postgres', 'mariadb', 'mysql', 'mssql']);
  const port = r.int('API_PORT', { min: 0, max: 65535 });

  const generatedSecrets: string[] = [];
  let jwtSecret = r.str('JWT_SECRET');
  let tenantKey = r.str('TENANT_ENCRYPTION_KEY');
  if ((!jwtSecret || !tenantKey) && !isProduction && options.devSecrets) {
    const dev = options.devSecrets();
    if (!jwtSecret) {
      jwtSecret = dev.jwtSecret;
      generatedSecrets.push('JWT_SECRET');
    }
    if (!tenantKey) {
      tenantKey = dev.tenantEncryptionKey;
      generatedSecrets.push('TENANT_ENCRYPTION_KEY');
    }
  }
  if (!jwtSecret) r.problems.push('JWT_SECRET: required');
  else if (Buffer.byteLength(jwtSecret) < 32 && nodeEnv !== 'development') {
    r.problems.push('JWT_SECRET: must be at least 32 bytes outside development (D13)');
  }
  if (!tenantKey) r.problems.push('TENANT_ENCRYPTION_KEY: required');
  else if (!decodeKey32(tenantKey)) {
    r.problems.push('TENANT_ENCRYPTION_KEY: must be 32 bytes as 64 hex characters or base64 (D5)');
  }
  const connectionKey = r.str('CONNECTION_ENCRYPTION_KEY');
  if (connectionKey && !decodeKey32(connectionKey)) {
    r.problems.push('CONNECTION_ENCRYPTION_KEY: must be 32 bytes as 64 hex characters or base64 (D3)');
  }

  const jwtExpiresIn = r.str('JWT_EXPIRES_IN') ?? '24h';
  if (parseDurationSeconds(jwtExpiresIn) === undefined) {
    r.problems.push(
      `JWT_EXPIRES_IN: must be seconds or a duration such as 30m, 24h, 7d (got "${jwtExpiresIn}")`,
    );
  }

  const cacheUrl = r.str('CACHE_URL');
  if (cacheUrl && !/^rediss?:\/\/./.test(cacheUrl)) {
    r.problems.push('CACHE_URL: must start with redis:// or rediss://');
  }
  const smtpUrl = r.str('SMTP_URL');
  if (smtpUrl && !/^smtps?:\/\/./.test(smtpUrl))
    r.problems.push('SMTP_URL: must start with smtp:// or smtps://');
  const mailFrom = r.str('MAIL_FROM') ?? 'no-reply@localhost';
  if (!/^[^@\s<>]+@[^@\s<>]+$|<[^@\s<>]+@[^@\s<>]+>$/.test(mailFrom)) {
    r.problems.push(`MAIL_FROM: must be an e-mail address or "Name <address>" (got "${mailFrom}")`);
  }

  const seedRaw = r.oneOf('SEED_DEMO', ['auto', 'true', 'false']);
  const demoPassword = r.str('DEMO_PASSWORD');
  const seed = seedRaw === 'auto' ? dbType === 'sqlite' && !isProduction : seedRaw === 'true';
  if (seed && isProduction && !demoPassword) {
    r.problems.push('DEMO_PASSWORD: required to seed demo data in production');
  }

  const proxyUpstream = r.str('PROXY_UPSTREAM') ?? `http://127.0.0.1:${port}`;
  if (!/^https?:\/\/[^/?#\s]+\/?$/.test(proxyUpstream)) {
    r.problems.push(`PROXY_UPSTREAM: must be http(s)://host[:port] (got "${proxyUpstream}")`);
  }
  const proxyBaseDomain = (r.str('PROXY_BASE_DOMAIN') ?? 'localhost').toLowerCase().replace(/^\.+|\.+$/g, '');
  if (!/^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/.test(proxyBaseDomain)) {
    r.problems.push(
      `PROXY_BASE_DOMAIN: must be a host name such as localhost or example.com (got "${proxyBaseDomain}")`,
    );
  }

  const connectionTimeoutMs = r.int('SQL_CONNECTION_TIMEOUT', { min: 1 });
  const logFormat = r.oneOf('LOG_FORMAT', ['auto', 'json', 'pretty']);

  const config: AppConfig = {
    nodeEnv,
    isProduction,
    api: {
      host: r.str('API_HOST') ?? '0.0.0.0',
      port,
      publicUrl: r.str('PUBLIC_URL'),
      bodyLimitBytes: r.int('BODY_LIMIT_BYTES', { min: 1024 }),
      shutdownTimeoutMs: r.int('SHUTDOWN_TIMEOUT_MS', { min: 100 }),
    },
    log: {
      level: r.oneOf<LogLevel>('LOG_LEVEL', ['info', 'debug', 'warn', 'error']),
      pretty: logFormat === 'pretty' || (logFormat === 'auto' && !isProduction && options.isTty === true),
    },
    db: {
      type: dbType,
      host: r.str('DB_HOST') ?? '127.0.0.1',
      port: r.int('DB_PORT', { min: 1, max: 65535, fallback: DEFAULT_PORTS[dbType] }),
      user: r.str('DB_USER') ?? DEFAULT_USERS[dbType],
      password: env.DB_PASSWORD ?? '',
      name: r.str('DB_NAME') ?? (dbType === 'sqlite' ? './data/app.sqlite' : 'mtb'),
      runMigrations: r.bool('DB_RUN_MIGRATIONS'),
      pool: {
        max: r.int('DB_POOL_MAX', { min: 1 }),
        min: r.int('DB_POOL_MIN', { min: 0 }),
        idleTimeoutMs: r.int('DB_POOL_IDLE_TIMEOUT_MS', { min: 0 }),
        acquireTimeoutMs: r.int('DB_POOL_ACQUIRE_TIMEOUT_MS', { min: 1 }),
      },
      mssql: { encrypt: r.bool('DB_ENCRYPT'), trustServerCertificate: r.bool('DB_TRUST_SERVER_CERTIFICATE') },
      connectionTimeoutMs,
      connectMaxAttempts: r.int('SQL_CONNECT_MAX_ATTEMPTS', { min: 1 }),
      concurrentWaitTimeoutMs: r.int('SQL_CONCURRENT_WAIT_TIMEOUT_MS', { min: 0 }),
      resumeMaxWaitMs: r.int('SQL_RESUME_MAX_WAIT_MS', { min: 0 }),
      externalConnectTimeoutMs: r.int('SQL_EXTERNAL_CONNECT_TIMEOUT_MS', {
        min: 1,
        fallback: connectionTimeoutMs,
      }),
    },
    cache: {
      url: cacheUrl,
      keyPrefix: r.str('CACHE_KEY_PREFIX') ?? 'mtb',
      startupMaxAttempts: r.int('CACHE_STARTUP_MAX_ATTEMPTS', { min: 1 }),
      startupRetryMs: r.int('CACHE_STARTUP_RETRY_MS', { min: 1 }),
    },
    auth: {
      jwtSecret: jwtSecret ?? '',
      jwtExpiresIn,
      tenantHeaderMaxAgeS: r.int('TENANT_HEADER_MAX_AGE_S', { min: 0 }),
    },
    crypto: {
      tenantEncryptionKey: tenantKey ?? '',
      connectionEncryptionKey: connectionKey ?? tenantKey ?? '',
    },
    rateLimit: {
      points: r.int('RATE_LIMIT_POINTS', { min: 1 }),
      windowS: r.int('RATE_LIMIT_WINDOW_S', { min: 1 }),
    },
    writes: { lockTimeoutMs: r.int('WRITE_LOCK_TIMEOUT_MS', { min: 1 }) },
    exports: { ttlS: r.int('EXPORT_TTL_S', { min: 1 }), dir: r.str('EXPORT_DIR') ?? './data/exports' },
    smtpUrl,
    mailFrom,
    demo: { seed, password: demoPassword },
    metricsEnabled: r.bool('METRICS_ENABLED'),
    proxy: {
      host: r.str('PROXY_HOST') ?? '0.0.0.0',
      port: r.int('PROXY_PORT', { min: 0, max: 65535 }),
      upstream: proxyUpstream.replace(/\/$/, ''),
      baseDomain: proxyBaseDomain,
      tenantCacheTtlS: r.int('PROXY_TENANT_CACHE_TTL_S', { min: 0 }),
      tenantMissTtlS: r.int('PROXY_TENANT_MISS_TTL_S', { min: 0 }),
    },
    generatedSecrets,
  };
  if (config.db.pool.min > config.db.pool.max) r.problems.push('DB_POOL_MIN: must not exceed DB_POOL_MAX');
  if (r.problems.length > 0) throw new ConfigValidationError(r.problems);
  return config;
}
