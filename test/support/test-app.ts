import type { Type } from '@nestjs/common';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { randomBytes } from 'node:crypto';
import { createApp } from '../../src/bootstrap';
import { AppConfig, loadConfig } from '../../src/config/config.schema';
import { StartupService } from '../../src/health/startup.service';
import { ContractRecorder, installContractHook } from './contract/contract-recorder';
import { dropRedisPrefix } from './redis-keys';
import { createTestDatabase, TEST_SECRETS, testCacheUrl, TestDatabase } from './test-database';

export interface TestApp {
  app: NestFastifyApplication;
  config: AppConfig;
  db: TestDatabase;
  /** The contract check of every answer (CONTRACT_CHECK=1, or the option), else undefined. */
  contract?: ContractRecorder;
  close(): Promise<void>;
}

export interface TestAppOptions {
  label: string;
  env?: Record<string, string>;
  extraModules?: Type[];
  /** Wait until start-up has finished (default true). */
  waitForStartup?: boolean;
  /** Check every answer against the served OpenAPI document (default: CONTRACT_CHECK=1). */
  contract?: boolean;
  /** Runs after createApp and before init: Fastify hooks of a test (fault injection) go here. */
  beforeInit?: (app: NestFastifyApplication) => void;
}

/**
 * No load shedding (503 OVERLOADED) unless a test asks for it (the overload tests do): a test app
 * shares its process and the machine with parallel test workers, whose bursts would shed an
 * unrelated test's requests (seen: tenant-header-age, and revocation-outage at load 4–6, answered
 * 503). Every helper that starts the service passes it (proxied-test-app, service-cluster).
 */
export const NO_LOAD_SHEDDING = {
  OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: '0',
  OVERLOAD_MAX_EVENT_LOOP_UTILIZATION: '0',
} as const;

/** CONTRACT_CHECK=1: every e2e app checks its answers against its document and fails on a violation. */
export function contractCheckEnabled(): boolean {
  return /^(1|true|yes)$/i.test(process.env.CONTRACT_CHECK ?? '');
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
    ...NO_LOAD_SHEDDING,
    ...db.env,
    ...options.env,
  });
  const app = await createApp(config, { logger: false, extraModules: options.extraModules });
  const contract = (options.contract ?? contractCheckEnabled()) ? new ContractRecorder() : undefined;
  if (contract) installContractHook(app.getHttpAdapter().getInstance(), contract);
  options.beforeInit?.(app);
  await app.init();
  await app.getHttpAdapter().getInstance().ready();
  if (options.waitForStartup !== false) await app.get(StartupService).settled();
  if (contract) await contract.attachWhenReady(app.getHttpAdapter().getInstance());
  return {
    app,
    config,
    db,
    contract,
    close: async () => {
      // An app started behind its readiness gate reads its document once it has passed it.
      if (contract && !contract.attached) await contract.attachWhenReady(app.getHttpAdapter().getInstance());
      app.get(StartupService).stop();
      await app.close();
      await db.drop();
      // The app's keys go with it: nothing of a test is left in Redis (issue 34 #12).
      if (config.cache.url) await dropRedisPrefix(config.cache.url, config.cache.keyPrefix);
      if (contract) contract.save(options.label);
      if (contract && contract.violations.length > 0 && options.contract === undefined)
        throw new Error(
          `${options.label}: ${contract.violations.length} answers violate the OpenAPI document ` +
            `(CONTRACT_CHECK):\n${contract.report()}`,
        );
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
