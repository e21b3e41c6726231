import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { QueryRunner } from 'typeorm';
import { DatabaseService } from '../../database/database.service';
import { advanceCounter } from '../../database/dialect/counter';
import { fromDbTimestamp, toDbTimestamp } from '../../database/dialect/timestamps';
import { tenantNumberOf } from '../../database/scope/tenant-rows';
import type { EventSpill } from './event-spill';
import type { OutboxEvent, PendingEvent } from './outbox.types';

const EVENTS = 'app_events';
const SEQUENCES = 'app_event_sequences';
const COUNTER = { table: SEQUENCES, keyColumn: 'evs_tenant_id', valueColumn: 'evs_last_sequence' };
/** Rows per INSERT of events: below every dialect's parameter limit (SQL Server: 2,100). */
const INSERT_CHUNK = 100;

type Raw = Record<string, unknown>;

function parseJson<T>(value: unknown, fallback: T): T {
  if (typeof value !== 'string') return (value as T) ?? fallback;
  try {
    return JSON.parse(value) as T;
  } catch {
    return fallback;
  }
}

/**
 * The outbox of D54 on the configuration database. `append` runs inside a records write's
 * transaction as its last statements (records-write.repository.ts), after every other lock of the
 * write has been taken: it takes the tenant's next sequence numbers with an UPDATE of the tenant's
 * counter row and keeps that row locked until the write commits or rolls back. Writers of one
 * tenant therefore commit their events in sequence order, on every dialect and from every
 * instance, and a reader paging by (tenant, sequence) never finds a gap filled in later.
 */
@Injectable()
export class OutboxRepository {
  /** Tenants whose counter row is known to exist (it is never removed). */
  private readonly counted = new Set<number>();
  private readonly listeners = new Set<(tenantIds: ReadonlySet<string>) => void>();

  /**
   * Calls `listener` with the tenants whose events a commit of this process added (the webhook
   * worker wakes up, the live changes of D55 read them from the outbox); the unsubscribe function.
   */
  onCommitted(listener: (tenantIds: ReadonlySet<string>) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Called by the write path once a transaction with events has committed. */
  committed(tenantIds: ReadonlySet<string>): void {
    for (const l of this.listeners) {
      try {
        l(tenantIds);
      } catch {
        // A listener's failure is its own; the write has committed.
      }
    }
  }

  constructor(private readonly database: DatabaseService) {}

  /**
   * The write's events, numbered in the order they were emitted: first those a long transaction
   * moved to disk (`spill`, one tenant), then those still in memory. Returns the in-memory ones as
   * committed (ids and sequences).
   */
  async append(qr: QueryRunner, events: readonly PendingEvent[], spill?: EventSpill): Promise<OutboxEvent[]> {
    const byTenant = new Map<number, PendingEvent[]>();
    if (spill && spill.count > 0) byTenant.set(tenantNumberOf(spill.tenantId), []);
    for (const e of events) {
      const t = tenantNumberOf(e.tenantId);
      byTenant.set(t, [...(byTenant.get(t) ?? []), e]);
    }
    const out: OutboxEvent[] = [];
    // Counter rows are locked in tenant order, so two multi-tenant writes cannot deadlock.
    for (const tenant of [...byTenant.keys()].sort((a, b) => a - b)) {
      const list = byTenant.get(tenant)!;
      const fromDisk = spill && tenantNumberOf(spill.tenantId) === tenant ? spill.count : 0;
      const last = await this.take(qr, tenant, list.length + fromDisk);
      let next = last - list.length - fromDisk + 1;
      const insert = async (pending: readonly PendingEvent[]): Promise<Raw[]> => {
        const rows = pending.map((e) => this.toRow(e, tenant, next++));
        for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
          const chunk = rows.slice(i, i + INSERT_CHUNK);
          await qr.connection
            .createQueryBuilder(qr)
            .insert()
            .into(EVENTS, Object.keys(chunk[0]))
            .values(chunk)
            .execute();
        }
        return rows;
      };
      if (fromDisk > 0) for await (const chunk of spill!.read(INSERT_CHUNK * 10)) await insert(chunk);
      const rows = await insert(list);
      out.push(...rows.map((r, i) => this.fromPending(list[i], r)));
    }
    return out;
  }

  /** Adds `n` to the tenant's counter (locking its row until the transaction ends); the new last number. */
  private async take(qr: QueryRunner, tenant: number, n: number): Promise<number> {
    const last = await advanceCounter(qr, COUNTER, tenant, n, this.counted.has(tenant));
    this.counted.add(tenant);
    return last;
  }

  private toRow(e: PendingEvent, tenant: number, sequence: number): Raw {
    return {
      evt_uid: `evt_${randomUUID().replace(/-/g, '')}`,
      evt_tenant_id: tenant,
      evt_sequence: sequence,
      evt_type: `${e.entityCode}.${e.action}`,
      evt_entity_code: e.entityCode,
      evt_record_id: e.recordId,
      evt_occurred_at: toDbTimestamp(e.occurredAt),
      evt_actor_id: e.actor.userId,
      evt_actor_email: e.actor.email,
      evt_request_id: e.requestId ? e.requestId.slice(0, 100) : null,
      evt_changes: JSON.stringify(e.changes),
      evt_record: e.record === null ? null : JSON.stringify(e.record),
    };
  }

  private fromPending(e: PendingEvent, row: Raw): OutboxEvent {
    return {
      id: row.evt_uid as string,
      tenantId: e.tenantId,
      sequence: row.evt_sequence as number,
      type: row.evt_type as string,
      entity: e.entityCode,
      recordId: e.recordId,
      occurredAt: e.occurredAt,
      actor: e.actor,
      requestId: e.requestId,
      changes: e.changes,
      record: e.record,
    };
  }

  /** The tenant's events after `afterSequence`, in sequence order (the relay; D55's resume). */
  async readAfter(tenantId: string, afterSequence: number, limit: number): Promise<OutboxEvent[]> {
    const ds = this.database.dataSource;
    const rows = await ds
      .createQueryBuilder()
      .select('*')
      .from(EVENTS, 'e')
      .where('evt_tenant_id = :tenant', { tenant: tenantNumberOf(tenantId) })
      .andWhere('evt_sequence > :after', { after: afterSequence })
      .orderBy('evt_sequence', 'ASC')
      .limit(limit)
      .getRawMany<Raw>();
    const driver = ds.driver.options.type;
    return rows.map((r) => ({
      id: String(r.evt_uid),
      tenantId: String(r.evt_tenant_id),
      sequence: Number(r.evt_sequence),
      type: String(r.evt_type),
      entity: String(r.evt_entity_code),
      recordId: Number(r.evt_record_id),
      occurredAt: fromDbTimestamp(r.evt_occurred_at, driver) ?? 0,
      actor: {
        userId: r.evt_actor_id === null ? null : Number(r.evt_actor_id),
        email: (r.evt_actor_email as string | null) ?? null,
      },
      requestId: (r.evt_request_id as string | null) ?? null,
      changes: parseJson<string[]>(r.evt_changes, []),
      record: parseJson<Record<string, unknown> | null>(r.evt_record, null),
    }));
  }

  /** The tenant's last sequence number given out (0 before its first event). */
  async lastSequence(tenantId: string): Promise<number> {
    const row = await this.database.dataSource
      .createQueryBuilder()
      .select('evs_last_sequence', 'last')
      .from(SEQUENCES, 's')
      .where('evs_tenant_id = :tenant', { tenant: tenantNumberOf(tenantId) })
      .getRawOne<{ last: unknown }>();
    return row ? Number(row.last) : 0;
  }

  /** The oldest retained sequence of the tenant (D55: an older Last-Event-ID is a reset), or null. */
  async firstSequence(tenantId: string): Promise<number | null> {
    const row = await this.database.dataSource
      .createQueryBuilder()
      .select('MIN(evt_sequence)', 'first')
      .from(EVENTS, 'e')
      .where('evt_tenant_id = :tenant', { tenant: tenantNumberOf(tenantId) })
      .getRawOne<{ first: unknown }>();
    return row?.first === null || row?.first === undefined ? null : Number(row.first);
  }

  /**
   * Removes events that occurred before `before`, at most `limit` of them (every tenant's: the
   * retention is the service's), oldest first; the number removed. The counters stay, so numbers
   * are never given out twice.
   */
  async purge(before: number, limit: number): Promise<number> {
    const ds = this.database.dataSource;
    const ids = await ds
      .createQueryBuilder()
      .select('evt_id', 'id')
      .from(EVENTS, 'e')
      .where('evt_occurred_at < :before', { before: toDbTimestamp(before) })
      .orderBy('evt_id', 'ASC')
      .limit(limit)
      .getRawMany<{ id: unknown }>();
    if (ids.length === 0) return 0;
    const result = await ds
      .createQueryBuilder()
      .delete()
      .from(EVENTS)
      .where('evt_id IN (:...ids)', { ids: ids.map((r) => Number(r.id)) })
      .execute();
    return result.affected ?? ids.length;
  }
}
