import { availableParallelism } from 'node:os';
import { decodeKey32 } from './parse';
import { splitKeyList } from './key-ring';
import { localUrlFor } from './service-address';
import { Env, readAll, Values, VariableSpec } from './variable';
import { VARS } from './variables';

export { decodeKey32, parseDurationSeconds } from './parse';
export type { VariableSpec } from './variable';

/**
 * The typed configuration and its assembly from the environment (STYLE: "process.env is read in
 * one place"). Each variable is declared once in variables.ts; `loadConfig` reads them all, applies
 * the rules that span several variables, and reports every bad one at once.
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
    /** Deepest JSON nesting of a request body (issue 21 #5). */
    bodyMaxDepth: number;
    shutdownTimeoutMs: number;
    /** The HTTP drain's share of the shutdown (issue 20 #5, health/http-drain.service.ts). */
    shutdownDrainMs: number;
    /** Fastify `trustProxy`: which peers' X-Forwarded-For is believed for the client address. */
    trustProxy: boolean | string;
  };
  /**
   * D44: origins allowed by CORS. `any` = `*` (no credentials); `dev-localhost` = any
   * http(s)://localhost:* or *.localhost:* origin (the development default); else exact origins.
   */
  cors: { mode: 'none' | 'any' | 'dev-localhost' | 'list'; origins: string[] };
  /** Issue 21 #6 (security-headers.hook.ts): HSTS max-age on requests over TLS, 0 = off. */
  securityHeaders: { hstsMaxAgeS: number };
  log: { level: LogLevel; pretty: boolean };
  db: DatabaseConfig;
  cache: {
    url: string | undefined;
    keyPrefix: string;
    startupMaxAttempts: number;
    startupRetryMs: number;
    /** The embedded default's in-process store bound. */
    memoryMaxBytes: number;
    /** With Redis: the in-process tier in front of it (issue 13 #3). */
    localTierMaxBytes: number;
    localTierTtlMs: number;
  };
  auth: {
    jwtSecret: string;
    /** D57: earlier secrets still accepted to verify tokens. */
    jwtSecretsPrevious: string[];
    jwtExpiresIn: string;
    tenantHeaderMaxAgeS: number;
  };
  crypto: {
    tenantEncryptionKey: string;
    /** D57: earlier keys still accepted to decrypt tenant headers. */
    tenantEncryptionKeysPrevious: string[];
    connectionEncryptionKey: string;
    /** D57: earlier keys still accepted to decrypt stored secrets (until keys:rotate). */
    connectionEncryptionKeysPrevious: string[];
  };
  /**
   * D39 per tenant (authenticated requests only); per client address: public routes, and the
   * failure budget of requests without an authenticated user (issue 9).
   */
  rateLimit: {
    points: number;
    /** Per user within the tenant's points, same window (issue 21 #4). */
    userPoints: number;
    windowS: number;
    publicPoints: number;
    publicWindowS: number;
    failurePoints: number;
    failureWindowS: number;
  };
  /**
   * Load shedding under event-loop pressure (@fastify/under-pressure, overload.hook.ts): 503
   * OVERLOADED beyond either limit (0 = that limit is off), probes exempt.
   */
  overload: {
    maxEventLoopDelayMs: number;
    /** Fraction 0-1 of the sample interval the event loop was busy. */
    maxEventLoopUtilization: number;
    sampleIntervalMs: number;
    retryAfterS: number;
  };
  /**
   * Entity writes: how long a write waits for the lock of a unique value (value-lock.ts); the most
   * rows of one bulk write (D51).
   */
  writes: { lockTimeoutMs: number; bulkMaxRows: number };
  /**
   * Imports (D53): the most data rows and bytes of one file, and what its content may hold
   * (issue 34: inflated bytes, zip ratio, cell and row text, shared strings).
   */
  imports: {
    maxRows: number;
    maxBytes: number;
    maxInflatedBytes: number;
    maxRatio: number;
    maxCellChars: number;
    maxRowChars: number;
    maxSharedStrings: number;
    maxSharedStringsBytes: number;
  };
  exports: {
    ttlS: number;
    dir: string;
    store: 'directory' | 'database';
    /** Render threads (issue 21 #1), and so the exports this instance runs at once. */
    renderThreads: number;
    /** How long the export route waits for the file before it answers 202 with the job. */
    waitMs: number;
    /** Unfinished exports allowed per user, per tenant and per instance (beyond: 429). */
    maxPerUser: number;
    maxPerTenant: number;
    maxPerInstance: number;
  };
  /** The background-job worker of this instance (src/jobs; leases as D49). */
  jobs: { worker: boolean; leaseMs: number; pollMs: number };
  /** D58: how often request counts are added to app_tenant_usage. */
  tenantUsageFlushMs: number;
  /** D56: audit retention in days (0 = forever) and how often the pruning job runs. */
  auditRetention: { days: number; intervalMs: number };
  /** D54: the outbox's retention and the webhook worker of this instance. */
  events: { retentionS: number; maxStreamsPerUser: number; maxBufferBytes: number };
  webhooks: {
    worker: boolean;
    concurrency: number;
    timeoutMs: number;
    maxAttempts: number;
    leaseMs: number;
    pollMs: number;
    /** Delays before retry 1, 2, … in ms (the last repeats). */
    retryScheduleMs: number[];
    disableAfterMs: number;
    /** Hosts (lower case) and addresses allowed although private; empty = none. */
    allowedHosts: string[];
    /** Loopback, link-local and private addresses are refused (everywhere but development). */
    refusePrivate: boolean;
  };
  /** D49: the workflow worker of this instance. */
  workflow: { worker: boolean; concurrency: number; leaseMs: number; pollMs: number };
  smtpUrl: string | undefined;
  /** From address of the service's mail (MAIL_FROM). */
  mailFrom: string;
  demo: { seed: boolean; password: string | undefined };
  metricsEnabled: boolean;
  /** The tenant reverse proxy (`npm run proxy`, D7); the service itself does not read it. */
  proxy: {
    host: string;
    port: number;
    /** Base URL of the service the proxy forwards to (PROXY_UPSTREAM, else from API_HOST and API_PORT). */
    upstream: string;
    /**
     * PROXY_UPSTREAM is unset: forward to the service started from the same directory, wherever
     * it listens (./data/.service.json), and to `upstream` while none runs.
     */
    followService: boolean;
    /** `<tenant_code>.<baseDomain>` names a tenant. */
    baseDomain: string;
    tenantCacheTtlS: number;
    tenantMissTtlS: number;
  };
  /** Names of secrets that were generated for development because none were set. */
  generatedSecrets: string[];
}

/** The comment at the top of `.env.example` (npm run env:example writes the rest). */
export const ENV_EXAMPLE_HEADER = `# Every environment variable the service reads, with its default. Copy to .env and edit.
# Unset = the default shown. With nothing set, \`npm start\` runs the embedded default
# (SQLite in ./data, in-process cache) and generates development secrets in ./data/.dev-secrets.json.`;

/** Every declared variable, in `.env.example` order. */
export const VARIABLES: readonly VariableSpec[] = Object.values(VARS);

export class ConfigValidationError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigValidationError';
  }
}

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

function trustProxyOf(value: string): boolean | string {
  const v = value.toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(v)) return true;
  if (['false', '0', 'no', 'off', 'none'].includes(v)) return false;
  return value;
}

function corsOf(problems: string[], raw: string | undefined, nodeEnv: NodeEnv): AppConfig['cors'] {
  if (raw === undefined) {
    return nodeEnv === 'production' ? { mode: 'none', origins: [] } : { mode: 'dev-localhost', origins: [] };
  }
  if (raw === '*') return { mode: 'any', origins: [] };
  if (['none', 'false', 'off'].includes(raw.toLowerCase())) return { mode: 'none', origins: [] };
  const origins = raw
    .split(',')
    .map((o) => o.trim().replace(/\/+$/, ''))
    .filter((o) => o !== '');
  for (const o of origins) {
    if (!/^https?:\/\/[^/?#\s*]+$/.test(o))
      problems.push(`CORS_ORIGINS: each origin must be scheme://host[:port] (got "${o}")`);
  }
  return { mode: 'list', origins };
}

export interface LoadConfigOptions {
  /** Supplies development secrets when JWT_SECRET / TENANT_ENCRYPTION_KEY are unset (not in production). */
  devSecrets?: () => { jwtSecret: string; tenantEncryptionKey: string };
  isTty?: boolean;
}

export function loadConfig(env: Env, options: LoadConfigOptions = {}): AppConfig {
  const problems: string[] = [];
  const v: Values<typeof VARS> = readAll(VARS, env, problems);
  const nodeEnv = v.NODE_ENV;
  const isProduction = nodeEnv === 'production';
  const dbType = v.DB_TYPE;
  const port = v.API_PORT();

  // Secrets: required, but generated for development when unset (D13, D5).
  const generatedSecrets: string[] = [];
  let jwtSecret = v.JWT_SECRET;
  let tenantKey = v.TENANT_ENCRYPTION_KEY;
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
  if (!jwtSecret) problems.push('JWT_SECRET: required');
  else if (Buffer.byteLength(jwtSecret) < 32 && nodeEnv !== 'development') {
    problems.push('JWT_SECRET: must be at least 32 bytes outside development (D13)');
  }
  if (
    nodeEnv !== 'development' &&
    splitKeyList(v.JWT_SECRET_PREVIOUS).some((s) => Buffer.byteLength(s) < 32)
  ) {
    problems.push('JWT_SECRET_PREVIOUS: every secret must be at least 32 bytes outside development (D13)');
  }
  if (!tenantKey) problems.push('TENANT_ENCRYPTION_KEY: required');
  else if (!decodeKey32(tenantKey)) {
    problems.push('TENANT_ENCRYPTION_KEY: must be 32 bytes as 64 hex characters or base64 (D5)');
  }

  const demoPassword = v.DEMO_PASSWORD;
  const seed = v.SEED_DEMO === 'auto' ? dbType === 'sqlite' && !isProduction : v.SEED_DEMO === 'true';
  if (seed && isProduction && !demoPassword) {
    problems.push('DEMO_PASSWORD: required to seed demo data in production');
  }

  // Issue 20 #6: outside production only this machine reaches the service (Swagger UI there
  // offers ready-made tenant headers); a container or a server sets 0.0.0.0.
  const defaultHost = isProduction ? '0.0.0.0' : '127.0.0.1';
  const apiHost = v.API_HOST ?? defaultHost;
  // Issue 20 #7: the proxy reads the service's address from the same configuration.
  const proxyUpstream = v.PROXY_UPSTREAM ?? localUrlFor(apiHost, port);
  const proxyBaseDomain = (v.PROXY_BASE_DOMAIN ?? 'localhost').toLowerCase().replace(/^\.+|\.+$/g, '');
  if (!/^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/.test(proxyBaseDomain)) {
    problems.push(
      `PROXY_BASE_DOMAIN: must be a host name such as localhost or example.com (got "${proxyBaseDomain}")`,
    );
  }
  const connectionTimeoutMs = v.SQL_CONNECTION_TIMEOUT();
  // Half by default: one runaway account (a script, a stuck page) leaves half of the tenant's
  // budget to its other users, while an integration account or a busy page still has 50 a second
  // (at the default 1000 per 10 s) — well above what any one user's pages send.
  const ratePoints = v.RATE_LIMIT_POINTS();
  const shutdownTimeoutMs = v.SHUTDOWN_TIMEOUT_MS();
  const userPoints = v.USER_RATE_LIMIT_POINTS(Math.ceil(ratePoints / 2));
  if (userPoints > ratePoints)
    problems.push(`USER_RATE_LIMIT_POINTS: must not exceed RATE_LIMIT_POINTS (${ratePoints})`);

  const config: AppConfig = {
    nodeEnv,
    isProduction,
    api: {
      host: apiHost,
      port,
      publicUrl: v.PUBLIC_URL,
      bodyLimitBytes: v.BODY_LIMIT_BYTES(),
      bodyMaxDepth: v.BODY_MAX_DEPTH(),
      shutdownTimeoutMs,
      // Half of a short overall bound is left for the workers and pools after the drain.
      shutdownDrainMs: v.SHUTDOWN_DRAIN_MS(Math.min(5000, Math.floor(shutdownTimeoutMs / 2))),
      trustProxy: trustProxyOf(v.TRUST_PROXY ?? 'loopback'),
    },
    cors: corsOf(problems, v.CORS_ORIGINS, nodeEnv),
    securityHeaders: { hstsMaxAgeS: v.HSTS_MAX_AGE_S() },
    log: {
      level: v.LOG_LEVEL,
      pretty:
        v.LOG_FORMAT === 'pretty' || (v.LOG_FORMAT === 'auto' && !isProduction && options.isTty === true),
    },
    db: {
      type: dbType,
      host: v.DB_HOST ?? '127.0.0.1',
      port: v.DB_PORT(DEFAULT_PORTS[dbType]),
      user: v.DB_USER ?? DEFAULT_USERS[dbType],
      password: v.DB_PASSWORD,
      name: v.DB_NAME ?? (dbType === 'sqlite' ? './data/app.sqlite' : 'mtb'),
      runMigrations: v.DB_RUN_MIGRATIONS,
      pool: {
        max: v.DB_POOL_MAX(),
        min: v.DB_POOL_MIN(),
        idleTimeoutMs: v.DB_POOL_IDLE_TIMEOUT_MS(),
        acquireTimeoutMs: v.DB_POOL_ACQUIRE_TIMEOUT_MS(),
      },
      mssql: { encrypt: v.DB_ENCRYPT, trustServerCertificate: v.DB_TRUST_SERVER_CERTIFICATE },
      connectionTimeoutMs,
      connectMaxAttempts: v.SQL_CONNECT_MAX_ATTEMPTS(),
      concurrentWaitTimeoutMs: v.SQL_CONCURRENT_WAIT_TIMEOUT_MS(),
      resumeMaxWaitMs: v.SQL_RESUME_MAX_WAIT_MS(),
      externalConnectTimeoutMs: v.SQL_EXTERNAL_CONNECT_TIMEOUT_MS(connectionTimeoutMs),
    },
    cache: {
      url: v.CACHE_URL,
      keyPrefix: v.CACHE_KEY_PREFIX ?? 'mtb',
      startupMaxAttempts: v.CACHE_STARTUP_MAX_ATTEMPTS(),
      startupRetryMs: v.CACHE_STARTUP_RETRY_MS(),
      memoryMaxBytes: v.CACHE_MEMORY_MAX_MB() * 1024 * 1024,
      localTierMaxBytes: v.CACHE_LOCAL_TIER_MAX_MB() * 1024 * 1024,
      localTierTtlMs: v.CACHE_LOCAL_TIER_TTL_S() * 1000,
    },
    auth: {
      jwtSecret: jwtSecret ?? '',
      jwtSecretsPrevious: splitKeyList(v.JWT_SECRET_PREVIOUS),
      jwtExpiresIn: v.JWT_EXPIRES_IN ?? '24h',
      tenantHeaderMaxAgeS: v.TENANT_HEADER_MAX_AGE_S(),
    },
    crypto: {
      tenantEncryptionKey: tenantKey ?? '',
      tenantEncryptionKeysPrevious: splitKeyList(v.TENANT_ENCRYPTION_KEY_PREVIOUS),
      connectionEncryptionKey: v.CONNECTION_ENCRYPTION_KEY ?? tenantKey ?? '',
      // Like the current key, the previous ones fall back to the tenant header's.
      connectionEncryptionKeysPrevious: splitKeyList(
        v.CONNECTION_ENCRYPTION_KEY !== undefined
          ? v.CONNECTION_ENCRYPTION_KEY_PREVIOUS
          : (v.CONNECTION_ENCRYPTION_KEY_PREVIOUS ?? v.TENANT_ENCRYPTION_KEY_PREVIOUS),
      ),
    },
    rateLimit: {
      points: ratePoints,
      userPoints,
      windowS: v.RATE_LIMIT_WINDOW_S(),
      publicPoints: v.PUBLIC_RATE_LIMIT_POINTS(),
      publicWindowS: v.PUBLIC_RATE_LIMIT_WINDOW_S(),
      failurePoints: v.ADDRESS_FAILURE_POINTS(),
      failureWindowS: v.ADDRESS_FAILURE_WINDOW_S(),
    },
    overload: {
      maxEventLoopDelayMs: v.OVERLOAD_MAX_EVENT_LOOP_DELAY_MS(),
      maxEventLoopUtilization: Number(v.OVERLOAD_MAX_EVENT_LOOP_UTILIZATION ?? '0') || 0,
      sampleIntervalMs: v.OVERLOAD_SAMPLE_INTERVAL_MS(),
      retryAfterS: v.OVERLOAD_RETRY_AFTER_S(),
    },
    writes: { lockTimeoutMs: v.WRITE_LOCK_TIMEOUT_MS(), bulkMaxRows: v.BULK_MAX_ROWS() },
    imports: {
      maxRows: v.IMPORT_MAX_ROWS(),
      maxBytes: v.IMPORT_MAX_BYTES(),
      maxInflatedBytes: v.IMPORT_MAX_INFLATED_BYTES(),
      maxRatio: v.IMPORT_MAX_ZIP_RATIO(),
      maxCellChars: v.IMPORT_MAX_CELL_CHARS(),
      maxRowChars: v.IMPORT_MAX_ROW_CHARS(),
      maxSharedStrings: v.IMPORT_MAX_SHARED_STRINGS(),
      maxSharedStringsBytes: v.IMPORT_MAX_SHARED_STRINGS_BYTES(),
    },
    exports: {
      ttlS: v.EXPORT_TTL_S(),
      dir: v.EXPORT_DIR ?? './data/exports',
      store: v.EXPORT_STORE,
      renderThreads: v.EXPORT_RENDER_THREADS(Math.max(1, Math.min(4, availableParallelism() - 1))),
      waitMs: v.EXPORT_WAIT_MS(),
      maxPerUser: v.EXPORT_MAX_PER_USER(),
      maxPerTenant: v.EXPORT_MAX_PER_TENANT(),
      maxPerInstance: v.EXPORT_MAX_PER_INSTANCE(),
    },
    jobs: { worker: v.JOB_WORKER !== 'off', leaseMs: v.JOB_LEASE_MS(), pollMs: v.JOB_POLL_MS() },
    tenantUsageFlushMs: v.TENANT_USAGE_FLUSH_MS(),
    auditRetention: { days: v.AUDIT_RETENTION_DAYS(), intervalMs: v.AUDIT_RETENTION_INTERVAL_MS() },
    events: {
      retentionS: v.EVENTS_RETENTION_S(),
      maxStreamsPerUser: v.SSE_MAX_STREAMS_PER_USER(),
      maxBufferBytes: v.SSE_MAX_BUFFER_BYTES(),
    },
    webhooks: {
      worker: v.WEBHOOK_WORKER !== 'off',
      concurrency: v.WEBHOOK_CONCURRENCY(),
      timeoutMs: v.WEBHOOK_TIMEOUT_MS(),
      maxAttempts: v.WEBHOOK_MAX_ATTEMPTS(),
      leaseMs: v.WEBHOOK_LEASE_MS(),
      pollMs: v.WEBHOOK_POLL_MS(),
      retryScheduleMs: (v.WEBHOOK_RETRY_SCHEDULE_S ?? '5,300,1800,7200,18000,36000')
        .split(',')
        .map((x) => Math.round(Number(x.trim()) * 1000)),
      disableAfterMs: v.WEBHOOK_DISABLE_AFTER_S() * 1000,
      allowedHosts: (v.WEBHOOK_ALLOWED_HOSTS ?? '')
        .split(',')
        .map((x) =>
          x
            .trim()
            .toLowerCase()
            .replace(/^\[|\]$/g, ''),
        )
        .filter((x) => x !== ''),
      // D54: on unless NODE_ENV is explicitly development — an unset NODE_ENV reads as development
      // elsewhere, but must not open private addresses to webhooks (issue 34 #5). Tests keep it on
      // and list their local receivers in WEBHOOK_ALLOWED_HOSTS, as a deployment would.
      refusePrivate: env.NODE_ENV !== 'development',
    },
    workflow: {
      worker: v.WORKFLOW_WORKER !== 'off',
      concurrency: v.WORKFLOW_WORKER_CONCURRENCY(),
      leaseMs: v.WORKFLOW_LEASE_MS(),
      pollMs: v.WORKFLOW_POLL_MS(),
    },
    smtpUrl: v.SMTP_URL,
    mailFrom: v.MAIL_FROM ?? 'no-reply@localhost',
    demo: { seed, password: demoPassword },
    metricsEnabled: v.METRICS_ENABLED,
    proxy: {
      host: v.PROXY_HOST ?? defaultHost,
      port: v.PROXY_PORT(),
      upstream: proxyUpstream.replace(/\/$/, ''),
      followService: v.PROXY_UPSTREAM === undefined,
      baseDomain: proxyBaseDomain,
      tenantCacheTtlS: v.PROXY_TENANT_CACHE_TTL_S(),
      tenantMissTtlS: v.PROXY_TENANT_MISS_TTL_S(),
    },
    generatedSecrets,
  };
  if (config.db.pool.min > config.db.pool.max) problems.push('DB_POOL_MIN: must not exceed DB_POOL_MAX');
  // The workers and pools are stopped after the drain, within the same overall bound.
  if (config.api.shutdownDrainMs >= config.api.shutdownTimeoutMs) {
    problems.push('SHUTDOWN_DRAIN_MS: must be less than SHUTDOWN_TIMEOUT_MS');
  }
  if (problems.length > 0) throw new ConfigValidationError(problems);
  return config;
}
