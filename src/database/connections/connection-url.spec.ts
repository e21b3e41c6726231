import { resolve } from 'node:path';
import { loadConfig } from '../../config/config.schema';
import {
  ConnectionUrlError,
  connectionTypeFor,
  connectionTypeProblem,
  describeTarget,
  EXTERNAL_POOL_MAX,
  externalDatabaseConfig,
  externalDataSourceOptions,
  parseConnectionUrl,
} from './connection-url';

const base = loadConfig({
  NODE_ENV: 'test',
  JWT_SECRET: 'x'.repeat(40),
  TENANT_ENCRYPTION_KEY: '7f3a1c9e5b2d4f6a8c0e1b3d5f7a9c2e4b6d8f0a1c3e5b7d9f2a4c6e8b0d1f3a',
  SQL_CONNECTION_TIMEOUT: '120000',
  SQL_EXTERNAL_CONNECT_TIMEOUT_MS: '15000',
}).db;

describe('parseConnectionUrl (D3)', () => {
  it('should parse a postgres URL with percent-encoded credentials', () => {
    expect(parseConnectionUrl('postgres://erp%40corp:p%40ss%3Aw0rd@db.example.com:6543/erp_main')).toEqual({
      type: 'postgres',
      host: 'db.example.com',
      port: 6543,
      user: 'erp@corp',
      password: 'p@ss:w0rd',
      name: 'erp_main',
    });
  });

  it.each([
    ['postgresql://u@h/d', 'postgres', 5432],
    ['mysql://u@h/d', 'mysql', 3306],
    ['mariadb://u@h/d', 'mariadb', 3306],
    ['mssql://u@h/d', 'mssql', 1433],
    ['SQLSERVER://u@h/d', 'mssql', 1433],
  ])('should map %s to %s with the default port', (url, type, port) => {
    expect(parseConnectionUrl(url)).toMatchObject({
      type,
      port,
      host: 'h',
      user: 'u',
      password: '',
      name: 'd',
    });
  });

  it('should default the user per dialect', () => {
    expect(parseConnectionUrl('postgres://h/d').user).toBe('postgres');
    expect(parseConnectionUrl('mariadb://h/d').user).toBe('root');
    expect(parseConnectionUrl('mssql://h/d').user).toBe('sa');
  });

  it('should strip the brackets of an IPv6 host', () => {
    expect(parseConnectionUrl('postgres://u:p@[::1]:5432/d').host).toBe('::1');
  });

  it('should read the supported query parameters', () => {
    expect(
      parseConnectionUrl(
        'mssql://sa:x@h:1433/d?poolMax=4&poolMin=1&encrypt=false&trustServerCertificate=true',
      ),
    ).toMatchObject({ poolMax: 4, poolMin: 1, encrypt: false, trustServerCertificate: true });
  });

  it('should parse sqlite URLs, absolute and relative', () => {
    expect(parseConnectionUrl('sqlite:///var/lib/erp.sqlite')).toMatchObject({
      type: 'sqlite',
      name: '/var/lib/erp.sqlite',
    });
    expect(parseConnectionUrl('sqlite:./data/erp.sqlite').name).toBe(resolve('./data/erp.sqlite'));
    expect(parseConnectionUrl('sqlite:/abs/x.db').name).toBe('/abs/x.db');
  });

  it.each([
    ['', /not a URL/],
    ['just text', /not a URL/],
    ['oracle://u:p@h:1521/d', /unsupported scheme "oracle"/],
    ['http://h/d', /unsupported scheme/],
    ['postgres:h/d', /no host/],
    ['postgres://u:p@/d', /malformed|no host/],
    ['postgres://u:p@h:5432', /database name/],
    ['postgres://u:p@h:5432/', /database name/],
    ['postgres://u:p@h:5432/a/b', /database name/],
    ['postgres://u:p@h:99999/d', /malformed/],
    ['postgres://u:p%zz@h/d', /percent-encoding/],
    ['postgres://u:p@h/d?sslmode=require', /unknown query parameter "sslmode"/],
    ['postgres://u:p@h/d?encrypt=true', /mssql only/],
    ['mysql://u:p@h/d?poolMax=0', /poolMax/],
    ['mysql://u:p@h/d?poolMax=2&poolMin=3', /poolMin must not exceed/],
    ['mssql://u:p@h/d?encrypt=maybe', /true or false/],
    ['postgres://u:p@h/d#x', /fragment/],
    ['sqlite:', /file path/],
    ['sqlite::memory:', /file path/],
    ['sqlite://relative/x.db', /sqlite:\/\/\/absolute/],
  ])('should refuse %p', (url, message) => {
    expect(() => parseConnectionUrl(url)).toThrow(ConnectionUrlError);
    expect(() => parseConnectionUrl(url)).toThrow(message);
  });

  it('should never repeat the password in an error', () => {
    for (const url of [
      'postgres://u:hunter2@h:99999/d',
      'postgres://u:hunter2@h/d?x=1',
      'postgres://u:hunter2@h/',
    ]) {
      expect(() => parseConnectionUrl(url)).toThrow(ConnectionUrlError);
      try {
        parseConnectionUrl(url);
      } catch (err) {
        expect((err as Error).message).not.toContain('hunter2');
      }
    }
  });
});

describe('externalDatabaseConfig', () => {
  it('should use a small pool and SQL_EXTERNAL_CONNECT_TIMEOUT_MS', () => {
    const db = externalDatabaseConfig(parseConnectionUrl('postgres://u:p@h:5433/erp'), base);
    expect(db).toMatchObject({
      type: 'postgres',
      host: 'h',
      port: 5433,
      user: 'u',
      password: 'p',
      name: 'erp',
      runMigrations: false,
      connectionTimeoutMs: 15000,
      connectMaxAttempts: base.connectMaxAttempts,
      resumeMaxWaitMs: base.resumeMaxWaitMs,
    });
    expect(db.pool).toMatchObject({ max: EXTERNAL_POOL_MAX, min: 0 });
    expect(describeTarget(db)).toBe('postgres u@h:5433/erp');
  });

  it('should honour poolMax/poolMin and the mssql flags', () => {
    const db = externalDatabaseConfig(
      parseConnectionUrl('mssql://sa:p@h/d?poolMax=3&poolMin=1&trustServerCertificate=true'),
      base,
    );
    expect(db.pool).toMatchObject({ max: 3, min: 1 });
    expect(db.mssql).toEqual({ encrypt: base.mssql.encrypt, trustServerCertificate: true });
  });

  it('should build dataSourceOptions without migrations, per dialect', () => {
    const pg = externalDataSourceOptions(
      externalDatabaseConfig(parseConnectionUrl('postgres://u:p@h/d'), base),
    );
    expect(pg).toMatchObject({ type: 'postgres', poolSize: EXTERNAL_POOL_MAX, connectTimeoutMS: 15000 });
    expect(pg.migrations).toEqual([]);
    const my = externalDataSourceOptions(
      externalDatabaseConfig(parseConnectionUrl('mariadb://u:p@h/d'), base),
    );
    expect(my).toMatchObject({ type: 'mariadb', connectTimeout: 15000 });
    const sq = externalDataSourceOptions(
      externalDatabaseConfig(parseConnectionUrl('sqlite:///tmp/x.sqlite'), base),
    );
    expect(sq).toMatchObject({ type: 'better-sqlite3', database: '/tmp/x.sqlite', fileMustExist: true });
  });
});

describe('connectionTypeProblem', () => {
  it.each([
    ['postgresql', 'postgres'],
    ['PostgreSQL', 'postgres'],
    ['postgres', 'postgres'],
    ['mysql', 'mysql'],
    ['mysql', 'mariadb'],
    ['mariadb', 'mysql'],
    ['mssql', 'mssql'],
    ['sqlserver', 'mssql'],
    ['sqlite', 'sqlite'],
  ] as const)('should accept type %s with a %s URL', (type, urlType) => {
    expect(connectionTypeProblem(type, urlType)).toBeUndefined();
  });

  it('should report a mismatch and an unsupported type', () => {
    expect(connectionTypeProblem('mssql', 'postgres')).toMatch(/does not match the URL scheme \(postgres\)/);
    expect(connectionTypeProblem('oracle', 'postgres')).toMatch(/"oracle" is not supported/);
  });

  it('should name the type to store for a dialect', () => {
    expect(connectionTypeFor('postgres')).toBe('postgresql');
    expect(connectionTypeFor('mariadb')).toBe('mariadb');
  });
});
