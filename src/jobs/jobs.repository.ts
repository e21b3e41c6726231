import { Injectable } from '@nestjs/common';
import type { QueryRunner, SelectQueryBuilder, UpdateQueryBuilder } from 'typeorm';
import { DatabaseService } from '../database/database.service';
import { dialectOf, toDbTimestamp } from '../database/dialect';
import { skipLockedClaim } from '../database/dialect/claim';
import { insertedKeyOf, returningOf } from '../database/dialect/returning';
import { tenantNumber } from '../database/raw-values';
import { JOB_PUBLIC_ID_COLUMNS, JOBS_TABLE } from '../database/schema';
import { withActiveTenant } from './job-holds';
import { jobOfRow, jsonText, newPublicJobId, PUBLIC_JOB_ID } from './job-rows';
import { ACTIVE_STATUSES, ClaimedJob, Job, JobError, NewJob } from './job.types';

const TABLE = JOBS_TABLE.name;
const COLUMNS = [...JOBS_TABLE.columns, ...JOB_PUBLIC_ID_COLUMNS]
  .map((c) => c.name)
  .filter((c) => c !== 'job_lease_owner');

/** The lease a claimed job is fenced on: its id, its tenant and the claim's owner. */
type Held = Pick<ClaimedJob, 'id' | 'tenantId' | 'owner'>;

/**
 * app_jobs. Every read and every change made for a tenant names the tenant in its WHERE
 * (`job_tenant_id`), as do a worker's fenced writes (with its lease owner). Only the claim — which
 * serves every tenant by design — and the purge of old finished rows read across tenants; their
 * statements are printed per dialect in jobs-sql.spec.ts.
 */
@Injectable()
export class JobsRepository {
  constructor(private readonly database: DatabaseService) {}

  private get ds() {
    return this.database.dataSource;
  }

  private get driverType(): string {
    return this.ds.driver.options.type;
  }

  private select(qr?: QueryRunner): SelectQueryBuilder<Record<string, unknown>> {
    return this.ds
      .createQueryBuilder(qr)
      .select(COLUMNS.map((c) => `j.${c} AS ${c}`))
      .from(TABLE, 'j');
  }

  /** Inserts a job, with its public id or a new one (issue 34); its key. */
  async insert(qr: QueryRunner | undefined, job: NewJob, now: number): Promise<number> {
    const at = toDbTimestamp(now);
    const values = {
      job_public_id: job.publicId ?? newPublicJobId(),
      job_tenant_id: tenantNumber(job.tenantId),
      job_kind: job.kind,
      job_status: 'PENDING',
      job_created_by: job.createdBy,
      job_request_id: job.requestId?.slice(0, 100) ?? null,
      job_input: jsonText(job.input),
      job_processed: 0,
      job_attempts: 0,
      job_created_at: at,
      job_updated_at: at,
    };
    const qb = this.ds.createQueryBuilder(qr).insert().into(TABLE, Object.keys(values)).values(values);
    const dialect = dialectOf(this.driverType);
    const returning = returningOf(dialect, 'job_id', (c) => this.ds.driver.escape(c));
    if (returning) qb.returning(returning);
    return insertedKeyOf(dialect, (await qb.execute()).raw);
  }

  /** The job `id` of tenant `tenantId`; null when it is unknown there. */
  async find(tenantId: string, id: number): Promise<Job | null> {
    const raw = await this.findQuery(tenantId, id).getRawOne<Record<string, unknown>>();
    return raw ? jobOfRow(raw, this.driverType) : null;
  }

  /** The job of tenant `tenantId` known to clients as `publicId`; null when it is unknown there. */
  async findByPublicId(tenantId: string, publicId: string): Promise<Job | null> {
    if (!PUBLIC_JOB_ID.test(publicId)) return null;
    const raw = await this.select()
      .where('j.job_tenant_id = :tenant AND j.job_public_id = :publicId', {
        tenant: tenantNumber(tenantId),
        publicId,
      })
      .getRawOne<Record<string, unknown>>();
    return raw ? jobOfRow(raw, this.driverType) : null;
  }

  findQuery(tenantId: string, id: number, qr?: QueryRunner): SelectQueryBuilder<Record<string, unknown>> {
    return this.select(qr).where('j.job_tenant_id = :tenant AND j.job_id = :id', {
      tenant: tenantNumber(tenantId),
      id,
    });
  }

  /** Several jobs of one tenant (a watcher's poll); the ones not found are left out. */
  async findMany(tenantId: string, ids: readonly number[]): Promise<Job[]> {
    if (ids.length === 0) return [];
    const raws = await this.select()
      .where('j.job_tenant_id = :tenant AND j.job_id IN (:...ids)', { tenant: tenantNumber(tenantId), ids })
      .getRawMany<Record<string, unknown>>();
    return raws.map((r) => jobOfRow(r, this.driverType));
  }

  /** Unfinished jobs of `kind` in the tenant, and how many of them `userId` queued (admission). */
  async countActive(
    qr: QueryRunner | undefined,
    tenantId: string,
    kind: string,
    userId: number | null,
  ): Promise<{ tenant: number; user: number }> {
    const raw = await this.countActiveQuery(tenantId, kind, userId, qr).getRawOne<{
      total: unknown;
      mine: unknown;
    }>();
    return { tenant: Number(raw?.total ?? 0), user: Number(raw?.mine ?? 0) };
  }

  countActiveQuery(
    tenantId: string,
    kind: string,
    userId: number | null,
    qr?: QueryRunner,
  ): SelectQueryBuilder<Record<string, unknown>> {
    return this.ds
      .createQueryBuilder(qr)
      .select('COUNT(*)', 'total')
      .addSelect('SUM(CASE WHEN j.job_created_by = :user THEN 1 ELSE 0 END)', 'mine')
      .from(TABLE, 'j')
      .where('j.job_tenant_id = :tenant AND j.job_kind = :kind AND j.job_status IN (:...active)', {
        tenant: tenantNumber(tenantId),
        kind,
        active: ACTIVE_STATUSES,
        user: userId ?? -1,
      });
  }

  /** Cancels an unfinished job of the tenant; false when it is unknown there or already finished. */
  async cancel(qr: QueryRunner | undefined, tenantId: string, id: number, now: number): Promise<boolean> {
    const at = toDbTimestamp(now);
    const result = await this.ds
      .createQueryBuilder(qr)
      .update(TABLE)
      .set({
        job_status: 'CANCELLED',
        job_lease_owner: null,
        job_lease_until: null,
        job_updated_at: at,
        job_finished_at: at,
      })
      .where('job_tenant_id = :tenant AND job_id = :id AND job_status IN (:...active)', {
        tenant: tenantNumber(tenantId),
        id,
        active: ACTIVE_STATUSES,
      })
      .execute();
    return (result.affected ?? 0) > 0;
  }

  /**
   * The candidates of a claim, across tenants (a worker serves every tenant): PENDING jobs of
   * `kind` that are due, and RUNNING ones whose lease ran out (their instance died), oldest first.
   */
  claimCandidates(qr: QueryRunner, kind: string, now: number, limit: number) {
    return this.select(qr)
      .where('j.job_kind = :kind', { kind })
      .andWhere(
        "((j.job_status = 'PENDING' AND (j.job_run_after IS NULL OR j.job_run_after <= :now)) OR (j.job_status = 'RUNNING' AND j.job_lease_until < :now))",
        { now: toDbTimestamp(now) },
      )
      .orderBy('j.job_id', 'ASC')
      .limit(limit);
  }

  /**
   * Claims up to `limit` jobs of `kind` for `owner` in the caller's transaction (D49): the
   * skip-locked read (dialect/claim.ts), then, per row, an UPDATE that takes it only if it is
   * still claimable — so even a read that could not skip (SQLite's) never hands one job to two
   * workers. Each claim spends an attempt.
   */
  async claim(
    qr: QueryRunner,
    owner: string,
    kind: string,
    limit: number,
    leaseMs: number,
    now: number,
  ): Promise<ClaimedJob[]> {
    const statement = skipLockedClaim(qr, this.claimCandidates(qr, kind, now, limit));
    const raws = (await qr.query(statement.sql, statement.params)) as Array<Record<string, unknown>>;
    const claimed: ClaimedJob[] = [];
    for (const raw of raws) {
      const job = jobOfRow(raw, this.driverType);
      const taken = await this.claimOne(qr, job, owner, leaseMs, now).execute();
      if ((taken.affected ?? 0) === 0) continue;
      claimed.push({
        ...job,
        // A RUNNING candidate's instance died with it: how far it got decides its fate (job-worker.ts).
        ...(job.status === 'RUNNING' ? { crashedClaim: { processed: job.processed } } : {}),
        processed: 0,
        status: 'RUNNING',
        owner,
        leaseUntil: now + leaseMs,
        attempts: job.attempts + 1,
        startedAt: job.startedAt ?? now,
        updatedAt: now,
      });
    }
    return claimed;
  }

  claimOne(
    qr: QueryRunner,
    job: Job,
    owner: string,
    leaseMs: number,
    now: number,
  ): UpdateQueryBuilder<Record<string, unknown>> {
    const at = toDbTimestamp(now);
    return this.ds
      .createQueryBuilder(qr)
      .update(TABLE)
      .set({
        job_status: 'RUNNING',
        job_lease_owner: owner.slice(0, 100),
        job_lease_until: toDbTimestamp(now + leaseMs),
        job_attempts: () => 'job_attempts + 1',
        // Each claim's progress starts at 0, so a crashed claim's row tells whether it got anywhere.
        job_processed: 0,
        job_started_at: () => 'COALESCE(job_started_at, :at)',
        job_updated_at: at,
      })
      .where(
        "job_tenant_id = :tenant AND job_id = :id AND ((job_status = 'PENDING') OR (job_status = 'RUNNING' AND job_lease_until < :at))",
        { tenant: tenantNumber(job.tenantId), id: job.id, at },
      );
  }

  /** A write of the worker that holds `job`: it applies only while that claim is still the job's lease. */
  fencedQuery(qr: QueryRunner | undefined, job: Held, set: Record<string, unknown>) {
    return this.ds
      .createQueryBuilder(qr)
      .update(TABLE)
      .set(set)
      .where(
        "job_tenant_id = :tenant AND job_id = :id AND job_lease_owner = :owner AND job_status = 'RUNNING'",
        {
          tenant: tenantNumber(job.tenantId),
          id: job.id,
          owner: job.owner.slice(0, 100),
        },
      );
  }

  private async fencedUpdate(qr: QueryRunner | undefined, job: Held, set: Record<string, unknown>) {
    return ((await this.fencedQuery(qr, job, set).execute()).affected ?? 0) > 0;
  }

  /**
   * Extends the lease, with the progress when given; false when the lease is lost (cancelled,
   * or claimed by another worker after it ran out) or the job's tenant is no longer active: the
   * worker then stops.
   */
  async renew(
    job: Held,
    leaseMs: number,
    now: number,
    progress?: { processed: number; total: number | null },
  ): Promise<boolean> {
    return ((await this.renewQuery(job, leaseMs, now, progress).execute()).affected ?? 0) > 0;
  }

  renewQuery(
    job: Held,
    leaseMs: number,
    now: number,
    progress?: { processed: number; total: number | null },
  ) {
    const renewal = this.fencedQuery(undefined, job, {
      job_lease_until: toDbTimestamp(now + leaseMs),
      job_updated_at: toDbTimestamp(now),
      ...(progress ? { job_processed: progress.processed, job_total: progress.total } : {}),
    });
    return withActiveTenant(renewal);
  }

  /** The job's result, with its last progress (a progress report may not have been written yet). */
  async complete(
    qr: QueryRunner | undefined,
    job: Held,
    result: unknown,
    now: number,
    progress?: { processed: number; total: number | null },
  ): Promise<boolean> {
    const at = toDbTimestamp(now);
    return this.fencedUpdate(qr, job, {
      ...(progress ? { job_processed: progress.processed, job_total: progress.total } : {}),
      job_status: 'COMPLETED',
      job_result: jsonText(result),
      job_lease_owner: null,
      job_lease_until: null,
      job_updated_at: at,
      job_finished_at: at,
    });
  }

  async fail(qr: QueryRunner | undefined, job: Held, error: JobError, now: number): Promise<boolean> {
    const at = toDbTimestamp(now);
    return this.fencedUpdate(qr, job, {
      job_status: 'FAILED',
      job_error: jsonText(error),
      job_lease_owner: null,
      job_lease_until: null,
      job_updated_at: at,
      job_finished_at: at,
    });
  }

  /** Back to PENDING, due at `runAfter` (a retry after a transient failure); the attempt stays spent. */
  async retryLater(qr: QueryRunner | undefined, job: Held, error: JobError, runAfter: number, now: number) {
    return this.fencedUpdate(qr, job, {
      job_status: 'PENDING',
      job_error: jsonText(error),
      job_lease_owner: null,
      job_lease_until: null,
      job_run_after: toDbTimestamp(runAfter),
      job_updated_at: toDbTimestamp(now),
    });
  }

  /** Gives a held job back at once (shutdown): PENDING again, and the attempt is not counted. */
  async release(qr: QueryRunner | undefined, job: Held, now: number): Promise<boolean> {
    return this.fencedUpdate(qr, job, {
      job_status: 'PENDING',
      job_lease_owner: null,
      job_lease_until: null,
      job_attempts: () => 'CASE WHEN job_attempts > 0 THEN job_attempts - 1 ELSE 0 END',
      job_updated_at: toDbTimestamp(now),
    });
  }

  /** Whether the tenant has a job of `kind`, in any status, queued at `since` or later. */
  async queuedSince(
    qr: QueryRunner | undefined,
    tenantId: string,
    kind: string,
    since: number,
  ): Promise<boolean> {
    const row = await this.ds
      .createQueryBuilder(qr)
      .select('j.job_id', 'id')
      .from(TABLE, 'j')
      .where('j.job_tenant_id = :tenant AND j.job_kind = :kind AND j.job_created_at >= :since', {
        tenant: tenantNumber(tenantId),
        kind,
        since: toDbTimestamp(since),
      })
      .limit(1)
      .getRawOne<Record<string, unknown>>();
    return row !== undefined;
  }

  /** Deletes finished jobs (any tenant) finished before `before`; how many. */
  async purgeFinished(before: number): Promise<number> {
    const result = await this.ds
      .createQueryBuilder()
      .delete()
      .from(TABLE)
      .where('job_finished_at < :before', { before: toDbTimestamp(before) })
      .execute();
    return result.affected ?? 0;
  }
}
