import { randomBytes } from 'node:crypto';
import { createApp } from '../../src/bootstrap';
import { loadConfig } from '../../src/config/config.schema';
import { StartupService } from '../../src/health/startup.service';
import { startTcpProxy, TcpProxy } from './tcp-proxy';
import { dropRedisPrefix } from './redis-keys';
import { NO_LOAD_SHEDDING, type TestApp, type TestAppOptions } from './test-app';
import { createTestDatabase, TEST_SECRETS, testCacheUrl } from './test-database';

export interface ProxiedTestApp extends TestApp {
  /**
   * Between the app and its database server (TEST_DB=postgres|mariadb): `proxy.cut()` is a database
   * outage for this app only. Undefined on SQLite, whose database is a file of the process.
   */
  proxy: TcpProxy | undefined;
}

/**
 * startTestApp, with the app's connection to a database server run through a TcpProxy of the test:
 * the database of its own is created first (createTestDatabase), the proxy pipes to its DB_HOST and
 * DB_PORT, and the app is given the proxy's address instead. Migrations, seeding and the test's
 * own queries through the app's DataSource all pass through the proxy; `close()` restores it first,
 * so that the app shuts down and the database is dropped as usual.
 */
export async function startProxiedTestApp(options: TestAppOptions): Promise<ProxiedTestApp> {
  const db = await createTestDatabase(options.label);
  const proxy =
    db.dialect === 'sqlite' ? undefined : await startTcpProxy(Number(db.env.DB_PORT), db.env.DB_HOST);
  const cacheUrl = testCacheUrl();
  const config = loadConfig({
    ...TEST_SECRETS,
    NODE_ENV: 'test',
    LOG_LEVEL: 'error',
    LOG_FORMAT: 'json',
    SEED_DEMO: 'true',
    CACHE_KEY_PREFIX: `test-${randomBytes(4).toString('hex')}`,
    CACHE_STARTUP_RETRY_MS: '100',
    ...(cacheUrl ? { CACHE_URL: cacheUrl } : {}),
    ...NO_LOAD_SHEDDING,
    ...db.env,
    ...(proxy ? { DB_HOST: '127.0.0.1', DB_PORT: String(proxy.port) } : {}),
    ...options.env,
  });
  const app = await createApp(config, { logger: false, extraModules: options.extraModules });
  await app.init();
  await app.getHttpAdapter().getInstance().ready();
  if (options.waitForStartup !== false) await app.get(StartupService).settled();
  return {
    app,
    config,
    db,
    proxy,
    close: async () => {
      await proxy?.restore();
      app.get(StartupService).stop();
      await app.close();
      await proxy?.close();
      await db.drop();
      if (config.cache.url) await dropRedisPrefix(config.cache.url, config.cache.keyPrefix);
    },
  };
}
