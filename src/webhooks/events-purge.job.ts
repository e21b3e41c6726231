import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { RateLimitedError } from '../common/errors/app-error';
import { errorMessage } from '../common/errors/error-message';
import type { AppConfig } from '../config/config.schema';
import { InjectConfig } from '../config/inject-config.decorator';
import { ReadinessService } from '../health/readiness.service';
import type { ClaimedJob, Job, JobHandler, JobRun } from '../jobs/job.types';
import { JobWorker } from '../jobs/job-worker';
import { JobsService } from '../jobs/jobs.service';
import { OutboxRepository } from '../records/outbox/outbox.repository';
import { DeliveriesRepository } from './deliveries.repository';

export const EVENTS_PURGE_KIND = 'events.purge';
/** The purge is the service's, not a tenant's: its job row carries the tenant no tenant has. */
const SYSTEM_TENANT = '0';
/** Rows removed per statement. */
const PURGE_BATCH = 1000;
/** How often each instance asks for a purge: a quarter of the retention, at most hourly. */
const purgeEveryMs = (retentionS: number) => Math.max(15_000, Math.min(3600_000, (retentionS * 1000) / 4));

/**
 * EVENTS_RETENTION_S (D54): outbox events, and the delivered webhook deliveries, older than the
 * retention are removed by a background job of the job machine (src/jobs: leased, any instance
 * runs it, a crash hands it on). Every instance asks for one now and then; admission lets one
 * unfinished purge exist at a time, so the others' requests are no-ops. Dead deliveries stay.
 */
@Injectable()
export class EventsPurgeJob implements JobHandler, OnModuleInit, OnApplicationBootstrap, OnModuleDestroy {
  readonly kind = EVENTS_PURGE_KIND;
  readonly concurrency = 1;
  readonly maxAttempts = 3;
  private readonly logger = new Logger('Events');
  private timer?: NodeJS.Timeout;

  constructor(
    @InjectConfig() private readonly config: AppConfig,
    private readonly worker: JobWorker,
    private readonly jobs: JobsService,
    private readonly outbox: OutboxRepository,
    private readonly deliveries: DeliveriesRepository,
    private readonly readiness: ReadinessService,
  ) {}

  onModuleInit(): void {
    this.worker.register(this);
  }

  onApplicationBootstrap(): void {
    if (!this.config.jobs.worker) return;
    this.timer = setInterval(() => {
      if (this.readiness.ready) void this.schedule().catch(() => undefined);
    }, purgeEveryMs(this.config.events.retentionS));
    this.timer.unref();
  }

  onModuleDestroy(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /** Queues a purge unless one is queued or running already (then null). */
  async schedule(): Promise<Job | null> {
    try {
      return await this.jobs.enqueue(
        { tenantId: SYSTEM_TENANT, kind: this.kind, createdBy: null, requestId: null, input: {} },
        { perUser: 1, perTenant: 1, perInstance: 1_000, retryAfterMs: 0, noun: 'purges' },
      );
    } catch (err) {
      if (err instanceof RateLimitedError) return null;
      this.logger.warn({ err: errorMessage(err) }, 'events_purge_not_queued');
      throw err;
    }
  }

  async run(_job: ClaimedJob, run: JobRun): Promise<{ events: number; deliveries: number }> {
    const before = Date.now() - this.config.events.retentionS * 1000;
    let events = 0;
    let deliveries = 0;
    for (;;) {
      const n = await this.outbox.purge(before, PURGE_BATCH);
      events += n;
      await run.progress(events, null);
      if (n < PURGE_BATCH) break;
    }
    for (;;) {
      const n = await this.deliveries.purgeDelivered(before, PURGE_BATCH);
      deliveries += n;
      await run.progress(events + deliveries, null);
      if (n < PURGE_BATCH) break;
    }
    this.logger.log({ event: 'events_purged', events, deliveries }, 'events_purged');
    return { events, deliveries };
  }
}
