import type { Type } from '@nestjs/common';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomBytes } from 'node:crypto';
import { createApp } from '../../src/bootstrap';
import { AppConfig, loadConfig } from '../../src/config/config.schema';
import { StartupService } from '../../src/health/startup.service';
import { createTestDatabase, TEST_SECRETS, testCacheUrl, TestDatabase } from './test-database';

export interface TestApp {
  app: NestFastifyApplication;
  config: AppConfig;
  db: TestDatabase;
  close(): Promise<void>;
}

export interface TestAppOptions {
  label: string;
  env?: Record<string, string>;
  extraModules?: Type[];
  /** Wait until start-up has finished (default true). */
  waitForStartup?: boolean;
}

/**
 * Boots the whole application as production does (createApp), on a database of its own and, with
 * TEST_CACHE=redis, on the real Redis under a key prefix of its own.
 */
export async function startTestApp(options: TestAppOptions): Promise<TestApp> {
  const db = await createTestDatabase(options.label);
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
    // One user per file sends most of a file's requests: the per-user limit (half of the
    // tenant's by default) is set to the tenant's, under which the files have always run. The
    // per-user limit's own tests set it (an empty value = the default).
    USER_RATE_LIMIT_POINTS: options.env?.RATE_LIMIT_POINTS ?? '1000',
    ...db.env,
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
    close: async () => {
      app.get(StartupService).stop();
      await app.close();
      await db.drop();
    },
  };
}

/** Polls until `check` returns true or the time is up. */
export async function waitFor(
  check: () => Promise<boolean>,
  timeoutMs = 20000,
  intervalMs = 100,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  throw new Error(`Condition not met within ${timeoutMs} ms`);
}
