import { Injectable } from '@nestjs/common';
import type { QueryRunner, SelectQueryBuilder } from 'typeorm';
import { DatabaseService } from '../database/database.service';
import { dialectOf } from '../database/dialect';
import { fromDbTimestamp, toDbTimestamp } from '../database/dialect/timestamps';
import { insertedKeyOf, returningOf } from '../database/dialect/returning';
import { livePredicate, tenantNumberOf, tenantPredicate } from '../database/scope/tenant-rows';
import type { WebhookRow } from './webhook.types';

const TABLE = 'app_webhooks';
type Raw = Record<string, unknown>;

function parseEvents(value: unknown): string[] {
  try {
    const v: unknown = typeof value === 'string' ? JSON.parse(value) : value;
    return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
  } catch {
    return [];
  }
}

/**
 * app_webhooks (D54): tenant configuration with the common columns. Every read and write names
 * the tenant (the scope module's predicates) and sees live rows only, except the relay's listing
 * of active webhooks, which serves every tenant by design.
 */
@Injectable()
export class WebhooksRepository {
  constructor(private readonly database: DatabaseService) {}

  private get ds() {
    return this.database.dataSource;
  }

  private toRow(r: Raw): WebhookRow {
    const driver = this.ds.driver.options.type;
    return {
      id: Number(r.whk_id),
      tenantId: String(r.whk_tenant_id),
      code: String(r.whk_code),
      url: String(r.whk_url),
      events: parseEvents(r.whk_events),
      secretEncrypted: (r.whk_secret as string | null) ?? null,
      profileCode: (r.whk_profile_code as string | null) ?? null,
      description: (r.whk_description as string | null) ?? null,
      active: Number(r.whk_status ?? 1) === 1,
      cursor: Number(r.whk_cursor ?? 0),
      failingSince: fromDbTimestamp(r.whk_failing_since, driver),
      disabledReason: (r.whk_disabled_reason as string | null) ?? null,
      lastModified: fromDbTimestamp(r.whk_last_modified, driver),
    };
  }

  /** The tenant's live webhooks (scope module: tenant and soft-delete predicates). */
  private scoped(tenantId: string, qr?: QueryRunner): SelectQueryBuilder<Raw> {
    const tenant = tenantPredicate('w.whk_tenant_id', 'STRICT', tenantId);
    const live = livePredicate('w.whk_is_deleted');
    return this.ds
      .createQueryBuilder(qr)
      .select('w.*')
      .from(TABLE, 'w')
      .where(tenant.sql, tenant.params)
      .andWhere(live.sql, live.params);
  }

  async list(tenantId: string): Promise<WebhookRow[]> {
    const rows = await this.scoped(tenantId).orderBy('w.whk_code', 'ASC').getRawMany<Raw>();
    return rows.map((r) => this.toRow(r));
  }

  async findByCode(tenantId: string, code: string, qr?: QueryRunner): Promise<WebhookRow | null> {
    const r = await this.scoped(tenantId, qr).andWhere('w.whk_code = :code', { code }).getRawOne<Raw>();
    return r ? this.toRow(r) : null;
  }

  async findById(tenantId: string, id: number): Promise<WebhookRow | null> {
    const r = await this.scoped(tenantId).andWhere('w.whk_id = :id', { id }).getRawOne<Raw>();
    return r ? this.toRow(r) : null;
  }

  async insert(qr: QueryRunner, tenantId: string, values: Raw): Promise<number> {
    const row = { ...values, whk_tenant_id: tenantNumberOf(tenantId), whk_status: 1, whk_is_deleted: 0 };
    const qb = this.ds.createQueryBuilder(qr).insert().into(TABLE, Object.keys(row)).values(row);
    const dialect = dialectOf(this.ds.driver.options.type);
    const returning = returningOf(dialect, 'whk_id', (c) => this.ds.driver.escape(c));
    if (returning) qb.returning(returning);
    return insertedKeyOf(dialect, (await qb.execute()).raw);
  }

  /** Sets columns of the tenant's live webhook `id`; whether it was there. */
  async update(tenantId: string, id: number, set: Raw, qr?: QueryRunner): Promise<boolean> {
    const tenant = tenantPredicate('whk_tenant_id', 'STRICT', tenantId);
    const live = livePredicate('whk_is_deleted');
    const result = await this.ds
      .createQueryBuilder(qr)
      .update(TABLE)
      .set(set)
      .where('whk_id = :id', { id })
      .andWhere(tenant.sql, tenant.params)
      .andWhere(live.sql, live.params)
      .execute();
    return (result.affected ?? 0) > 0;
  }

  /** Every tenant's active, live webhooks (the relay serves them all). */
  async listActive(): Promise<WebhookRow[]> {
    const live = livePredicate('w.whk_is_deleted');
    const rows = await this.ds
      .createQueryBuilder()
      .select('w.*')
      .from(TABLE, 'w')
      .where(live.sql, live.params)
      .andWhere('w.whk_status = 1')
      .orderBy('w.whk_id', 'ASC')
      .getRawMany<Raw>();
    return rows.map((r) => this.toRow(r));
  }

  /**
   * The relay lease of one webhook (D49's lease, on its row): taken when free or run out; the
   * owner then fences its cursor moves on it.
   */
  async claimRelay(
    webhook: WebhookRow,
    owner: string,
    leaseMs: number,
    now: number,
    qr?: QueryRunner,
  ): Promise<boolean> {
    const result = await this.ds
      .createQueryBuilder(qr)
      .update(TABLE)
      .set({ whk_relay_owner: owner, whk_relay_until: toDbTimestamp(now + leaseMs) })
      .where('whk_id = :id AND whk_tenant_id = :tenant', {
        id: webhook.id,
        tenant: tenantNumberOf(webhook.tenantId),
      })
      .andWhere('(whk_relay_until IS NULL OR whk_relay_until < :now OR whk_relay_owner = :owner)', {
        now: toDbTimestamp(now),
        owner,
      })
      .execute();
    return (result.affected ?? 0) > 0;
  }

  /** The webhook's cursor as stored now (read in the relay's transaction). */
  async cursorOf(qr: QueryRunner, webhook: WebhookRow, owner: string): Promise<number | null> {
    const r = await this.ds
      .createQueryBuilder(qr)
      .select('whk_cursor', 'cursor')
      .from(TABLE, 'w')
      .where('whk_id = :id AND whk_tenant_id = :tenant AND whk_relay_owner = :owner', {
        id: webhook.id,
        tenant: tenantNumberOf(webhook.tenantId),
        owner,
      })
      .getRawOne<{ cursor: unknown }>();
    return r ? Number(r.cursor) : null;
  }

  /** Moves the cursor from `from` to `to`, fenced on the relay lease; whether it moved. */
  async advanceCursor(qr: QueryRunner, webhook: WebhookRow, owner: string, from: number, to: number) {
    const result = await this.ds
      .createQueryBuilder(qr)
      .update(TABLE)
      .set({ whk_cursor: to })
      .where('whk_id = :id AND whk_tenant_id = :tenant AND whk_relay_owner = :owner AND whk_cursor = :from', {
        id: webhook.id,
        tenant: tenantNumberOf(webhook.tenantId),
        owner,
        from,
      })
      .execute();
    return (result.affected ?? 0) > 0;
  }

  async releaseRelay(webhook: WebhookRow, owner: string, qr?: QueryRunner): Promise<void> {
    await this.ds
      .createQueryBuilder(qr)
      .update(TABLE)
      .set({ whk_relay_owner: null, whk_relay_until: null })
      .where('whk_id = :id AND whk_tenant_id = :tenant AND whk_relay_owner = :owner', {
        id: webhook.id,
        tenant: tenantNumberOf(webhook.tenantId),
        owner,
      })
      .execute();
  }

  /** A success: the failure clock stops. */
  async markSuccess(tenantId: string, id: number, qr?: QueryRunner): Promise<void> {
    await this.ds
      .createQueryBuilder(qr)
      .update(TABLE)
      .set({ whk_failing_since: null })
      .where('whk_id = :id AND whk_tenant_id = :tenant AND whk_failing_since IS NOT NULL', {
        id,
        tenant: tenantNumberOf(tenantId),
      })
      .execute();
  }

  /** A failure: the clock starts unless it runs; the time of the first failure since a success. */
  async markFailure(tenantId: string, id: number, now: number, qr?: QueryRunner): Promise<number | null> {
    await this.ds
      .createQueryBuilder(qr)
      .update(TABLE)
      .set({ whk_failing_since: toDbTimestamp(now) })
      .where('whk_id = :id AND whk_tenant_id = :tenant AND whk_failing_since IS NULL', {
        id,
        tenant: tenantNumberOf(tenantId),
      })
      .execute();
    const r = await this.ds
      .createQueryBuilder(qr)
      .select('whk_failing_since', 'since')
      .from(TABLE, 'w')
      .where('whk_id = :id AND whk_tenant_id = :tenant', { id, tenant: tenantNumberOf(tenantId) })
      .getRawOne<{ since: unknown }>();
    return fromDbTimestamp(r?.since, this.ds.driver.options.type);
  }

  /** Disables an active webhook (24 h of failures); whether this call did it. */
  async disable(
    tenantId: string,
    id: number,
    reason: string,
    now: number,
    qr?: QueryRunner,
  ): Promise<boolean> {
    const result = await this.ds
      .createQueryBuilder(qr)
      .update(TABLE)
      .set({
        whk_status: 0,
        whk_disabled_reason: reason.slice(0, 500),
        whk_last_modified: toDbTimestamp(now),
      })
      .where('whk_id = :id AND whk_tenant_id = :tenant AND whk_status = 1', {
        id,
        tenant: tenantNumberOf(tenantId),
      })
      .execute();
    return (result.affected ?? 0) > 0;
  }
}
