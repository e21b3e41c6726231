import { Injectable } from '@nestjs/common';
import type { QueryRunner, SelectQueryBuilder, UpdateQueryBuilder, WhereExpressionBuilder } from 'typeorm';
import { DatabaseService } from '../database/database.service';
import { toDbTimestamp } from '../database/dialect';
import { tenantNumber } from '../database/raw-values';
import { JOBS_TABLE } from '../database/schema';
import { ACTIVE_STATUSES, type ClaimedJob } from './job.types';

const TABLE = JOBS_TABLE.name;

/** The job, its tenant and the claim that holds it. */
type Held = Pick<ClaimedJob, 'id' | 'tenantId' | 'owner'>;

/**
 * Narrows a fenced write of a job (its row's WHERE) to a job whose tenant is still active (status 1,
 * not deleted: isTenantActive): a worker's renewal and its per-batch hold fail once the tenant is
 * erased or archived, on any instance, without a cache between (the row is read in the statement).
 * Tenant 0 is no tenant row: the system's own jobs (audit retention, the outbox purge).
 */
export function withActiveTenant<T extends WhereExpressionBuilder>(qb: T): T {
  qb.andWhere(
    '(job_tenant_id = 0 OR EXISTS (SELECT 1 FROM app_tenants jt WHERE jt.tnt_id = job_tenant_id AND jt.tnt_status = 1 AND (jt.tnt_is_deleted = :jtLive OR jt.tnt_is_deleted IS NULL)))',
    { jtLive: false },
  );
  return qb;
}

/**
 * The statements that stop a tenant's jobs and let a worker's claim go (issue 34 #4). A cancel of
 * the tenant's jobs keeps each job's lease owner: the row then says which worker still has to let
 * go of it, on whichever instance; the worker clears the owner once its handler has returned
 * (letGo), and a worker that died leaves a lease that runs out. Every statement names the tenant.
 */
@Injectable()
export class JobHolds {
  constructor(private readonly database: DatabaseService) {}

  private get ds() {
    return this.database.dataSource;
  }

  /** The per-batch hold (JobRun.hold): the worker's fenced row, its tenant active; true when held. */
  async hold(qr: QueryRunner, job: Held, now: number): Promise<boolean> {
    return ((await this.holdQuery(qr, job, now).execute()).affected ?? 0) > 0;
  }

  holdQuery(
    qr: QueryRunner | undefined,
    job: Held,
    now: number,
  ): UpdateQueryBuilder<Record<string, unknown>> {
    const qb = this.ds
      .createQueryBuilder(qr)
      .update(TABLE)
      .set({ job_updated_at: toDbTimestamp(now) })
      .where(
        "job_tenant_id = :tenant AND job_id = :id AND job_lease_owner = :owner AND job_status = 'RUNNING'",
        {
          tenant: tenantNumber(job.tenantId),
          id: job.id,
          owner: job.owner.slice(0, 100),
        },
      );
    return withActiveTenant(qb);
  }

  /** The worker's claim ends: its owner is cleared where it still names this claim (any status). */
  async letGo(job: Held): Promise<boolean> {
    return ((await this.letGoQuery(job).execute()).affected ?? 0) > 0;
  }

  letGoQuery(job: Held): UpdateQueryBuilder<Record<string, unknown>> {
    return this.ds
      .createQueryBuilder()
      .update(TABLE)
      .set({ job_lease_owner: null, job_lease_until: null })
      .where('job_tenant_id = :tenant AND job_id = :id AND job_lease_owner = :owner', {
        tenant: tenantNumber(job.tenantId),
        id: job.id,
        owner: job.owner.slice(0, 100),
      });
  }

  /** Cancels every unfinished job of the tenant, keeping who holds each; how many. */
  async cancelTenant(qr: QueryRunner | undefined, tenantId: string, now: number): Promise<number> {
    return (await this.cancelTenantQuery(qr, tenantId, now).execute()).affected ?? 0;
  }

  cancelTenantQuery(
    qr: QueryRunner | undefined,
    tenantId: string,
    now: number,
  ): UpdateQueryBuilder<Record<string, unknown>> {
    const at = toDbTimestamp(now);
    return this.ds
      .createQueryBuilder(qr)
      .update(TABLE)
      .set({ job_status: 'CANCELLED', job_updated_at: at, job_finished_at: at })
      .where('job_tenant_id = :tenant AND job_status IN (:...active)', {
        tenant: tenantNumber(tenantId),
        active: ACTIVE_STATUSES,
      });
  }

  /** The tenant's jobs a live worker still holds (an owner whose lease has not run out). */
  async heldCount(tenantId: string, now: number): Promise<number> {
    const raw = await this.heldQuery(tenantId, now).getRawOne<{ n: unknown }>();
    return Number(raw?.n ?? 0);
  }

  heldQuery(tenantId: string, now: number): SelectQueryBuilder<Record<string, unknown>> {
    return this.ds
      .createQueryBuilder()
      .select('COUNT(*)', 'n')
      .from(TABLE, 'j')
      .where('j.job_tenant_id = :tenant AND j.job_lease_owner IS NOT NULL AND j.job_lease_until >= :now', {
        tenant: tenantNumber(tenantId),
        now: toDbTimestamp(now),
      });
  }
}
