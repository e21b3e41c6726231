import { decodeKey32, parseDurationSeconds } from './parse';
import { isIP } from 'node:net';
import { bool, int, oneOf, text, verbatim } from './variable';

/** An IP address (v4 or v6) or a host name, as `listen` takes it; not a URL. */
function hostRule(value: string): string | undefined {
  if (isIP(value) !== 0 || /^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/i.test(value)) return undefined;
  return `must be an IP address (127.0.0.1, 0.0.0.0, ::) or a host name (got "${value}")`;
}

/** A comma list of 32-byte keys (hex or base64), each checked. */
function keyListRule(decision: string) {
  return (value: string): string | undefined => {
    const bad = value
      .split(',')
      .map((k) => k.trim())
      .filter((k) => k !== '' && !decodeKey32(k)).length;
    return bad === 0
      ? undefined
      : `every key must be 32 bytes as 64 hex characters or base64 (${bad} is not; ${decision})`;
  };
}

/**
 * Every environment variable the service reads, one declaration each: name, default, description,
 * secret flag and rule (STYLE; twenty's config-variables.ts). The order is `.env.example`'s.
 * `loadConfig` (config.schema.ts) reads them all and assembles the typed AppConfig; rules that
 * involve several variables (secrets in production, per-dialect defaults) live there.
 */
export const VARS = {
  NODE_ENV: oneOf('NODE_ENV', ['development', 'production', 'test'] as const, {
    description: 'development | production | test',
    default: 'development',
  }),
  API_HOST: text('API_HOST', {
    description:
      'Address the HTTP server binds to; unset = 127.0.0.1 (this machine only) outside production, 0.0.0.0 (every interface) in production. 0.0.0.0 or :: exposes it, e.g. in a container',
    rule: hostRule,
  }),
  API_PORT: int('API_PORT', { description: 'HTTP port (spec §8)', default: '8008', min: 0, max: 65535 }),
  PUBLIC_URL: text('PUBLIC_URL', {
    description: 'URL printed in the banner and docs; defaults to http://localhost:API_PORT',
  }),
  TRUST_PROXY: text('TRUST_PROXY', {
    description:
      'Peers whose X-Forwarded-For gives the client address: true | false | loopback | comma list of addresses/CIDRs',
    default: 'loopback',
  }),
  HSTS_MAX_AGE_S: int('HSTS_MAX_AGE_S', {
    description:
      'Strict-Transport-Security max-age, sent only on requests over TLS (the socket, or X-Forwarded-Proto from a TRUST_PROXY peer); 0 = never',
    default: '31536000',
    min: 0,
  }),
  CORS_ORIGINS: text('CORS_ORIGINS', {
    description:
      'CORS (D44): comma list of origins, or * for any origin without credentials; unset = none in production, http://localhost:* in development',
  }),
  LOG_LEVEL: oneOf('LOG_LEVEL', ['info', 'debug', 'warn', 'error'] as const, {
    description: 'debug | info | warn | error',
    default: 'info',
  }),
  LOG_FORMAT: oneOf('LOG_FORMAT', ['auto', 'json', 'pretty'] as const, {
    description: 'json | pretty | auto (pretty on a terminal outside production)',
    default: 'auto',
  }),
  DB_TYPE: oneOf('DB_TYPE', ['sqlite', 'postgres', 'mariadb', 'mysql', 'mssql'] as const, {
    description: 'sqlite | postgres | mariadb | mysql | mssql (D1)',
    default: 'sqlite',
  }),
  DB_HOST: text('DB_HOST', { description: 'Database host (server dialects)', default: '127.0.0.1' }),
  DB_PORT: int('DB_PORT', {
    description: 'Database port; defaults to 5432 / 3306 / 1433 by dialect',
    min: 1,
    max: 65535,
  }),
  DB_USER: text('DB_USER', { description: 'Database user; defaults to postgres / root / sa by dialect' }),
  DB_PASSWORD: verbatim('DB_PASSWORD', { description: 'Database password', default: '', secret: true }),
  DB_NAME: text('DB_NAME', {
    description: 'Database name; for sqlite the file (default ./data/app.sqlite, else mtb)',
  }),
  DB_RUN_MIGRATIONS: bool('DB_RUN_MIGRATIONS', {
    description: 'Run pending migrations at start-up',
    default: 'true',
  }),
  DB_POOL_MAX: int('DB_POOL_MAX', {
    description: 'Connection pool maximum (spec §8 example)',
    default: '100',
    min: 1,
  }),
  DB_POOL_MIN: int('DB_POOL_MIN', { description: 'Connection pool minimum', default: '10', min: 0 }),
  DB_POOL_IDLE_TIMEOUT_MS: int('DB_POOL_IDLE_TIMEOUT_MS', {
    description: 'Idle connection timeout',
    default: '30000',
    min: 0,
  }),
  DB_POOL_ACQUIRE_TIMEOUT_MS: int('DB_POOL_ACQUIRE_TIMEOUT_MS', {
    description: 'Pool acquire timeout',
    default: '60000',
    min: 1,
  }),
  DB_ENCRYPT: bool('DB_ENCRYPT', { description: 'SQL Server: encrypt the connection', default: 'true' }),
  DB_TRUST_SERVER_CERTIFICATE: bool('DB_TRUST_SERVER_CERTIFICATE', {
    description: 'SQL Server: accept a self-signed certificate',
    default: 'false',
  }),
  SQL_CONNECTION_TIMEOUT: int('SQL_CONNECTION_TIMEOUT', {
    description: 'Per connect attempt, ms',
    default: '120000',
    min: 1,
  }),
  SQL_CONNECT_MAX_ATTEMPTS: int('SQL_CONNECT_MAX_ATTEMPTS', {
    description: 'Connect attempts on transient errors, with backoff',
    default: '25',
    min: 1,
  }),
  SQL_CONCURRENT_WAIT_TIMEOUT_MS: int('SQL_CONCURRENT_WAIT_TIMEOUT_MS', {
    description: 'Wait for a connect already in progress, ms',
    default: '180000',
    min: 0,
  }),
  SQL_RESUME_MAX_WAIT_MS: int('SQL_RESUME_MAX_WAIT_MS', {
    description: 'Total time the externalDbs routine may retry, ms',
    default: '180000',
    min: 0,
  }),
  SQL_EXTERNAL_CONNECT_TIMEOUT_MS: int('SQL_EXTERNAL_CONNECT_TIMEOUT_MS', {
    description: 'Connect timeout for external connections; falls back to SQL_CONNECTION_TIMEOUT',
    min: 1,
  }),
  CACHE_URL: text('CACHE_URL', {
    description: 'redis://host:port/db for Redis; unset = in-process cache (D2)',
    secret: true,
    rule: (v) => (/^rediss?:\/\/./.test(v) ? undefined : 'must start with redis:// or rediss://'),
  }),
  CACHE_KEY_PREFIX: text('CACHE_KEY_PREFIX', {
    description: 'Prefix of every cache key (D2)',
    default: 'mtb',
  }),
  CACHE_STARTUP_MAX_ATTEMPTS: int('CACHE_STARTUP_MAX_ATTEMPTS', {
    description: 'Connect + PING attempts at start-up (spec §3.3)',
    default: '20',
    min: 1,
  }),
  CACHE_STARTUP_RETRY_MS: int('CACHE_STARTUP_RETRY_MS', {
    description: 'First retry delay of the cache start-up loop (doubles, max 5 s)',
    default: '500',
    min: 1,
  }),
  CACHE_MEMORY_MAX_MB: int('CACHE_MEMORY_MAX_MB', {
    description: 'Bound of the in-process cache of the embedded default (LRU by size, MiB)',
    default: '64',
    min: 1,
  }),
  CACHE_LOCAL_TIER_MAX_MB: int('CACHE_LOCAL_TIER_MAX_MB', {
    description: 'With Redis: bound of the in-process tier in front of it (LRU by size, MiB)',
    default: '32',
    min: 1,
  }),
  CACHE_LOCAL_TIER_TTL_S: int('CACHE_LOCAL_TIER_TTL_S', {
    description:
      'With Redis: the longest an entry of the in-process tier is served without asking Redis (bounds staleness when an invalidation message is lost)',
    default: '30',
    min: 1,
  }),
  JWT_SECRET: text('JWT_SECRET', {
    description: 'HS256 secret, at least 32 bytes outside development (D13)',
    secret: true,
  }),
  JWT_SECRET_PREVIOUS: text('JWT_SECRET_PREVIOUS', {
    description: 'Comma list of earlier JWT secrets still accepted to verify tokens during a rotation (D57)',
    secret: true,
  }),
  JWT_EXPIRES_IN: text('JWT_EXPIRES_IN', {
    description: 'Token lifetime: seconds or 30m / 24h / 7d',
    default: '24h',
    rule: (v) =>
      parseDurationSeconds(v) === undefined
        ? `must be seconds or a duration such as 30m, 24h, 7d (got "${v}")`
        : undefined,
  }),
  TENANT_ENCRYPTION_KEY: text('TENANT_ENCRYPTION_KEY', {
    description: '32-byte key, 64 hex chars or base64; shared with the proxy (D5)',
    secret: true,
  }),
  TENANT_ENCRYPTION_KEY_PREVIOUS: text('TENANT_ENCRYPTION_KEY_PREVIOUS', {
    description: 'Comma list of earlier tenant header keys still accepted to decrypt during a rotation (D57)',
    secret: true,
    rule: keyListRule('D57'),
  }),
  CONNECTION_ENCRYPTION_KEY: text('CONNECTION_ENCRYPTION_KEY', {
    description: 'Key for app_connections strings; falls back to TENANT_ENCRYPTION_KEY (D3)',
    secret: true,
    rule: (v) => (decodeKey32(v) ? undefined : 'must be 32 bytes as 64 hex characters or base64 (D3)'),
  }),
  CONNECTION_ENCRYPTION_KEY_PREVIOUS: text('CONNECTION_ENCRYPTION_KEY_PREVIOUS', {
    description:
      'Comma list of earlier keys still accepted to decrypt stored secrets until `npm run keys:rotate` has re-encrypted them (D57); falls back to TENANT_ENCRYPTION_KEY_PREVIOUS',
    secret: true,
    rule: keyListRule('D57'),
  }),
  TENANT_HEADER_MAX_AGE_S: int('TENANT_HEADER_MAX_AGE_S', {
    description: 'Reject tenant headers older than this; 0 = off (D6)',
    default: '0',
    min: 0,
  }),
  RATE_LIMIT_POINTS: int('RATE_LIMIT_POINTS', {
    description: 'Requests per tenant per window (D39)',
    default: '1000',
    min: 1,
  }),
  RATE_LIMIT_WINDOW_S: int('RATE_LIMIT_WINDOW_S', {
    description: 'Rate-limit window, seconds (D39)',
    default: '10',
    min: 1,
  }),
  USER_RATE_LIMIT_POINTS: int('USER_RATE_LIMIT_POINTS', {
    description:
      "Requests per user per RATE_LIMIT_WINDOW_S, within the tenant limit (one account cannot spend its tenant's budget); unset = half of RATE_LIMIT_POINTS",
    min: 1,
  }),
  PUBLIC_RATE_LIMIT_POINTS: int('PUBLIC_RATE_LIMIT_POINTS', {
    description:
      'Requests to public tenant routes (tenant-config, signin, signup-otp, create-account) per client address per window',
    default: '300',
    min: 1,
  }),
  PUBLIC_RATE_LIMIT_WINDOW_S: int('PUBLIC_RATE_LIMIT_WINDOW_S', {
    description: 'Window of the public-route limit, seconds',
    default: '60',
    min: 1,
  }),
  ADDRESS_FAILURE_POINTS: int('ADDRESS_FAILURE_POINTS', {
    description:
      '4xx answers to requests without an authenticated user, per client address per window; then that address needs a valid token (429 otherwise)',
    default: '100',
    min: 1,
  }),
  ADDRESS_FAILURE_WINDOW_S: int('ADDRESS_FAILURE_WINDOW_S', {
    description: 'Window of the per-address failure budget, seconds',
    default: '60',
    min: 1,
  }),
  BODY_LIMIT_BYTES: int('BODY_LIMIT_BYTES', {
    description: 'Largest request body; larger → 413 (D39)',
    default: '1048576',
    min: 1024,
  }),
  BODY_MAX_DEPTH: int('BODY_MAX_DEPTH', {
    description: 'Deepest nesting of arrays and objects in a JSON request body; deeper → 400',
    default: '64',
    min: 8,
    // JSON.stringify, which the service runs on stored JSON, fails somewhere past 5,000 levels.
    max: 1000,
  }),
  OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: int('OVERLOAD_MAX_EVENT_LOOP_DELAY_MS', {
    description:
      'Shed load (503 OVERLOADED, Retry-After) while the mean event-loop delay of the last sample exceeds this, ms; 0 = off',
    default: '1000',
    min: 0,
  }),
  OVERLOAD_MAX_EVENT_LOOP_UTILIZATION: text('OVERLOAD_MAX_EVENT_LOOP_UTILIZATION', {
    description:
      'Shed load while the event loop was busy more than this fraction (0-1) of the last sample interval; 0 = off (the default: a saturated but healthy server is busy ~100% of the time and still answers in milliseconds)',
    default: '0',
    rule: (v) =>
      /^(0(\.\d+)?|1(\.0+)?|\.\d+)$/.test(v) ? undefined : `must be a number from 0 to 1 (got "${v}")`,
  }),
  OVERLOAD_SAMPLE_INTERVAL_MS: int('OVERLOAD_SAMPLE_INTERVAL_MS', {
    description: 'How often event-loop delay and utilization are sampled for load shedding, ms',
    default: '1000',
    // Below ~5 samples of the delay monitor (10 ms resolution) an interval may hold none, which the
    // plugin reads as an infinite delay.
    min: 50,
    max: 60000,
  }),
  OVERLOAD_RETRY_AFTER_S: int('OVERLOAD_RETRY_AFTER_S', {
    description: 'Retry-After of a 503 OVERLOADED, seconds',
    default: '5',
    min: 1,
  }),
  WRITE_LOCK_TIMEOUT_MS: int('WRITE_LOCK_TIMEOUT_MS', {
    description: 'Longest wait of an entity write for the lock of a unique value; then 409',
    default: '10000',
    min: 1,
  }),
  BULK_MAX_ROWS: int('BULK_MAX_ROWS', {
    description: 'Most rows of one bulk write or dataview action (D51, D52); more is 413',
    default: '1000',
    min: 1,
  }),
  IMPORT_MAX_ROWS: int('IMPORT_MAX_ROWS', {
    description: 'Most data rows of one import file (D53); more fails the import (413)',
    default: '100000',
    min: 1,
  }),
  IMPORT_MAX_BYTES: int('IMPORT_MAX_BYTES', {
    description: 'Largest import file in bytes (D53); larger is 413',
    default: '20971520',
    min: 1,
  }),
  IMPORT_MAX_INFLATED_BYTES: int('IMPORT_MAX_INFLATED_BYTES', {
    description:
      'Most bytes an XLSX import file may inflate to, all its zip entries together (issue 34); more fails the import (400 naming file)',
    default: '268435456',
    min: 1,
  }),
  IMPORT_MAX_ZIP_RATIO: int('IMPORT_MAX_ZIP_RATIO', {
    description:
      'Most times a zip entry of an XLSX import file may inflate its compressed size, checked once it passed 1 MiB; more fails the import',
    default: '100',
    min: 1,
  }),
  IMPORT_MAX_CELL_CHARS: int('IMPORT_MAX_CELL_CHARS', {
    description:
      "Longest cell of an import file in characters (Excel's own limit); longer fails the import. An XLSX cell, tag or text may take 16 bytes of XML per character",
    default: '32767',
    min: 1,
  }),
  IMPORT_MAX_ROW_CHARS: int('IMPORT_MAX_ROW_CHARS', {
    description:
      'Longest row of an import file in characters (a CSV record, an XLSX row: 16 bytes of XML per character); longer fails the import',
    default: '1048576',
    min: 1,
  }),
  IMPORT_MAX_SHARED_STRINGS: int('IMPORT_MAX_SHARED_STRINGS', {
    description:
      'Most entries of the shared-string table of an XLSX import file (held in memory); more fails the import',
    default: '2000000',
    min: 1,
  }),
  IMPORT_MAX_SHARED_STRINGS_BYTES: int('IMPORT_MAX_SHARED_STRINGS_BYTES', {
    description:
      'Most inflated bytes of the shared-string table of an XLSX import file, and of any other part read whole (styles, workbook); more fails the import',
    default: '104857600',
    min: 1,
  }),
  EXPORT_TTL_S: int('EXPORT_TTL_S', {
    description: 'How long exports stay downloadable (D32)',
    default: '3600',
    min: 1,
  }),
  EXPORT_STORE: oneOf('EXPORT_STORE', ['directory', 'database'] as const, {
    description:
      'Where exports are kept: directory (EXPORT_DIR, one instance) | database (any instance serves any download) (D48)',
    default: 'directory',
  }),
  EXPORT_DIR: text('EXPORT_DIR', {
    description: 'Where exports are kept in the embedded default (D32)',
    default: './data/exports',
  }),
  EXPORT_RENDER_THREADS: int('EXPORT_RENDER_THREADS', {
    description:
      'Threads that render exports on this instance, off the event loop (also the exports it runs at once); default: cores - 1, from 1 to 4',
    min: 1,
    max: 64,
  }),
  EXPORT_WAIT_MS: int('EXPORT_WAIT_MS', {
    description:
      'How long POST …/export waits for its file before it answers 202 with a job to poll instead of 200 with the download',
    default: '10000',
    min: 0,
  }),
  EXPORT_MAX_PER_USER: int('EXPORT_MAX_PER_USER', {
    description: 'Unfinished exports one user may have; beyond it 429 with Retry-After',
    default: '2',
    min: 1,
  }),
  EXPORT_MAX_PER_TENANT: int('EXPORT_MAX_PER_TENANT', {
    description: 'Unfinished exports of one tenant; beyond it 429 with Retry-After',
    default: '4',
    min: 1,
  }),
  EXPORT_MAX_PER_INSTANCE: int('EXPORT_MAX_PER_INSTANCE', {
    description:
      'Unfinished exports this instance has accepted (all tenants); beyond it 429 with Retry-After',
    default: '16',
    min: 1,
  }),
  JOB_WORKER: oneOf('JOB_WORKER', ['on', 'off'] as const, {
    description:
      'Whether this instance runs background jobs (exports) from the shared job table; off = API only',
    default: 'on',
  }),
  JOB_LEASE_MS: int('JOB_LEASE_MS', {
    description:
      'How long a claimed job is leased; renewed while it runs, claimed again by any instance once expired (D49)',
    default: '30000',
    min: 500,
  }),
  TENANT_USAGE_FLUSH_MS: int('TENANT_USAGE_FLUSH_MS', {
    description:
      'How often each instance adds its per-tenant request counts to app_tenant_usage (the usage route, D58)',
    default: '30000',
    min: 10,
  }),
  JOB_POLL_MS: int('JOB_POLL_MS', {
    description:
      'Longest pause between two polls of an idle job worker, and between two looks at the jobs a request waits for',
    default: '1000',
    min: 10,
  }),
  AUDIT_RETENTION_DAYS: int('AUDIT_RETENTION_DAYS', {
    description:
      'Days an audit entry (record history, D56) is kept before the retention job prunes it; 0 keeps them forever. A tenant may set its own in tnt_add_dtls.auditRetentionDays',
    default: '0',
    min: 0,
  }),
  AUDIT_RETENTION_INTERVAL_MS: int('AUDIT_RETENTION_INTERVAL_MS', {
    description:
      'How often the audit retention job runs (once per interval across every instance, as a leased job)',
    default: '3600000',
    min: 1000,
  }),
  WORKFLOW_WORKER: oneOf('WORKFLOW_WORKER', ['on', 'off'] as const, {
    description: 'Whether this instance runs workflow steps from the shared queue (D49); off = API only',
    default: 'on',
  }),
  WORKFLOW_WORKER_CONCURRENCY: int('WORKFLOW_WORKER_CONCURRENCY', {
    description: 'Workflow steps this instance runs at once (D49)',
    default: '4',
    min: 1,
    max: 64,
  }),
  WORKFLOW_LEASE_MS: int('WORKFLOW_LEASE_MS', {
    description:
      'How long a claimed workflow step is leased; renewed while it runs, claimed again by any instance once expired (D49)',
    default: '30000',
    min: 500,
  }),
  WORKFLOW_POLL_MS: int('WORKFLOW_POLL_MS', {
    description:
      'Longest pause between two polls of an idle workflow worker (it backs off up to this; queued work wakes it at once)',
    default: '1000',
    min: 10,
  }),
  EVENTS_RETENTION_S: int('EVENTS_RETENTION_S', {
    description:
      'How long outbox events are kept (D54): the replay window of webhooks and live changes; delivered webhook deliveries go with them (dead ones stay)',
    default: '86400',
    min: 60,
  }),
  SSE_MAX_STREAMS_PER_USER: int('SSE_MAX_STREAMS_PER_USER', {
    description: 'Live change streams (D55) one user may hold open on one instance; one more is 429',
    default: '10',
    min: 1,
    max: 1000,
  }),
  SSE_MAX_BUFFER_BYTES: int('SSE_MAX_BUFFER_BYTES', {
    description:
      'Bytes a live change stream (D55) may have waiting for its client in this process; a stream further behind is dropped and its client resumes with Last-Event-ID',
    default: '1048576',
    min: 16384,
  }),
  WEBHOOK_WORKER: oneOf('WEBHOOK_WORKER', ['on', 'off'] as const, {
    description:
      'Whether this instance relays outbox events to webhooks and delivers them (D54); off = API only',
    default: 'on',
  }),
  WEBHOOK_CONCURRENCY: int('WEBHOOK_CONCURRENCY', {
    description: 'Webhook deliveries this instance sends at once (D54)',
    default: '8',
    min: 1,
    max: 256,
  }),
  WEBHOOK_TIMEOUT_MS: int('WEBHOOK_TIMEOUT_MS', {
    description: 'How long one delivery attempt waits for a 2xx answer (D54)',
    default: '10000',
    min: 100,
  }),
  WEBHOOK_MAX_ATTEMPTS: int('WEBHOOK_MAX_ATTEMPTS', {
    description: 'Attempts of one delivery before it is dead (D54)',
    default: '8',
    min: 1,
    max: 20,
  }),
  WEBHOOK_LEASE_MS: int('WEBHOOK_LEASE_MS', {
    description:
      'How long a claimed delivery is leased; a delivery whose instance died is sent again once it ran out (D54, D49)',
    default: '30000',
    min: 500,
  }),
  WEBHOOK_POLL_MS: int('WEBHOOK_POLL_MS', {
    description:
      'Longest pause between two polls of an idle webhook worker (a write on this instance wakes it at once)',
    default: '1000',
    min: 10,
  }),
  WEBHOOK_RETRY_SCHEDULE_S: text('WEBHOOK_RETRY_SCHEDULE_S', {
    description:
      'Delays before the retries of a failed delivery, in seconds, comma-separated (each with up to 20 % jitter; the last repeats)',
    default: '5,300,1800,7200,18000,36000',
    rule: (v) =>
      /^\s*\d+(\.\d+)?(\s*,\s*\d+(\.\d+)?)*\s*$/.test(v) ? undefined : 'must be a comma list of seconds',
  }),
  WEBHOOK_DISABLE_AFTER_S: int('WEBHOOK_DISABLE_AFTER_S', {
    description: 'A webhook failing this long without one success is disabled (D54)',
    default: '86400',
    min: 1,
  }),
  WEBHOOK_ALLOWED_HOSTS: text('WEBHOOK_ALLOWED_HOSTS', {
    description:
      'Comma list of host names or addresses webhooks may reach although they are loopback, link-local or private (outside development every such address is refused, D54)',
  }),
  SMTP_URL: text('SMTP_URL', {
    description: 'smtp://user:pass@host:port for sign-up mail (D15)',
    secret: true,
    rule: (v) => (/^smtps?:\/\/./.test(v) ? undefined : 'must start with smtp:// or smtps://'),
  }),
  MAIL_FROM: text('MAIL_FROM', {
    description: 'Sender (From) of sign-up mail: address or "Name <address>" (D15)',
    default: 'no-reply@localhost',
    rule: (v) =>
      /^[^@\s<>]+@[^@\s<>]+$|<[^@\s<>]+@[^@\s<>]+>$/.test(v)
        ? undefined
        : `must be an e-mail address or "Name <address>" (got "${v}")`,
  }),
  SEED_DEMO: oneOf('SEED_DEMO', ['auto', 'true', 'false'] as const, {
    description:
      'Seed the demo data (docs/demo-data.md) at start-up: auto (embedded sqlite outside production) | true | false',
    default: 'auto',
  }),
  DEMO_PASSWORD: text('DEMO_PASSWORD', {
    description: 'Password of the demo users; required to seed in production',
    secret: true,
  }),
  SHUTDOWN_TIMEOUT_MS: int('SHUTDOWN_TIMEOUT_MS', {
    description: 'Longest graceful shutdown before the process exits (exit code 1)',
    default: '10000',
    min: 100,
  }),
  SHUTDOWN_DRAIN_MS: int('SHUTDOWN_DRAIN_MS', {
    description:
      'Longest HTTP drain of a shutdown: requests received before the signal finish, later ones get 503 NOT_READY; then the busy connections are closed. Less than SHUTDOWN_TIMEOUT_MS; unset = 5000 or half of SHUTDOWN_TIMEOUT_MS when that is less',
    min: 0,
  }),
  METRICS_ENABLED: bool('METRICS_ENABLED', {
    description: 'Serve Prometheus metrics at /metrics',
    default: 'true',
  }),
  PROXY_HOST: text('PROXY_HOST', {
    description:
      'Tenant proxy (npm run proxy, D7): address it binds to; unset = 127.0.0.1 outside production, 0.0.0.0 in production',
    rule: hostRule,
  }),
  PROXY_PORT: int('PROXY_PORT', {
    description: 'Tenant proxy: HTTP port',
    default: '8080',
    min: 0,
    max: 65535,
  }),
  PROXY_UPSTREAM: text('PROXY_UPSTREAM', {
    description:
      'Tenant proxy: URL of the service; unset = the service started from the same directory (./data/.service.json), else API_HOST:API_PORT',
    rule: (v) =>
      /^https?:\/\/[^/?#\s]+\/?$/.test(v) ? undefined : `must be http(s)://host[:port] (got "${v}")`,
  }),
  PROXY_BASE_DOMAIN: text('PROXY_BASE_DOMAIN', {
    description: 'Tenant proxy: Host <tenant_code>.<this> selects the tenant',
    default: 'localhost',
  }),
  PROXY_TENANT_CACHE_TTL_S: int('PROXY_TENANT_CACHE_TTL_S', {
    description: 'Tenant proxy: how long a tenant code lookup is cached, seconds',
    default: '30',
    min: 0,
  }),
  PROXY_TENANT_MISS_TTL_S: int('PROXY_TENANT_MISS_TTL_S', {
    description: 'Tenant proxy: how long an unknown or inactive tenant code is cached, seconds',
    default: '5',
    min: 0,
  }),
} as const;
