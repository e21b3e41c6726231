import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { Counter } from 'prom-client';
import { errorMessage } from '../common/errors/error-message';
import type { AppConfig } from '../config/config.schema';
import { InjectConfig } from '../config/inject-config.decorator';
import { SYSTEM_ONLY } from '../database/scope/tenant-rows';
import { MetricsService } from '../health/metrics.service';
import { ReadinessService } from '../health/readiness.service';
import { HistoryRepository } from '../records/history/history.repository';
import { TenantsRepository } from '../tenant/tenants.repository';
import type { ClaimedJob, JobHandler, JobRun } from './job.types';
import { JobWorker } from './job-worker';
import { JobsService } from './jobs.service';

export const AUDIT_RETENTION_KIND = 'audit.retention';
const DAY_MS = 24 * 3600 * 1000;
/** Entries deleted per statement. */
const PRUNE_BATCH = 1000;

export interface RetentionResult {
  pruned: number;
}

/**
 * D56's retention: audit entries older than AUDIT_RETENTION_DAYS (or the tenant's own
 * `tnt_add_dtls.auditRetentionDays`; 0 keeps them forever) are deleted by a job of the job machine.
 * Every instance whose worker runs schedules it once per AUDIT_RETENTION_INTERVAL_MS, and
 * `enqueueOnce` lets one schedule per period through, so it runs once per period across instances;
 * the lease hands it to another instance should the one running it die. The job belongs to no
 * tenant (tenant 0, no user). `audit_entries_pruned_total` counts what it deleted.
 */
@Injectable()
export class AuditRetentionJob implements JobHandler, OnModuleInit, OnApplicationBootstrap, OnModuleDestroy {
  readonly kind = AUDIT_RETENTION_KIND;
  readonly concurrency = 1;
  readonly maxAttempts = 3;
  private readonly logger = new Logger('AuditRetention');
  private readonly pruned: Counter;
  private timer?: NodeJS.Timeout;

  constructor(
    @InjectConfig() private readonly config: AppConfig,
    private readonly worker: JobWorker,
    private readonly jobs: JobsService,
    private readonly history: HistoryRepository,
    private readonly tenants: TenantsRepository,
    private readonly readiness: ReadinessService,
    metrics: MetricsService,
  ) {
    this.pruned = new Counter({
      name: 'audit_entries_pruned_total',
      help: 'Audit entries (record history) deleted by the retention job',
      registers: [metrics.registry],
    });
  }

  onModuleInit(): void {
    this.worker.register(this);
  }

  onApplicationBootstrap(): void {
    if (!this.config.jobs.worker) return;
    const every = this.config.auditRetention.intervalMs;
    this.timer = setInterval(() => void this.schedule(), every);
    this.timer.unref();
  }

  onModuleDestroy(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /** Queues this period's run unless an instance already has. Undefined when one was there. */
  async schedule(now = Date.now()): Promise<number | undefined> {
    if (!this.readiness.ready) return undefined;
    const every = this.config.auditRetention.intervalMs;
    try {
      return await this.jobs.enqueueOnce(
        { tenantId: SYSTEM_ONLY, kind: this.kind, createdBy: null, requestId: null, input: { at: now } },
        Math.floor(now / every) * every,
      );
    } catch (err) {
      this.logger.warn({ err: errorMessage(err) }, 'Audit retention could not be scheduled');
      return undefined;
    }
  }

  async run(_job: ClaimedJob, run: JobRun): Promise<RetentionResult> {
    const now = Date.now();
    const overrides = await this.tenants.auditRetentionOverrides();
    const plans: Array<{ before: number; whose: { tenantId: number } | { except: number[] } }> = [];
    for (const o of overrides)
      if (o.days > 0) plans.push({ before: now - o.days * DAY_MS, whose: { tenantId: o.tenantId } });
    const days = this.config.auditRetention.days;
    if (days > 0)
      plans.push({ before: now - days * DAY_MS, whose: { except: overrides.map((o) => o.tenantId) } });
    let pruned = 0;
    for (const plan of plans) {
      for (;;) {
        if (run.signal.aborted) throw run.signal.reason;
        const n = await this.history.pruneBatch(plan.before, plan.whose, PRUNE_BATCH);
        pruned += n;
        this.pruned.inc(n);
        await run.progress(pruned, null);
        if (n < PRUNE_BATCH) break;
      }
    }
    if (pruned > 0) this.logger.log({ pruned }, 'Audit entries pruned');
    return { pruned };
  }
}
