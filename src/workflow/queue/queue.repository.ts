import { Injectable } from '@nestjs/common';
import type { QueryRunner, SelectQueryBuilder } from 'typeorm';
import { DatabaseService } from '../../database/database.service';
import { fromDbTimestamp, toDbTimestamp } from '../../database/dialect';
import { skipLockedClaim } from '../../database/dialect/claim';
import { tenantNumber } from '../../database/raw-values';
import { textOf } from '../instance/json';

/** `step`: run the node; `timeout`: an approval step's `timeoutS` came due. */
export type QueueKind = 'step' | 'timeout';

/** ready: claimable once due; leased: a worker runs it until lease_until; held: its instance is paused. */
export type QueueStatus = 'ready' | 'leased' | 'held';

export interface QueueRow {
  id: number;
  tenantId: string;
  instanceId: number;
  nodeId: string;
  kind: QueueKind;
  /** 1 for a first try, n for the n-th (retries). */
  attempt: number;
  stepSeq: number;
  availableAt: number;
}

export interface NewQueueRow {
  tenantId: string;
  instanceId: number;
  nodeId: string;
  kind: QueueKind;
  attempt: number;
  stepSeq: number;
  availableAt: number;
}

const COLUMNS = [
  'wfq_id',
  'wfq_tenant_id',
  'wfq_instance_id',
  'wfq_node_id',
  'wfq_kind',
  'wfq_attempts',
  'wfq_step_seq',
  'wfq_available_at',
];

/**
 * wft_queue (D36, D49). A row is claimed with the dialect's skip-locked read and leased until
 * `wfq_lease_until`; the lease is renewed while the step runs; an expired lease is claimed again by
 * any worker. Delivery is at-least-once; the engine's fencing makes a step's effects once.
 */
@Injectable()
export class QueueRepository {
  constructor(private readonly database: DatabaseService) {}

  private get driverType(): string {
    return this.database.dataSource.driver.options.type;
  }

  private toRow(raw: Record<string, unknown>): QueueRow {
    return {
      id: Number(raw.wfq_id),
      tenantId: String(raw.wfq_tenant_id),
      instanceId: Number(raw.wfq_instance_id),
      nodeId: String(textOf(raw.wfq_node_id)),
      kind: textOf(raw.wfq_kind) === 'timeout' ? 'timeout' : 'step',
      attempt: Math.max(1, Number(raw.wfq_attempts ?? 1)),
      stepSeq: Number(raw.wfq_step_seq ?? 0),
      availableAt: fromDbTimestamp(raw.wfq_available_at, this.driverType) ?? 0,
    };
  }

  async enqueue(qr: QueryRunner, row: NewQueueRow, now: number): Promise<void> {
    await this.database.dataSource
      .createQueryBuilder(qr)
      .insert()
      .into('wft_queue', [
        'wfq_tenant_id',
        'wfq_instance_id',
        'wfq_node_id',
        'wfq_kind',
        'wfq_status',
        'wfq_attempts',
        'wfq_step_seq',
        'wfq_available_at',
        'wfq_created_at',
      ])
      .values({
        wfq_tenant_id: tenantNumber(row.tenantId),
        wfq_instance_id: row.instanceId,
        wfq_node_id: row.nodeId,
        wfq_kind: row.kind,
        wfq_status: 'ready',
        wfq_attempts: row.attempt,
        wfq_step_seq: row.stepSeq,
        wfq_available_at: toDbTimestamp(row.availableAt),
        wfq_created_at: toDbTimestamp(now),
      })
      .execute();
  }

  /** The candidates of a claim: due ready rows and rows whose lease has expired, oldest first. */
  claimCandidates(qr: QueryRunner, now: number, limit: number): SelectQueryBuilder<Record<string, unknown>> {
    const at = toDbTimestamp(now);
    return this.database.dataSource
      .createQueryBuilder(qr)
      .select(COLUMNS.map((c) => `q.${c} AS ${c}`))
      .from('wft_queue', 'q')
      .where(
        "((q.wfq_status = 'ready' AND q.wfq_available_at <= :at) OR (q.wfq_status = 'leased' AND q.wfq_lease_until < :at))",
        { at },
      )
      .orderBy('q.wfq_available_at', 'ASC')
      .addOrderBy('q.wfq_id', 'ASC')
      .limit(limit);
  }

  /**
   * Claims up to `limit` rows for `workerId` in the caller's transaction: the skip-locked read
   * (dialect/claim.ts), then the lease. Rows another worker holds are skipped, never waited for.
   */
  async claim(
    qr: QueryRunner,
    workerId: string,
    limit: number,
    leaseMs: number,
    now: number,
  ): Promise<QueueRow[]> {
    const claim = skipLockedClaim(qr, this.claimCandidates(qr, now, limit));
    const raws = (await qr.query(claim.sql, claim.params)) as Array<Record<string, unknown>>;
    const rows = raws.map((r) => this.toRow(r));
    if (rows.length === 0) return [];
    await this.database.dataSource
      .createQueryBuilder(qr)
      .update('wft_queue')
      .set({
        wfq_status: 'leased',
        wfq_claimed_by: workerId.slice(0, 100),
        wfq_claimed_at: toDbTimestamp(now),
        wfq_lease_until: toDbTimestamp(now + leaseMs),
      })
      .where('wfq_id IN (:...ids)', { ids: rows.map((r) => r.id) })
      .execute();
    return rows;
  }

  /** Extends the leases `workerId` still holds; the ids it no longer holds are not returned. */
  async renew(workerId: string, ids: number[], leaseMs: number, now: number): Promise<number> {
    if (ids.length === 0) return 0;
    const result = await this.database.dataSource
      .createQueryBuilder()
      .update('wft_queue')
      .set({ wfq_lease_until: toDbTimestamp(now + leaseMs) })
      .where("wfq_id IN (:...ids) AND wfq_claimed_by = :worker AND wfq_status = 'leased'", {
        ids,
        worker: workerId.slice(0, 100),
      })
      .execute();
    return result.affected ?? 0;
  }

  async delete(qr: QueryRunner | undefined, id: number): Promise<void> {
    await this.database.dataSource
      .createQueryBuilder(qr)
      .delete()
      .from('wft_queue')
      .where('wfq_id = :id', { id })
      .execute();
  }

  /** Every row of an instance (cancel, completion, failure); the count. */
  async deleteForInstance(
    qr: QueryRunner,
    tenantId: string,
    instanceId: number,
    kind?: QueueKind,
  ): Promise<number> {
    const qb = this.database.dataSource
      .createQueryBuilder(qr)
      .delete()
      .from('wft_queue')
      .where('wfq_instance_id = :id AND wfq_tenant_id = :tenant', {
        id: instanceId,
        tenant: tenantNumber(tenantId),
      });
    if (kind) qb.andWhere('wfq_kind = :kind', { kind });
    const result = await qb.execute();
    return result.affected ?? 0;
  }

  /** Pause: the instance's rows are held (a leased one too: its worker's commit will see PAUSED). */
  async holdForInstance(qr: QueryRunner, tenantId: string, instanceId: number): Promise<number> {
    return this.setStatusForInstance(qr, tenantId, instanceId, 'held', ['ready', 'leased']);
  }

  /** Resume: held rows become claimable again (their due times, delays and backoffs, stay). */
  async releaseForInstance(qr: QueryRunner, tenantId: string, instanceId: number): Promise<number> {
    return this.setStatusForInstance(qr, tenantId, instanceId, 'ready', ['held']);
  }

  /** A leased row given back (its step hit a deadlock): claimable again from `availableAt`. */
  async release(id: number, availableAt: number): Promise<void> {
    await this.database.dataSource
      .createQueryBuilder()
      .update('wft_queue')
      .set({
        wfq_status: 'ready',
        wfq_claimed_by: null,
        wfq_lease_until: null,
        wfq_available_at: toDbTimestamp(availableAt),
      })
      .where("wfq_id = :id AND wfq_status = 'leased'", { id })
      .execute();
  }

  /** A row whose instance turned out paused when its worker looked: held, unless it is gone. */
  async hold(id: number): Promise<void> {
    await this.database.dataSource
      .createQueryBuilder()
      .update('wft_queue')
      .set({ wfq_status: 'held', wfq_claimed_by: null, wfq_lease_until: null })
      .where('wfq_id = :id', { id })
      .execute();
  }

  private async setStatusForInstance(
    qr: QueryRunner,
    tenantId: string,
    instanceId: number,
    status: QueueStatus,
    from: QueueStatus[],
  ): Promise<number> {
    const result = await this.database.dataSource
      .createQueryBuilder(qr)
      .update('wft_queue')
      .set({ wfq_status: status, wfq_claimed_by: null, wfq_lease_until: null })
      .where('wfq_instance_id = :id AND wfq_tenant_id = :tenant AND wfq_status IN (:...from)', {
        id: instanceId,
        tenant: tenantNumber(tenantId),
        from,
      })
      .execute();
    return result.affected ?? 0;
  }

  /** Queue depth by status, for the metrics. */
  async depth(): Promise<Record<QueueStatus, number>> {
    const raws = await this.database.dataSource
      .createQueryBuilder()
      .select('q.wfq_status', 'status')
      .addSelect('COUNT(*)', 'n')
      .from('wft_queue', 'q')
      .groupBy('q.wfq_status')
      .getRawMany<{ status: unknown; n: unknown }>();
    const out: Record<QueueStatus, number> = { ready: 0, leased: 0, held: 0 };
    for (const r of raws) {
      const s = textOf(r.status) as QueueStatus;
      if (s in out) out[s] = Number(r.n);
    }
    return out;
  }
}
