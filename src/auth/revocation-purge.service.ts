import { errorMessage } from '../common/errors/error-message';
import { Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { StartupService } from '../health/startup.service';
import { RevocationService } from './revocation.service';

/** How often expired revocations are deleted after the one at start-up. */
export const REVOCATION_PURGE_INTERVAL_MS = 60 * 60 * 1000;

/**
 * Deletes expired rows of app_revoked_tokens (D46): once at start-up, as a bootstrap step (so only
 * after the database is connected and migrated), then every REVOCATION_PURGE_INTERVAL_MS on an
 * unref'd timer. Every instance purges; the DELETE is idempotent. Failures are logged, never thrown.
 */
@Injectable()
export class RevocationPurgeService implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('Revocation');
  private timer?: NodeJS.Timeout;
  private stopped = false;

  constructor(
    private readonly revocations: RevocationService,
    private readonly startup: StartupService,
  ) {}

  onModuleInit(): void {
    this.startup.registerBootstrapStep({ name: 'revocation-purge', run: () => this.start() });
  }

  onModuleDestroy(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
  }

  private async start(): Promise<void> {
    if (this.stopped) return;
    await this.purge();
    if (this.stopped) return;
    this.timer = setInterval(() => void this.purge(), REVOCATION_PURGE_INTERVAL_MS);
    this.timer.unref();
  }

  /** One purge; the number of rows deleted (undefined when the driver does not say, 0 on failure). */
  async purge(nowMs = Date.now()): Promise<number | undefined> {
    try {
      const deleted = await this.revocations.purgeExpired(nowMs);
      if (deleted) this.logger.log({ event: 'revocations_purged', deleted }, 'revocations_purged');
      return deleted;
    } catch (err) {
      this.logger.warn({ err: errorMessage(err) }, 'Purging expired revocations failed');
      return 0;
    }
  }
}
