import { Injectable } from '@nestjs/common';
import type { QueryRunner } from 'typeorm';
import { DatabaseService } from '../database/database.service';
import { skipLockedClaim } from '../database/dialect/claim';
import { fromDbTimestamp, toDbTimestamp } from '../database/dialect/timestamps';
import { livePredicate, tenantNumberOf } from '../database/scope/tenant-rows';
import { DELIVERY_STATUSES, type DeliveryStatus } from './webhook.types';

const TABLE = 'app_webhook_deliveries';
type Raw = Record<string, unknown>;

/** A new delivery, as the relay writes it. */
export interface NewDelivery {
  uid: string;
  tenantId: string;
  webhookId: number;
  eventUid: string;
  sequence: number;
  type: string;
  entityCode: string;
  recordId: number;
  payload: string;
  occurredAt: number;
}

/** A delivery row. */
export interface Delivery {
  id: number;
  uid: string;
  tenantId: string;
  webhookId: number;
  eventUid: string;
  sequence: number;
  type: string;
  entityCode: string;
  recordId: number;
  payload: string;
  status: DeliveryStatus;
  attempts: number;
  nextAttemptAt: number | null;
  leaseOwner: string | null;
  leaseUntil: number | null;
  lastStatus: number | null;
  lastError: string | null;
  lastResponse: string | null;
  occurredAt: number;
  createdAt: number;
  lastAttemptAt: number | null;
  deliveredAt: number | null;
}

/** The outcome of one attempt, as the log keeps it. */
export interface AttemptOutcome {
  status: number | null;
  error: string | null;
  response: string | null;
  at: number;
}

function statusOf(v: unknown): DeliveryStatus {
  const s = String(v) as DeliveryStatus;
  return DELIVERY_STATUSES.includes(s) ? s : 'PENDING';
}

/**
 * app_webhook_deliveries (D54). Reads and route writes name the tenant and the webhook; the claim
 * serves every tenant by design (any instance delivers), and a worker's writes are fenced on its
 * lease owner. Only the head of each (webhook, record) — no earlier delivery of the same record to
 * the same webhook still pending — is claimable, which keeps a record's events in order.
 */
@Injectable()
export class DeliveriesRepository {
  constructor(private readonly database: DatabaseService) {}

  private get ds() {
    return this.database.dataSource;
  }

  private toDelivery(r: Raw): Delivery {
    const t = (v: unknown) => fromDbTimestamp(v, this.ds.driver.options.type);
    const n = (v: unknown) => (v === null || v === undefined ? null : Number(v));
    return {
      id: Number(r.whd_id),
      uid: String(r.whd_uid),
      tenantId: String(r.whd_tenant_id),
      webhookId: Number(r.whd_webhook_id),
      eventUid: String(r.whd_event_uid),
      sequence: Number(r.whd_sequence),
      type: String(r.whd_type),
      entityCode: String(r.whd_entity_code),
      recordId: Number(r.whd_record_id),
      payload: typeof r.whd_payload === 'string' ? r.whd_payload : '',
      status: statusOf(r.whd_status),
      attempts: Number(r.whd_attempts ?? 0),
      nextAttemptAt: t(r.whd_next_attempt_at),
      leaseOwner: (r.whd_lease_owner as string | null) ?? null,
      leaseUntil: t(r.whd_lease_until),
      lastStatus: n(r.whd_last_status),
      lastError: (r.whd_last_error as string | null) ?? null,
      lastResponse: (r.whd_last_response as string | null) ?? null,
      occurredAt: t(r.whd_occurred_at) ?? 0,
      createdAt: t(r.whd_created_at) ?? 0,
      lastAttemptAt: t(r.whd_last_attempt_at),
      deliveredAt: t(r.whd_delivered_at),
    };
  }

  async insertMany(qr: QueryRunner, rows: readonly NewDelivery[], now: number): Promise<void> {
    const values = rows.map((d) => ({
      whd_uid: d.uid,
      whd_tenant_id: tenantNumberOf(d.tenantId),
      whd_webhook_id: d.webhookId,
      whd_event_uid: d.eventUid,
      whd_sequence: d.sequence,
      whd_type: d.type,
      whd_entity_code: d.entityCode,
      whd_record_id: d.recordId,
      whd_payload: d.payload,
      whd_status: 'PENDING',
      whd_attempts: 0,
      whd_next_attempt_at: toDbTimestamp(now),
      whd_occurred_at: toDbTimestamp(d.occurredAt),
      whd_created_at: toDbTimestamp(now),
    }));
    // Below every dialect's parameter limit (14 per row).
    for (let i = 0; i < values.length; i += 100) {
      const chunk = values.slice(i, i + 100);
      await this.ds
        .createQueryBuilder(qr)
        .insert()
        .into(TABLE, Object.keys(chunk[0]))
        .values(chunk)
        .execute();
    }
  }

  /**
   * Candidates of a claim: PENDING rows that are due and DELIVERING rows whose lease ran out, of
   * active webhooks, that head their (webhook, record) line.
   */
  claimCandidates(qr: QueryRunner, now: number, limit: number) {
    const at = toDbTimestamp(now);
    const live = livePredicate('w.whk_is_deleted');
    return this.ds
      .createQueryBuilder(qr)
      .select('d.*')
      .from(TABLE, 'd')
      .where(
        "((d.whd_status = 'PENDING' AND d.whd_next_attempt_at <= :at) OR (d.whd_status = 'DELIVERING' AND d.whd_lease_until < :at))",
        { at },
      )
      .andWhere(
        `EXISTS (SELECT 1 FROM app_webhooks w WHERE w.whk_id = d.whd_webhook_id AND w.whk_tenant_id = d.whd_tenant_id AND w.whk_status = 1 AND ${live.sql})`,
        live.params,
      )
      .andWhere(
        `NOT EXISTS (SELECT 1 FROM ${TABLE} e WHERE e.whd_webhook_id = d.whd_webhook_id AND e.whd_record_id = d.whd_record_id AND e.whd_entity_code = d.whd_entity_code AND e.whd_sequence < d.whd_sequence AND e.whd_status IN ('PENDING', 'DELIVERING'))`,
      )
      .orderBy('d.whd_id', 'ASC')
      .limit(limit);
  }

  /** Claims up to `limit` deliveries with the skip-locked read and a lease (D49); each spends an attempt. */
  async claim(
    qr: QueryRunner,
    owner: string,
    limit: number,
    leaseMs: number,
    now: number,
  ): Promise<Delivery[]> {
    const statement = skipLockedClaim(qr, this.claimCandidates(qr, now, limit));
    const rows = (await qr.query(statement.sql, statement.params)) as Raw[];
    const claimed: Delivery[] = [];
    for (const raw of rows) {
      const d = this.toDelivery(raw);
      const result = await this.ds
        .createQueryBuilder(qr)
        .update(TABLE)
        .set({
          whd_status: 'DELIVERING',
          whd_lease_owner: owner,
          whd_lease_until: toDbTimestamp(now + leaseMs),
          whd_attempts: d.attempts + 1,
        })
        .where('whd_id = :id AND whd_attempts = :attempts AND whd_status = :status', {
          id: d.id,
          attempts: d.attempts,
          status: d.status,
        })
        .execute();
      if ((result.affected ?? 0) === 1)
        claimed.push({ ...d, status: 'DELIVERING', attempts: d.attempts + 1, leaseOwner: owner });
    }
    return claimed;
  }

  /** The attempt's final write, fenced on the lease: DELIVERED, PENDING again (a retry) or DEAD. */
  async finish(
    d: Pick<Delivery, 'id' | 'tenantId'>,
    owner: string,
    status: Exclude<DeliveryStatus, 'DELIVERING'>,
    outcome: AttemptOutcome,
    nextAttemptAt: number | null,
    qr?: QueryRunner,
  ): Promise<boolean> {
    const result = await this.ds
      .createQueryBuilder(qr)
      .update(TABLE)
      .set({
        whd_status: status,
        whd_lease_owner: null,
        whd_lease_until: null,
        whd_next_attempt_at: nextAttemptAt === null ? null : toDbTimestamp(nextAttemptAt),
        whd_last_status: outcome.status,
        whd_last_error: outcome.error === null ? null : outcome.error.slice(0, 500),
        whd_last_response: outcome.response,
        whd_last_attempt_at: toDbTimestamp(outcome.at),
        ...(status === 'DELIVERED' ? { whd_delivered_at: toDbTimestamp(outcome.at) } : {}),
      })
      .where(
        "whd_id = :id AND whd_tenant_id = :tenant AND whd_lease_owner = :owner AND whd_status = 'DELIVERING'",
        {
          id: d.id,
          tenant: tenantNumberOf(d.tenantId),
          owner,
        },
      )
      .execute();
    return (result.affected ?? 0) > 0;
  }

  /** The webhook's deliveries, newest first, optionally of one status. */
  async list(
    tenantId: string,
    webhookId: number,
    options: { status?: DeliveryStatus; limit: number; beforeId?: number },
  ): Promise<Delivery[]> {
    const qb = this.ds
      .createQueryBuilder()
      .select('d.*')
      .from(TABLE, 'd')
      .where('d.whd_tenant_id = :tenant AND d.whd_webhook_id = :webhook', {
        tenant: tenantNumberOf(tenantId),
        webhook: webhookId,
      });
    if (options.status) qb.andWhere('d.whd_status = :status', { status: options.status });
    if (options.beforeId !== undefined) qb.andWhere('d.whd_id < :before', { before: options.beforeId });
    const rows = await qb.orderBy('d.whd_id', 'DESC').limit(options.limit).getRawMany<Raw>();
    return rows.map((r) => this.toDelivery(r));
  }

  async find(tenantId: string, webhookId: number, id: number): Promise<Delivery | null> {
    const r = await this.ds
      .createQueryBuilder()
      .select('d.*')
      .from(TABLE, 'd')
      .where('d.whd_tenant_id = :tenant AND d.whd_webhook_id = :webhook AND d.whd_id = :id', {
        tenant: tenantNumberOf(tenantId),
        webhook: webhookId,
        id,
      })
      .getRawOne<Raw>();
    return r ? this.toDelivery(r) : null;
  }

  /**
   * Sends a delivery again (the retry route): PENDING, due now, its attempts counted afresh; a
   * delivery being sent right now is left to its worker. Whether it was queued.
   */
  async requeue(
    tenantId: string,
    webhookId: number,
    id: number,
    now: number,
    qr?: QueryRunner,
  ): Promise<boolean> {
    const result = await this.ds
      .createQueryBuilder(qr)
      .update(TABLE)
      .set({
        whd_status: 'PENDING',
        whd_attempts: 0,
        whd_next_attempt_at: toDbTimestamp(now),
        whd_lease_owner: null,
        whd_lease_until: null,
      })
      .where(
        "whd_tenant_id = :tenant AND whd_webhook_id = :webhook AND whd_id = :id AND whd_status <> 'DELIVERING'",
        {
          tenant: tenantNumberOf(tenantId),
          webhook: webhookId,
          id,
        },
      )
      .execute();
    return (result.affected ?? 0) > 0;
  }

  /** Deliveries of one status across tenants (metrics). */
  async countByStatus(): Promise<Record<string, number>> {
    const rows = await this.ds
      .createQueryBuilder()
      .select('d.whd_status', 'status')
      .addSelect('COUNT(*)', 'n')
      .from(TABLE, 'd')
      .groupBy('d.whd_status')
      .getRawMany<{ status: unknown; n: unknown }>();
    return Object.fromEntries(rows.map((r) => [String(r.status), Number(r.n)]));
  }

  /** Removes delivered deliveries created before `before` (every tenant's; dead ones stay); how many. */
  async purgeDelivered(before: number, limit: number): Promise<number> {
    const ids = await this.ds
      .createQueryBuilder()
      .select('whd_id', 'id')
      .from(TABLE, 'd')
      .where('whd_status = :delivered AND whd_created_at < :before', {
        delivered: 'DELIVERED',
        before: toDbTimestamp(before),
      })
      .orderBy('whd_id', 'ASC')
      .limit(limit)
      .getRawMany<{ id: unknown }>();
    if (ids.length === 0) return 0;
    const result = await this.ds
      .createQueryBuilder()
      .delete()
      .from(TABLE)
      .where('whd_id IN (:...ids)', { ids: ids.map((r) => Number(r.id)) })
      .execute();
    return result.affected ?? ids.length;
  }
}
