import { Injectable } from '@nestjs/common';
import { NotFoundError, RateLimitedError } from '../common/errors/app-error';
import { valueLockName } from '../database/dialect/value-lock';
import { type JobAudience, type JobViewer, maySeeJob } from './job-access';
import { isFinished, type Job, type NewJob } from './job.types';
import { JobTransactions } from './job-transactions';
import { JobWatch } from './job-watch';
import { JobWorker } from './job-worker';
import { newPublicJobId } from './job-rows';
import { JobsRepository } from './jobs.repository';

/** How many unfinished jobs of a kind one user, one tenant and this instance may have. */
export interface AdmissionLimits {
  perUser: number;
  perTenant: number;
  perInstance: number;
  /** Retry-After of the 429 beyond a limit. */
  retryAfterMs: number;
  /** What the 429's message calls these jobs ("exports"). */
  noun: string;
}

/**
 * Queues, reads, waits for and cancels jobs for the routes of the feature that owns them. Every
 * read names the tenant; a job of another tenant, or of another kind than the route's, is a 404.
 */
@Injectable()
export class JobsService {
  constructor(
    private readonly jobs: JobsRepository,
    private readonly transactions: JobTransactions,
    private readonly watch: JobWatch,
    private readonly worker: JobWorker,
  ) {}

  /**
   * Queues a job. With `limits`, admission is atomic: the tenant's admissions of the kind are
   * serialised by a named lock (dialect/value-lock.ts; SQLite's writes queue anyway), the user's
   * and the tenant's unfinished jobs are counted, and beyond either limit — or beyond this
   * instance's — the answer is 429 RATE_LIMITED with Retry-After, and nothing is queued.
   */
  async enqueue(job: NewJob, limits?: AdmissionLimits): Promise<Job> {
    const refused = (whose: string, limit: number) =>
      new RateLimitedError(
        `Too many ${limits!.noun} in progress ${whose} (at most ${limit} at once); retry later`,
        limits!.retryAfterMs,
      );
    if (limits && this.watch.activeCount(job.kind) >= limits.perInstance)
      throw refused('on this instance', limits.perInstance);
    const release = this.watch.reserve(job.kind);
    try {
      const now = Date.now();
      const publicId = newPublicJobId();
      const id = await this.transactions.run(async (tx) => {
        if (limits) {
          await this.transactions.lock(tx, [
            valueLockName({ table: 'app_jobs', tenantId: job.tenantId, column: 'job_kind', value: job.kind }),
          ]);
          const active = await this.jobs.countActive(tx.config, job.tenantId, job.kind, job.createdBy);
          if (active.user >= limits.perUser) throw refused('for this user', limits.perUser);
          if (active.tenant >= limits.perTenant) throw refused('for this tenant', limits.perTenant);
        }
        return this.jobs.insert(tx.config, { ...job, publicId }, now);
      });
      const queued: Job = {
        ...job,
        id,
        publicId,
        status: 'PENDING',
        processed: 0,
        total: null,
        result: null,
        error: null,
        attempts: 0,
        createdAt: now,
        startedAt: null,
        updatedAt: now,
        finishedAt: null,
      };
      this.watch.track(queued);
      this.worker.wake();
      return queued;
    } finally {
      release();
    }
  }

  /**
   * Queues `job` unless one of its tenant and kind was queued at `since` or later: a periodic job
   * every instance schedules runs once per period across them. The check and the insert are
   * serialised by the same named lock as admissions (SQLite's writes queue anyway). Undefined when
   * one was already there.
   */
  async enqueueOnce(job: NewJob, since: number): Promise<number | undefined> {
    const id = await this.transactions.run(async (tx) => {
      await this.transactions.lock(tx, [
        valueLockName({ table: 'app_jobs', tenantId: job.tenantId, column: 'job_kind', value: job.kind }),
      ]);
      if (await this.jobs.queuedSince(tx.config, job.tenantId, job.kind, since)) return undefined;
      return this.jobs.insert(tx.config, job, Date.now());
    });
    if (id !== undefined) this.worker.wake();
    return id;
  }

  /** The job `id` of `kind` in the tenant; 404 otherwise. */
  async get(tenantId: string, id: number, kind: string): Promise<Job> {
    const job = await this.jobs.find(tenantId, id);
    if (!job || job.kind !== kind) throw new NotFoundError(`Job ${id} not found`);
    return job;
  }

  /**
   * The job clients know as `publicId`, of `kind` in the tenant, when `viewer` may see it (its
   * creator, or a job administrator: job-access.ts); 404 otherwise — never 403, which would confirm
   * that the job exists.
   */
  async getVisible(
    tenantId: string,
    publicId: string,
    kind: string,
    viewer: JobViewer,
    audience: JobAudience = 'tenant',
  ): Promise<Job> {
    const job = await this.jobs.findByPublicId(tenantId, publicId);
    if (!job || job.kind !== kind || !maySeeJob(job.createdBy, viewer, audience))
      throw new NotFoundError('Job not found');
    return job;
  }

  /**
   * The job once it has finished, or as it is after `ms` (the caller then answers 202 and the
   * client polls). A finished job's answer comes as soon as this instance's worker (at once) or a
   * poll of the table (another instance's worker) sees it.
   */
  async waitFor(job: Job, ms: number): Promise<Job> {
    if (isFinished(job.status)) return job;
    const finished = await this.watch.wait(job, ms);
    return finished ?? (await this.jobs.find(job.tenantId, job.id)) ?? job;
  }

  /**
   * Cancels an unfinished job (its worker stops at its next progress report or lease renewal, and
   * commits nothing); a finished one is answered as it is.
   */
  async cancel(tenantId: string, id: number, kind: string): Promise<Job> {
    await this.get(tenantId, id, kind);
    await this.transactions.run((tx) => this.jobs.cancel(tx.config, tenantId, id, Date.now()));
    const job = await this.get(tenantId, id, kind);
    if (isFinished(job.status)) this.watch.finished(job);
    return job;
  }
}
