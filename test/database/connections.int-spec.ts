import { httpStatusOf } from '../../src/common/errors/error-codes';
import { Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AppError } from '../../src/common/errors/app-error';
import { AppConfig, loadConfig } from '../../src/config/config.schema';
import { createDataSource } from '../../src/database/data-source.factory';
import { DatabaseService } from '../../src/database/database.service';
import { encryptConnectionString } from '../../src/database/connections/connection-string.crypto';
import { ConnectionsService } from '../../src/database/connections/connections.service';
import {
  createTestDatabase,
  TEST_SECRETS,
  TestDatabase,
  TestDialect,
  testDialect,
} from '../support/test-database';

/**
 * D3 external connections: the configuration database on TEST_DB, the external one on another
 * server (postgres ↔ mariadb) or, for sqlite, in another file.
 */
const CONNECTION_KEY = 'a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90';
const OTHER_KEY = '0f'.repeat(32);
const configDialect = testDialect();
const externalDialect: TestDialect =
  configDialect === 'postgres' ? 'mariadb' : configDialect === 'mariadb' ? 'postgres' : 'sqlite';

function urlOf(db: TestDatabase): string {
  const c = db.config;
  if (c.type === 'sqlite') return `sqlite://${c.name}`;
  return `${c.type}://${encodeURIComponent(c.user)}:${encodeURIComponent(c.password)}@${c.host}:${c.port}/${c.name}`;
}
const typeOf = (d: TestDialect): string => (d === 'postgres' ? 'postgresql' : d);

function errorOf(fn: () => unknown): AppError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    return err as AppError;
  }
  throw new Error('expected an AppError');
}

const TITLE = `ConnectionsService (D3), config DB on ${configDialect}, external on ${externalDialect}`;

describe(TITLE, () => {
  let configDb: TestDatabase;
  let externalDb: TestDatabase;
  let config: AppConfig;
  let database: DatabaseService;
  let external: DataSource;
  let tenantA: string;
  let tenantB: string;
  const services: ConnectionsService[] = [];
  /** Every test runs with the Nest logger captured (quiet output, assertable messages). */
  let logs: Record<'log' | 'warn' | 'error', jest.SpyInstance>;
  const logged = (level: 'log' | 'warn' | 'error'): string[] =>
    logs[level].mock.calls.map((c) => String(c[0]));

  const newService = (): ConnectionsService => {
    const s = new ConnectionsService(config, database);
    services.push(s);
    return s;
  };

  async function insertConnection(
    code: string,
    stored: string,
    type: string,
    tenant: string | null,
    extra: { status?: number; deleted?: boolean } = {},
  ): Promise<void> {
    await database.dataSource
      .createQueryBuilder()
      .insert()
      .into('app_connections')
      .values({
        con_code: code,
        con_connection_string: stored,
        con_connection_type: type,
        con_tenant_id: tenant === null ? null : Number(tenant),
        con_status: extra.status ?? 1,
        con_is_deleted: extra.deleted ?? false,
      })
      .execute();
  }

  async function removeConnection(code: string): Promise<void> {
    await database.dataSource.query(`DELETE FROM app_connections WHERE con_code = '${code}'`);
  }

  beforeAll(async () => {
    configDb = await createTestDatabase('connections');
    externalDb = await createTestDatabase('connections_ext', externalDialect);
    config = loadConfig({
      ...TEST_SECRETS,
      NODE_ENV: 'test',
      ...configDb.env,
      CONNECTION_ENCRYPTION_KEY: CONNECTION_KEY,
      SQL_CONNECT_MAX_ATTEMPTS: '2',
      SQL_RESUME_MAX_WAIT_MS: '20000',
      SQL_EXTERNAL_CONNECT_TIMEOUT_MS: '5000',
    });
    database = new DatabaseService(config);
    // Set-up progress (connect, migrations) is not what this file tests: keep it out of the CI log.
    const setupLog = jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
    await database.connect();
    await database.migrate();
    setupLog.mockRestore();

    external = createDataSource(externalDb.config);
    await external.initialize();
    await external.query('CREATE TABLE ext_items (id INT PRIMARY KEY, label VARCHAR(50))');
    await external.query(`INSERT INTO ext_items (id, label) VALUES (1, 'from the external database')`);

    await database.dataSource.query(
      `INSERT INTO app_tenants (tnt_tenant_code, tnt_tenant_name) VALUES ('cona', 'A'), ('conb', 'B')`,
    );
    const rows: Array<{ tnt_id: number }> = await database.dataSource.query(
      `SELECT tnt_id FROM app_tenants WHERE tnt_tenant_code IN ('cona', 'conb') ORDER BY tnt_tenant_code`,
    );
    [tenantA, tenantB] = rows.map((r) => String(r.tnt_id));
  });

  beforeEach(() => {
    const quiet = (level: 'log' | 'warn' | 'error') =>
      jest.spyOn(Logger.prototype, level).mockImplementation(() => undefined);
    logs = { log: quiet('log'), warn: quiet('warn'), error: quiet('error') };
  });

  afterEach(async () => {
    for (const s of services.splice(0)) await s.onApplicationShutdown();
    jest.restoreAllMocks();
  });

  afterAll(async () => {
    await external?.destroy();
    await database?.onApplicationShutdown();
    await externalDb?.drop();
    await configDb?.drop();
  });

  it('should resolve at once with nothing to open, and give the config DB for null/default', async () => {
    const service = newService();
    const started = Date.now();
    await expect(service.openAll()).resolves.toEqual({ opened: [], skipped: [], failed: [] });
    expect(Date.now() - started).toBeLessThan(1000);
    for (const code of [null, undefined, '', 'default']) {
      expect(service.dataSourceFor(code, tenantA)).toBe(database.dataSource);
    }
  });

  describe('with connections', () => {
    beforeAll(async () => {
      const url = urlOf(externalDb);
      const type = typeOf(externalDialect);
      await insertConnection('ext_shared', encryptConnectionString(url, CONNECTION_KEY), type, null);
      await insertConnection('ext_a', encryptConnectionString(url, CONNECTION_KEY), type, tenantA);
      await insertConnection('plain', 'postgres://erp:hunter2@127.0.0.1:5432/erp', 'postgresql', null);
      await insertConnection('mismatch', encryptConnectionString(url, CONNECTION_KEY), 'mssql', null);
      await insertConnection(
        'bad_url',
        encryptConnectionString('postgres://erp:hunter2@127.0.0.1:5432', CONNECTION_KEY),
        'postgresql',
        null,
      );
      await insertConnection('wrong_key', encryptConnectionString(url, OTHER_KEY), type, null);
      await insertConnection('oracle', encryptConnectionString(url, CONNECTION_KEY), 'oracle', null);
      await insertConnection('deleted', encryptConnectionString(url, CONNECTION_KEY), type, null, {
        deleted: true,
      });
      await insertConnection('inactive', encryptConnectionString(url, CONNECTION_KEY), type, null, {
        status: 0,
      });
    });

    it('should open the good rows, skip the bad ones with an error log, and ignore inactive/deleted rows', async () => {
      const service = newService();
      const report = await service.openAll();
      expect(report.opened.sort()).toEqual(['ext_a', 'ext_shared']);
      expect(report.failed).toEqual([]);
      const skipped = Object.fromEntries(report.skipped.map((s) => [s.code, s.reason]));
      expect(Object.keys(skipped).sort()).toEqual(['bad_url', 'mismatch', 'oracle', 'plain', 'wrong_key']);
      expect(skipped.plain).toMatch(/not encrypted/);
      expect(skipped.mismatch).toMatch(/"mssql" does not match the URL scheme/);
      expect(skipped.bad_url).toMatch(/database name/);
      expect(skipped.wrong_key).toMatch(/cannot be decrypted/);
      expect(skipped.oracle).toMatch(/not supported/);

      for (const code of Object.keys(skipped)) {
        expect(logged('error')).toContainEqual(`Connection ${code} (system-wide) skipped: ${skipped[code]}`);
      }
      expect(logged('log')).toContainEqual(
        expect.stringMatching(/^Connection ext_a \(tenant \d+\): opening /),
      );
      expect(logged('warn')).toContain('External connections: 2 open, 5 skipped, 0 failed');
      for (const level of ['log', 'warn', 'error'] as const) {
        expect(logged(level).join('\n')).not.toContain('hunter2');
      }
      expect(JSON.stringify(service.status())).not.toContain('hunter2');
      expect(service.status().map((s) => s.code)).not.toEqual(expect.arrayContaining(['deleted']));
      expect(service.status().map((s) => s.code)).not.toEqual(expect.arrayContaining(['inactive']));
    });

    it('should run queries through dataSourceFor on the other database', async () => {
      const service = newService();
      await service.openAll();
      const ds = service.dataSourceFor('ext_shared', tenantB);
      expect(ds).not.toBe(database.dataSource);
      expect(ds.options.type).toBe(external.options.type);
      if (externalDialect === 'sqlite') expect(ds.options.database).toBe(externalDb.config.name);
      else expect(ds.options.type).not.toBe(database.dataSource.options.type);

      const rows: Array<{ label: string }> = await ds.query('SELECT label FROM ext_items WHERE id = 1');
      expect(rows).toEqual([{ label: 'from the external database' }]);
      // The configuration database has no such table: the query really went elsewhere.
      await expect(database.dataSource.query('SELECT label FROM ext_items')).rejects.toThrow();

      // A write through the pool is visible to a separate connection to the external database.
      await service
        .dataSourceFor('ext_a', tenantA)
        .query(`INSERT INTO ext_items (id, label) VALUES (2, 'written by A')`);
      const back: Array<{ label: string }> = await external.query('SELECT label FROM ext_items WHERE id = 2');
      expect(back).toEqual([{ label: 'written by A' }]);
    });

    it('should keep a tenant-owned connection to its tenant', async () => {
      const service = newService();
      await service.openAll();
      expect(service.dataSourceFor('ext_a', tenantA).isInitialized).toBe(true);
      const err = errorOf(() => service.dataSourceFor('ext_a', tenantB));
      expect(httpStatusOf(err.code)).toBe(403);
      expect(err.code).toBe('FORBIDDEN');
      expect(err.message).toBe('Connection ext_a is not available to this tenant');
      expect(service.dataSourceFor('ext_shared', tenantA)).toBe(service.dataSourceFor('ext_shared', tenantB));
    });

    it('should answer SERVICE_ERROR for unknown, skipped and not yet opened connections', async () => {
      const service = newService();
      expect(errorOf(() => service.dataSourceFor('ext_shared', tenantA)).message).toBe(
        'Connection ext_shared is not available',
      );
      await service.openAll();
      for (const code of ['nope', 'plain', 'deleted', 'inactive']) {
        const err = errorOf(() => service.dataSourceFor(code, tenantA));
        expect(err.code).toBe('SERVICE_ERROR');
        expect(httpStatusOf(err.code)).toBe(500);
        expect(err.message).toBe(`Connection ${code} is not available`);
      }
    });

    it('should share a running openAll and leave open pools alone on a later call', async () => {
      const service = newService();
      const [a, b] = [service.openAll(), service.openAll()];
      expect(a).toBe(b);
      await a;
      const first = service.dataSourceFor('ext_shared', tenantA);
      await service.openAll();
      expect(service.dataSourceFor('ext_shared', tenantA)).toBe(first);
    });

    it('should report a connection that gives up after SQL_CONNECT_MAX_ATTEMPTS as failed', async () => {
      await insertConnection(
        'down',
        encryptConnectionString('postgres://postgres:x@127.0.0.1:1/nothing', CONNECTION_KEY),
        'postgresql',
        null,
      );
      try {
        const service = newService();
        const report = await service.openAll();
        expect(report.opened.sort()).toEqual(['ext_a', 'ext_shared']);
        expect(report.failed).toEqual([
          { code: 'down', reason: expect.stringMatching(/ECONNREFUSED|connect/) },
        ]);
        expect(logged('warn')).toContainEqual(
          expect.stringMatching(/^Connection down not reachable \(attempt 1\/2\)/),
        );
        expect(logged('error')).toContainEqual(
          expect.stringMatching(/^Connection down failed after 2 attempt\(s\)/),
        );
        expect(service.status().find((s) => s.code === 'down')).toMatchObject({
          state: 'failed',
          attempts: 2,
        });
        expect(errorOf(() => service.dataSourceFor('down', tenantA)).message).toBe(
          'Connection down is not available',
        );
      } finally {
        await removeConnection('down');
      }
    });

    it('should close every pool on shutdown', async () => {
      const service = newService();
      await service.openAll();
      const ds = service.dataSourceFor('ext_shared', tenantA);
      await service.onApplicationShutdown();
      expect(ds.isInitialized).toBe(false);
      expect(() => service.dataSourceFor('ext_shared', tenantA)).toThrow(
        'Connection ext_shared is not available',
      );
    });
  });
});
