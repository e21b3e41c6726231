import { errorMessage } from '../common/errors/error-message';
import { BeforeApplicationShutdown, Injectable, Logger } from '@nestjs/common';
import type { AppConfig } from '../config/config.schema';
import { InjectConfig } from '../config/inject-config.decorator';
import { isFinished, type Job } from './job.types';
import { JobsRepository } from './jobs.repository';

interface Tracked {
  tenantId: string;
  kind: string;
  waiters: Set<(job: Job | undefined) => void>;
}

/**
 * The jobs this instance has queued and not yet seen finish: what the per-instance admission limit
 * counts, and what requests wait on. A job finished by this instance's worker is reported at once
 * (`finished`); one run by another instance is noticed by a poll every JOB_POLL_MS, tenant by
 * tenant (each read scoped to its tenant). Polls run only while something is tracked.
 */
@Injectable()
export class JobWatch implements BeforeApplicationShutdown {
  private readonly logger = new Logger('Jobs');
  private readonly tracked = new Map<number, Tracked>();
  /** Admissions under way, by kind: they count until their job is tracked or refused. */
  private readonly reserved = new Map<string, number>();
  private timer?: NodeJS.Timeout;
  private closed = false;

  constructor(
    @InjectConfig() private readonly config: AppConfig,
    private readonly jobs: JobsRepository,
  ) {}

  /** Unfinished jobs of `kind` this instance has accepted (admissions under way included). */
  activeCount(kind: string): number {
    let n = this.reserved.get(kind) ?? 0;
    for (const t of this.tracked.values()) if (t.kind === kind) n++;
    return n;
  }

  /** Counts an admission of `kind` until the returned function is called. */
  reserve(kind: string): () => void {
    this.reserved.set(kind, (this.reserved.get(kind) ?? 0) + 1);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.reserved.set(kind, Math.max(0, (this.reserved.get(kind) ?? 1) - 1));
    };
  }

  track(job: Pick<Job, 'id' | 'tenantId' | 'kind'>): void {
    if (this.closed || this.tracked.has(job.id)) return;
    this.tracked.set(job.id, { tenantId: job.tenantId, kind: job.kind, waiters: new Set() });
    this.schedule();
  }

  /** The job once it is finished, or undefined when `ms` ran out first (or the instance stops). */
  wait(job: Pick<Job, 'id' | 'tenantId' | 'kind'>, ms: number): Promise<Job | undefined> {
    this.track(job);
    const entry = this.tracked.get(job.id);
    if (!entry || ms <= 0) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        entry.waiters.delete(done);
        resolve(undefined);
      }, ms);
      const done = (finished: Job | undefined) => {
        clearTimeout(timer);
        resolve(finished);
      };
      entry.waiters.add(done);
    });
  }

  /** A job has finished (reported by this instance's worker, or seen by a poll). */
  finished(job: Job): void {
    const entry = this.tracked.get(job.id);
    if (!entry || entry.tenantId !== job.tenantId) return;
    this.tracked.delete(job.id);
    for (const w of entry.waiters) w(job);
  }

  /** Stops polling; every waiting request gets its answer now (a 202 with the job to poll). */
  beforeApplicationShutdown(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    for (const entry of this.tracked.values()) for (const w of entry.waiters) w(undefined);
    this.tracked.clear();
  }

  private schedule(): void {
    if (this.timer || this.closed || this.tracked.size === 0) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.poll().finally(() => this.schedule());
    }, this.config.jobs.pollMs);
    this.timer.unref();
  }

  private async poll(): Promise<void> {
    const byTenant = new Map<string, number[]>();
    for (const [id, t] of this.tracked) byTenant.set(t.tenantId, [...(byTenant.get(t.tenantId) ?? []), id]);
    for (const [tenantId, ids] of byTenant) {
      try {
        const found = await this.jobs.findMany(tenantId, ids);
        for (const job of found) if (isFinished(job.status)) this.finished(job);
        // A job gone from the table (purged) is no longer waited for.
        const seen = new Set(found.map((j) => j.id));
        for (const id of ids) if (!seen.has(id)) this.drop(id);
      } catch (err) {
        this.logger.debug({ err: errorMessage(err) }, 'Job watch: the job table is not reachable; retrying');
      }
    }
  }

  private drop(id: number): void {
    const entry = this.tracked.get(id);
    this.tracked.delete(id);
    for (const w of entry?.waiters ?? []) w(undefined);
  }
}
