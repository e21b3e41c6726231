import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { envExample } from './variable';
import {
  ENV_EXAMPLE_HEADER,
  ConfigValidationError,
  decodeKey32,
  loadConfig,
  parseDurationSeconds,
  VARIABLES,
} from './config.schema';

const SECRETS = {
  JWT_SECRET: 'x'.repeat(40),
  TENANT_ENCRYPTION_KEY: 'ab'.repeat(32),
};

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigValidationError) return err.problems;
    throw err;
  }
  return [];
}

describe('loadConfig', () => {
  it('should apply the defaults of spec §8 and D1-D2', () => {
    const c = loadConfig(SECRETS);
    expect(c.api.port).toBe(8008);
    expect(c.db.type).toBe('sqlite');
    expect(c.db.name).toBe('./data/app.sqlite');
    expect(c.cache.url).toBeUndefined();
    expect(c.cache.keyPrefix).toBe('mtb');
    expect(c.cache.startupMaxAttempts).toBe(20);
    expect(c.auth.jwtExpiresIn).toBe('24h');
    expect(c.db.connectionTimeoutMs).toBe(120000);
    expect(c.db.connectMaxAttempts).toBe(25);
    expect(c.db.concurrentWaitTimeoutMs).toBe(180000);
    expect(c.db.resumeMaxWaitMs).toBe(180000);
    expect(c.db.externalConnectTimeoutMs).toBe(120000);
    expect(c.db.pool).toEqual({ max: 100, min: 10, idleTimeoutMs: 30000, acquireTimeoutMs: 60000 });
    expect(c.rateLimit).toEqual({
      points: 1000,
      userPoints: 500,
      windowS: 10,
      publicPoints: 300,
      publicWindowS: 60,
      failurePoints: 100,
      failureWindowS: 60,
    });
    expect(c.api.bodyLimitBytes).toBe(1048576);
    expect(c.exports.ttlS).toBe(3600);
    expect(c.crypto.connectionEncryptionKey).toBe(SECRETS.TENANT_ENCRYPTION_KEY);
  });

  it('should derive the per-user rate limit from the tenant limit unless it is set, never above it', () => {
    expect(loadConfig({ ...SECRETS, RATE_LIMIT_POINTS: '10' }).rateLimit.userPoints).toBe(5);
    expect(loadConfig({ ...SECRETS, RATE_LIMIT_POINTS: '1' }).rateLimit.userPoints).toBe(1);
    expect(loadConfig({ ...SECRETS, USER_RATE_LIMIT_POINTS: '1000' }).rateLimit.userPoints).toBe(1000);
    expect(problemsOf({ ...SECRETS, USER_RATE_LIMIT_POINTS: '1001' })).toEqual([
      'USER_RATE_LIMIT_POINTS: must not exceed RATE_LIMIT_POINTS (1000)',
    ]);
  });

  it('should pick the port and user of each server dialect by default', () => {
    expect(loadConfig({ ...SECRETS, DB_TYPE: 'postgres' }).db).toMatchObject({
      port: 5432,
      user: 'postgres',
      name: 'mtb',
    });
    expect(loadConfig({ ...SECRETS, DB_TYPE: 'mariadb' }).db).toMatchObject({ port: 3306, user: 'root' });
    expect(loadConfig({ ...SECRETS, DB_TYPE: 'mssql' }).db).toMatchObject({ port: 1433, user: 'sa' });
  });

  it('should let SQL_EXTERNAL_CONNECT_TIMEOUT_MS fall back to SQL_CONNECTION_TIMEOUT', () => {
    expect(loadConfig({ ...SECRETS, SQL_CONNECTION_TIMEOUT: '5000' }).db.externalConnectTimeoutMs).toBe(5000);
    expect(
      loadConfig({ ...SECRETS, SQL_CONNECTION_TIMEOUT: '5000', SQL_EXTERNAL_CONNECT_TIMEOUT_MS: '700' }).db
        .externalConnectTimeoutMs,
    ).toBe(700);
  });

  it('should list every bad variable at once', () => {
    const problems = problemsOf({
      ...SECRETS,
      API_PORT: 'eighty',
      DB_TYPE: 'oracle',
      LOG_LEVEL: 'loud',
      CACHE_URL: 'http://x',
      DB_RUN_MIGRATIONS: 'maybe',
      JWT_EXPIRES_IN: 'forever',
    });
    const names = problems.map((p) => p.split(':')[0]).sort();
    expect(names).toEqual([
      'API_PORT',
      'CACHE_URL',
      'DB_RUN_MIGRATIONS',
      'DB_TYPE',
      'JWT_EXPIRES_IN',
      'LOG_LEVEL',
    ]);
  });

  it('should refuse a JWT_SECRET under 32 bytes outside development (D13)', () => {
    expect(
      problemsOf({ ...SECRETS, JWT_SECRET: 'short', NODE_ENV: 'production', SEED_DEMO: 'false' }),
    ).toEqual(['JWT_SECRET: must be at least 32 bytes outside development (D13)']);
    expect(problemsOf({ ...SECRETS, JWT_SECRET: 'short', NODE_ENV: 'development' })).toEqual([]);
  });

  it('should require the secrets in production and never generate them there', () => {
    const devSecrets = jest.fn(() => ({ jwtSecret: 'y'.repeat(40), tenantEncryptionKey: 'cd'.repeat(32) }));
    expect(() => loadConfig({ NODE_ENV: 'production' }, { devSecrets })).toThrow(/JWT_SECRET: required/);
    expect(devSecrets).not.toHaveBeenCalled();
  });

  it('should generate development secrets when none are set outside production', () => {
    const c = loadConfig(
      {},
      { devSecrets: () => ({ jwtSecret: 'y'.repeat(40), tenantEncryptionKey: 'cd'.repeat(32) }) },
    );
    expect(c.generatedSecrets).toEqual(['JWT_SECRET', 'TENANT_ENCRYPTION_KEY']);
    expect(c.auth.jwtSecret).toBe('y'.repeat(40));
  });

  it('should refuse a malformed TENANT_ENCRYPTION_KEY (D5)', () => {
    expect(problemsOf({ ...SECRETS, TENANT_ENCRYPTION_KEY: 'abc' })[0]).toMatch(/^TENANT_ENCRYPTION_KEY/);
  });

  it('should listen on loopback outside production and on every interface in production (issue 20 #6)', () => {
    expect(loadConfig(SECRETS).api.host).toBe('127.0.0.1');
    expect(loadConfig({ ...SECRETS, NODE_ENV: 'test' }).api.host).toBe('127.0.0.1');
    expect(loadConfig({ ...SECRETS, NODE_ENV: 'production' }).api.host).toBe('0.0.0.0');
    expect(loadConfig({ ...SECRETS, API_HOST: '0.0.0.0' }).api.host).toBe('0.0.0.0');
    expect(loadConfig({ ...SECRETS, NODE_ENV: 'production', API_HOST: '::1' }).api.host).toBe('::1');
    expect(problemsOf({ ...SECRETS, API_HOST: 'http://0.0.0.0:8008' })).toEqual([
      'API_HOST: must be an IP address (127.0.0.1, 0.0.0.0, ::) or a host name (got "http://0.0.0.0:8008")',
    ]);
  });

  it('should bound the HTTP drain of a shutdown below the whole shutdown (issue 20 #5)', () => {
    expect(loadConfig(SECRETS).api).toMatchObject({ shutdownTimeoutMs: 10000, shutdownDrainMs: 5000 });
    expect(problemsOf({ ...SECRETS, SHUTDOWN_DRAIN_MS: '10000' })).toEqual([
      'SHUTDOWN_DRAIN_MS: must be less than SHUTDOWN_TIMEOUT_MS',
    ]);
    expect(problemsOf({ ...SECRETS, SHUTDOWN_DRAIN_MS: '20000', SHUTDOWN_TIMEOUT_MS: '30000' })).toEqual([]);
  });

  it('should seed demo data by default only on the embedded default outside production', () => {
    expect(loadConfig(SECRETS).demo.seed).toBe(true);
    expect(loadConfig({ ...SECRETS, DB_TYPE: 'postgres' }).demo.seed).toBe(false);
    expect(problemsOf({ ...SECRETS, NODE_ENV: 'production', SEED_DEMO: 'true' })).toEqual([
      'DEMO_PASSWORD: required to seed demo data in production',
    ]);
  });

  it('should give every declared variable a description, and .env.example should list them all', () => {
    const example = readFileSync(join(__dirname, '../../.env.example'), 'utf8');
    for (const v of VARIABLES) {
      expect(v.description.length).toBeGreaterThan(5);
      expect(example).toMatch(new RegExp(`^#? ?${v.name}=`, 'm'));
    }
    // Generated from the declarations (npm run env:example): no variable is documented twice.
    expect(example).toBe(envExample(VARIABLES, ENV_EXAMPLE_HEADER));
    expect(new Set(VARIABLES.map((v) => v.name)).size).toBe(VARIABLES.length);
  });
});

describe('parseDurationSeconds', () => {
  it.each([
    ['3600', 3600],
    ['30m', 1800],
    ['24h', 86400],
    ['7d', 604800],
  ])('should read %s as %d seconds', (input, seconds) => expect(parseDurationSeconds(input)).toBe(seconds));

  it.each(['', '0', '1w', '-5', 'h'])('should refuse %p', (input) =>
    expect(parseDurationSeconds(input)).toBeUndefined(),
  );
});

describe('decodeKey32', () => {
  it('should accept 64 hex characters and base64 of 32 bytes', () => {
    expect(decodeKey32('00'.repeat(32))?.length).toBe(32);
    expect(decodeKey32(Buffer.alloc(32, 7).toString('base64'))?.length).toBe(32);
  });

  it('should refuse other lengths', () => {
    expect(decodeKey32('00'.repeat(16))).toBeUndefined();
    expect(decodeKey32(Buffer.alloc(16).toString('base64'))).toBeUndefined();
  });
});
