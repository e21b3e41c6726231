import { backoffDelayMs } from '../common/backoff';
import { isTransient } from '../common/errors/error-codes';
import { errorMessage } from '../common/errors/error-message';
import {
  BeforeApplicationShutdown,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnModuleDestroy,
} from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { QueryRunner } from 'typeorm';
import { hostname } from 'node:os';
import { requestScope } from '../common/request-scope';
import type { AppConfig } from '../config/config.schema';
import { InjectConfig } from '../config/inject-config.decorator';
import { ReadinessService } from '../health/readiness.service';
import type { ClaimedJob, Job, JobError, JobHandler, JobStatus } from './job.types';
import { JobHolds } from './job-holds';
import { jobError, JobStopped, quarantineOf, TENANT_INACTIVE } from './job-outcomes';
import { JobTransactions } from './job-transactions';
import { JobWatch } from './job-watch';
import { JobsRepository } from './jobs.repository';

/** The shortest pause of an idle worker; it doubles up to JOB_POLL_MS. */
const MIN_IDLE_MS = 25;
/** Progress goes to the job row at most this often (each write also renews the lease and sees a cancel). */
const PROGRESS_FLUSH_MS = 250;
/** A progress log line at most this often per job. */
const PROGRESS_LOG_MS = 5_000;
/**
 * How long shutdown lets running jobs finish before it stops and releases them (and then how long
 * it waits for them to stop): a quarter of SHUTDOWN_TIMEOUT_MS each, at most 3 s, so that a job
 * nearly done still commits and the rest is handed to another instance well within the timeout.
 */
const SHUTDOWN_GRACE_MS = 3_000;
/** Finished jobs are kept this long, then purged (hourly). */
export const FINISHED_JOB_RETENTION_MS = 7 * 24 * 3600 * 1000;
const PURGE_INTERVAL_MS = 3600 * 1000;

interface Active {
  job: ClaimedJob;
  handler: JobHandler;
  controller: AbortController;
  done: Promise<void>;
  progress?: { processed: number; total: number | null };
  /** Whether a progress above 0 was reported (the first one is written at once: job-outcomes.ts). */
  moved?: boolean;
  flushedAt: number;
  loggedAt: number;
}

/** A failed attempt is tried again after 1 s, 2 s, 4 s… (at most a minute). */
const JOB_RETRY_BACKOFF = { baseMs: 1000, maxMs: 60_000 };

/**
 * The background-job worker of this instance (ARCHITECTURE `jobs`; leases as D49). Feature modules
 * register a handler per kind; for each kind with a free slot the worker claims jobs from app_jobs
 * with the dialect's skip-locked read and leases them for JOB_LEASE_MS, renewed while they run. A
 * job whose instance died is claimed again once its lease runs out; one claimed `maxAttempts`
 * times without finishing fails. Idle, the worker polls with backoff up to JOB_POLL_MS and is woken
 * at once by a job queued on this instance. On shutdown it stops claiming, gives running jobs a
 * short grace, then aborts them and releases their leases so any instance takes them at once.
 */
@Injectable()
export class JobWorker implements OnApplicationBootstrap, BeforeApplicationShutdown, OnModuleDestroy {
  private readonly logger = new Logger('Jobs');
  /** Names this worker in job_lease_owner (with a claim number). */
  readonly workerId = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private readonly handlers = new Map<string, JobHandler>();
  private readonly active = new Map<number, Active>();
  private running = false;
  private claims = 0;
  private idleMs = MIN_IDLE_MS;
  private wakeUp?: () => void;
  private loopDone?: Promise<void>;
  private renewTimer?: NodeJS.Timeout;
  private purgeTimer?: NodeJS.Timeout;
  private lastError = 0;

  constructor(
    @InjectConfig() private readonly config: AppConfig,
    private readonly jobs: JobsRepository,
    private readonly holds: JobHolds,
    private readonly transactions: JobTransactions,
    private readonly watch: JobWatch,
    private readonly readiness: ReadinessService,
  ) {}

  /** Called by the module that owns a kind, at start-up (onModuleInit). */
  register(handler: JobHandler): void {
    if (this.handlers.has(handler.kind)) throw new Error(`Job kind ${handler.kind} is registered twice`);
    this.handlers.set(handler.kind, handler);
  }

  onApplicationBootstrap(): void {
    if (!this.config.jobs.worker) {
      this.logger.log('Job worker off (JOB_WORKER=off): this instance runs no background jobs');
      return;
    }
    this.running = true;
    const lease = this.config.jobs.leaseMs;
    this.renewTimer = setInterval(() => void this.renewAll(), Math.max(100, Math.floor(lease / 3)));
    this.renewTimer.unref();
    this.purgeTimer = setInterval(() => void this.purge(), PURGE_INTERVAL_MS);
    this.purgeTimer.unref();
    this.loopDone = this.loop();
  }

  async beforeApplicationShutdown(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.wake();
    await this.loopDone;
    const grace = Math.min(SHUTDOWN_GRACE_MS, this.config.api.shutdownTimeoutMs / 4);
    const settled = () => Promise.allSettled([...this.active.values()].map((a) => a.done));
    await Promise.race([settled(), new Promise((r) => setTimeout(r, grace).unref())]);
    for (const a of this.active.values()) a.controller.abort(new JobStopped('shutdown'));
    await Promise.race([settled(), new Promise((r) => setTimeout(r, grace).unref())]);
    this.clearTimers();
  }

  onModuleDestroy(): void {
    this.clearTimers();
  }

  /** Jobs running now on this instance. */
  get busy(): number {
    return this.active.size;
  }

  /**
   * Stops this instance's running jobs of the tenant at once (their rows were just cancelled: a
   * tenant erase); the workers of other instances see the cancel at their next renewal or hold.
   */
  stopTenant(tenantId: string): void {
    for (const a of this.active.values())
      if (a.job.tenantId === tenantId) a.controller.abort(new JobStopped('cancelled-or-lost'));
  }

  /** Claims now instead of at the next poll (a job was queued on this instance). */
  wake(): void {
    this.idleMs = MIN_IDLE_MS;
    const w = this.wakeUp;
    this.wakeUp = undefined;
    w?.();
  }

  private clearTimers(): void {
    if (this.renewTimer) clearInterval(this.renewTimer);
    if (this.purgeTimer) clearInterval(this.purgeTimer);
  }

  private activeOf(kind: string): number {
    let n = 0;
    for (const a of this.active.values()) if (a.job.kind === kind) n++;
    return n;
  }

  private async loop(): Promise<void> {
    const { leaseMs, pollMs } = this.config.jobs;
    while (this.running) {
      let claimed = 0;
      let full = true;
      // Until start-up has connected, migrated and seeded (spec §3.3), there is no table to read.
      for (const handler of this.readiness.ready ? this.handlers.values() : []) {
        const free = handler.concurrency - this.activeOf(handler.kind);
        if (free <= 0) continue;
        try {
          const owner = `${this.workerId}#${++this.claims}`;
          const jobs = await this.transactions.run((tx) =>
            this.jobs.claim(tx.config, owner, handler.kind, free, leaseMs, Date.now()),
          );
          for (const job of jobs) this.start(job, handler);
          claimed += jobs.length;
          if (jobs.length < free) full = false;
        } catch (err) {
          full = false;
          this.reportError(err);
        }
      }
      if (claimed > 0 && full) continue;
      // Idle (or every slot busy): wait for a wake-up, a free slot or the poll interval.
      await new Promise<void>((resolve) => {
        const timer = setTimeout(
          () => {
            this.wakeUp = undefined;
            resolve();
          },
          claimed > 0 ? MIN_IDLE_MS : this.idleMs,
        );
        timer.unref();
        this.wakeUp = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      if (claimed === 0) this.idleMs = Math.min(pollMs, this.idleMs * 2);
    }
  }

  private start(job: ClaimedJob, handler: JobHandler): void {
    const active: Active = {
      job,
      handler,
      controller: new AbortController(),
      done: Promise.resolve(),
      flushedAt: 0,
      loggedAt: 0,
    };
    this.active.set(job.id, active);
    const scope = {
      requestId: job.requestId ?? `job-${job.id}`,
      tenantId: job.tenantId,
      ...(job.createdBy === null ? {} : { userId: job.createdBy }),
    };
    active.done = requestScope
      .run(scope, () => this.execute(active))
      // Whatever happened, the claim lets go of a row that still names it (a cancelled one keeps
      // its owner until then: a tenant erase waits for that, TenantJobs.stop).
      .finally(() => this.holds.letGo(job))
      .catch((err: unknown) => this.reportError(err))
      .finally(() => {
        this.active.delete(job.id);
        this.wake();
      });
  }

  private async execute(active: Active): Promise<void> {
    const { job, handler, controller } = active;
    const startedAt = Date.now();
    const quarantined = quarantineOf(job);
    if (quarantined) {
      const attempt = job.attempts - 1;
      this.logger.warn(
        { event: 'job_quarantined', jobId: job.id, kind: job.kind, attempt },
        'job_quarantined',
      );
      await this.finish(active, 'FAILED', { error: quarantined });
      return;
    }
    if (job.attempts > handler.maxAttempts) {
      const message = `Gave up after ${handler.maxAttempts} attempts: the job's worker stopped each time`;
      await this.finish(active, 'FAILED', { error: { code: 'SERVICE_ERROR', message } });
      return;
    }
    this.logger.log(
      { event: 'job_started', jobId: job.id, kind: job.kind, attempt: job.attempts },
      'job_started',
    );
    let result: unknown;
    try {
      result = await handler.run(job, {
        signal: controller.signal,
        progress: (processed, total) => this.progress(active, processed, total),
        hold: (qr) => this.hold(active, qr),
      });
      controller.signal.throwIfAborted();
    } catch (err) {
      await this.failed(active, err, startedAt);
      return;
    }
    await this.finish(active, 'COMPLETED', { result }, startedAt);
  }

  private async failed(active: Active, err: unknown, startedAt: number): Promise<void> {
    const { job, handler, controller } = active;
    const reason: unknown = controller.signal.aborted ? controller.signal.reason : undefined;
    if (reason instanceof JobStopped) {
      if (reason.reason === 'shutdown') {
        const released = await this.transactions.run((tx) => this.jobs.release(tx.config, job, Date.now()));
        this.logger.log({ event: 'job_released', jobId: job.id, released }, 'job_released');
        return;
      }
      // Cancelled, its lease lost, or its tenant no longer active: only the last leaves the row
      // RUNNING under this claim, and then the job fails (the fenced write is a no-op otherwise).
      const failed = await this.transactions.run((tx) =>
        this.jobs.fail(tx.config, job, TENANT_INACTIVE, Date.now()),
      );
      this.logger.log({ event: 'job_stopped', jobId: job.id, tenantInactive: failed }, 'job_stopped');
      return;
    }
    const error = jobError(err);
    if (error.code === 'SERVICE_ERROR')
      this.logger.warn({ event: 'job_error', jobId: job.id, err: errorMessage(err) }, 'job_error');
    if (isTransient(err) && job.attempts < handler.maxAttempts) {
      const runAfter = Date.now() + backoffDelayMs(JOB_RETRY_BACKOFF, job.attempts);
      await this.transactions.run((tx) => this.jobs.retryLater(tx.config, job, error, runAfter, Date.now()));
      this.logger.log({ event: 'job_retry', jobId: job.id, attempt: job.attempts, runAfter }, 'job_retry');
      return;
    }
    await this.finish(active, 'FAILED', { error }, startedAt);
  }

  /** The fenced final write; then the local waiters hear of it at once. */
  private async finish(
    active: Active,
    status: Extract<JobStatus, 'COMPLETED' | 'FAILED'>,
    outcome: { result?: unknown; error?: JobError },
    startedAt = Date.now(),
  ): Promise<void> {
    const { job } = active;
    const now = Date.now();
    const committed = await this.transactions.run((tx) =>
      status === 'COMPLETED'
        ? this.jobs.complete(tx.config, job, outcome.result ?? null, now, active.progress)
        : this.jobs.fail(tx.config, job, outcome.error!, now),
    );
    const processed = active.progress?.processed ?? job.processed;
    this.logger.log(
      {
        event: 'job_finished',
        jobId: job.id,
        kind: job.kind,
        status,
        committed,
        ms: now - startedAt,
        processed,
      },
      'job_finished',
    );
    if (!committed) return; // cancelled or re-claimed meanwhile: the job row tells what happened
    const finished: Job = {
      ...job,
      status,
      result: outcome.result ?? null,
      error: outcome.error ?? null,
      processed,
      total: active.progress?.total ?? job.total,
      updatedAt: now,
      finishedAt: now,
    };
    this.watch.finished(finished);
  }

  private async progress(active: Active, processed: number, total: number | null): Promise<void> {
    active.progress = { processed, total };
    const now = Date.now();
    if (now - active.loggedAt >= PROGRESS_LOG_MS) {
      active.loggedAt = now;
      this.logger.log({ event: 'job_progress', jobId: active.job.id, processed, total }, 'job_progress');
    }
    const first = processed > 0 && !active.moved;
    if (first) active.moved = true;
    if (first || now - active.flushedAt >= PROGRESS_FLUSH_MS) await this.renew(active, now);
    active.controller.signal.throwIfAborted();
  }

  /** JobRun.hold: the job's row in the batch's transaction; a job no longer held stops. */
  private async hold(active: Active, qr: QueryRunner): Promise<void> {
    active.controller.signal.throwIfAborted();
    if (!(await this.holds.hold(qr, active.job, Date.now())))
      active.controller.abort(new JobStopped('cancelled-or-lost'));
    active.controller.signal.throwIfAborted();
  }

  /** Extends one lease (with the progress); a lost lease aborts the job. */
  private async renew(active: Active, now = Date.now()): Promise<void> {
    if (active.controller.signal.aborted) return;
    active.flushedAt = now;
    const held = await this.jobs.renew(active.job, this.config.jobs.leaseMs, now, active.progress);
    if (!held) active.controller.abort(new JobStopped('cancelled-or-lost'));
  }

  private async renewAll(): Promise<void> {
    for (const active of [...this.active.values()]) {
      try {
        await this.renew(active);
      } catch (err) {
        this.reportError(err);
      }
    }
  }

  private async purge(): Promise<void> {
    try {
      const purged = await this.jobs.purgeFinished(Date.now() - FINISHED_JOB_RETENTION_MS);
      if (purged > 0) this.logger.log({ event: 'jobs_purged', purged }, 'jobs_purged');
    } catch (err) {
      this.reportError(err);
    }
  }

  /** At most one warning per 10 s while the database is away. */
  private reportError(err: unknown): void {
    if (Date.now() - this.lastError < 10_000) return;
    this.lastError = Date.now();
    this.logger.warn({ err: errorMessage(err) }, 'Job worker: the job table is not reachable; retrying');
  }
}
