import { backoffDelayMs } from '../common/backoff';
import { errorMessage } from '../common/errors/error-message';
import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import type { AppConfig } from '../config/config.schema';
import { InjectConfig } from '../config/inject-config.decorator';
import { CacheService } from '../cache/cache.service';
import { RedisCacheStore } from '../cache/redis-cache.store';
import { ConnectionsService } from '../database/connections/connections.service';
import { DatabaseService } from '../database/database.service';
import { DEV_DEMO_PASSWORD } from '../database/seed/demo-data';
import { seedDemo } from '../database/seed/demo-seed';
import { ReadinessService } from './readiness.service';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A step of the `cache` bootstrap (spec §3.3); later modules (the catalog) register theirs. */
export type BootstrapStep = { name: string; run: () => Promise<void> };

/**
 * Drives the readiness flags in the background after the server listens, so probes answer from
 * the first moment: cache connect + PING (`redis`), database connect, migrations and seed
 * (`externalDbs`), then the bootstrap steps (`cache`).
 */
@Injectable()
export class StartupService implements OnApplicationBootstrap {
  private readonly logger = new Logger('Startup');
  private readonly steps: BootstrapStep[] = [];
  private stopped = false;
  private running?: Promise<void>;

  constructor(
    @InjectConfig() private readonly config: AppConfig,
    private readonly readiness: ReadinessService,
    private readonly cache: CacheService,
    private readonly database: DatabaseService,
    private readonly connections: ConnectionsService,
  ) {}

  registerBootstrapStep(step: BootstrapStep): void {
    this.steps.push(step);
  }

  onApplicationBootstrap(): void {
    this.running = this.run();
  }

  /** Resolves when start-up has finished (ready or given up); for tests and the CLI. */
  async settled(): Promise<void> {
    await this.running;
  }

  stop(): void {
    this.stopped = true;
  }

  private async run(): Promise<void> {
    const started = Date.now();
    const [cacheOk, dbOk] = await Promise.all([this.connectCache(), this.prepareDatabase()]);
    if (!cacheOk || !dbOk || this.stopped) return;
    for (const step of this.steps) {
      const t = Date.now();
      try {
        await step.run();
        this.logger.log(`Bootstrap step ${step.name} done in ${Date.now() - t} ms`);
      } catch (err) {
        // Partial catalog outcomes still count as finished (spec §3.3); the failure is logged.
        this.logger.warn(`Bootstrap step ${step.name} failed: ${errorMessage(err)}`);
      }
    }
    this.readiness.set('cache');
    this.logger.log(`Ready in ${Date.now() - started} ms`);
  }

  private async connectCache(): Promise<boolean> {
    const { startupMaxAttempts, startupRetryMs } = this.config.cache;
    for (let attempt = 1; attempt <= startupMaxAttempts && !this.stopped; attempt++) {
      try {
        // The store has only begun connecting: the first attempt waits for the connection (at
        // most the connect timeout) instead of failing on a stream that is not writable yet.
        if (attempt === 1) await this.cacheConnected();
        const pong = await this.cache.ping();
        if (pong !== 'PONG') throw new Error(`unexpected PING answer ${pong}`);
        this.readiness.set('redis');
        this.logger.log(`Cache (${this.cache.kind}) answered PING on attempt ${attempt}`);
        return true;
      } catch (err) {
        const delay = backoffDelayMs({ baseMs: startupRetryMs, maxMs: 5000 }, attempt);
        this.logger.warn(
          `Cache not reachable (attempt ${attempt}/${startupMaxAttempts}): ${errorMessage(err)}`,
        );
        if (attempt < startupMaxAttempts) await sleep(delay);
      }
    }
    if (!this.stopped) {
      const reason = `cache unreachable after ${startupMaxAttempts} attempts (CACHE_STARTUP_MAX_ATTEMPTS)`;
      this.readiness.markFailed(reason);
      this.logger.error(`Giving up: ${reason}; the service stays not ready until restarted`);
    }
    return false;
  }

  /** Resolves when the cache store's connection is ready (stores without one: at once). */
  private async cacheConnected(): Promise<void> {
    const store = this.cache.store;
    if (store instanceof RedisCacheStore) await store.whenReady();
  }

  private async prepareDatabase(): Promise<boolean> {
    try {
      await this.database.connect();
      if (this.config.db.runMigrations) await this.database.migrate();
      if (this.config.demo.seed) {
        this.logger.log('Seeding demo data (docs/demo-data.md)');
        const report = await seedDemo(this.database.dataSource, {
          password: this.config.demo.password ?? DEV_DEMO_PASSWORD,
          log: (msg) => this.logger.log(msg),
        });
        const total = Object.values(report.inserted).reduce((a, b) => a + b, 0);
        this.logger.log(
          total > 0 ? `Demo data seeded: ${JSON.stringify(report.inserted)}` : 'Demo data already present',
        );
      }
      // D3: externalDbs is set once every active app_connections row is open (at once when there
      // are none). Rows that cannot be used as stored are skipped with an error log; a connection
      // that gives up keeps the flag false, while the config database stays usable (true below).
      const report = await this.connections.openAll();
      if (report.failed.length > 0) {
        const reason = `external connection(s) not opened: ${report.failed
          .map((f) => `${f.code} (${f.reason})`)
          .join('; ')}`;
        this.readiness.markFailed(reason);
        this.logger.error(`Giving up: ${reason}; externalDbs stays false until restarted`);
        return true;
      }
      this.readiness.set('externalDbs');
      return true;
    } catch (err) {
      this.readiness.markFailed(`database: ${errorMessage(err)}`);
      this.logger.error(`Database start-up failed: ${errorMessage(err)}`);
      return false;
    }
  }
}
