import { Injectable } from '@nestjs/common';
import type { DataSource, QueryRunner, SelectQueryBuilder } from 'typeorm';
import { DatabaseService } from '../../database/database.service';
import { fromDbTimestamp, toDbTimestamp } from '../../database/dialect/timestamps';
import { tenantPredicate } from '../../database/scope/tenant-rows';
import type { Row } from '../records-read.repository';

export const AUDIT_TABLE = 'app_audit_logs';

/** One audit entry as history reads it (D29, D56). */
export interface AuditRow {
  id: number;
  event: string;
  entityCode: string;
  recordId: string;
  userId: number | null;
  userEmail: string | null;
  before: Row | null;
  after: Row | null;
  /** Epoch ms. */
  at: number;
  version: number;
  /** null on entries written before D56 (their changes are the difference of before and after). */
  changed: string[] | null;
  operationId: string | null;
}

function parseJson(value: unknown): unknown {
  if (typeof value !== 'string') return value ?? null;
  try {
    return JSON.parse(value);
  } catch {
    return null;
  }
}

const asObject = (value: unknown): Row | null => {
  const v = parseJson(value);
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Row) : null;
};

const SELECTED = {
  id: 'aud_id',
  event: 'aud_event',
  entityCode: 'aud_entity_code',
  recordId: 'aud_record_id',
  userId: 'aud_user_id',
  userEmail: 'aud_user_email',
  before: 'aud_before',
  after: 'aud_after',
  at: 'aud_at',
  version: 'aud_version',
  changed: 'aud_changed',
  operationId: 'aud_operation_id',
} as const;

/**
 * Reads of `app_audit_logs` for record history (D56). The table lives in the configuration
 * database whatever database the entity uses; every statement starts from the tenant's own entries
 * (the scope module's STRICT tenant predicate): no entry of another tenant is ever read. Whether the
 * caller may see the record at all is decided by the records core before these run.
 */
@Injectable()
export class HistoryRepository {
  constructor(private readonly database: DatabaseService) {}

  private get ds(): DataSource {
    return this.database.dataSource;
  }

  /** The tenant's entries (STRICT), on `qr` when given. */
  private entries(tenantId: string, qr?: QueryRunner): SelectQueryBuilder<Row> {
    const ds = qr?.connection ?? this.ds;
    const tenant = tenantPredicate('a.aud_tenant_id', 'STRICT', tenantId);
    const qb = ds.createQueryBuilder(qr).from(AUDIT_TABLE, 'a').where(tenant.sql, tenant.params);
    for (const [alias, column] of Object.entries(SELECTED)) qb.addSelect(`a.${column}`, alias);
    return qb;
  }

  /** The entries of one record. */
  private ofRecord(tenantId: string, entityCode: string, recordId: number, qr?: QueryRunner) {
    return this.entries(tenantId, qr)
      .andWhere('a.aud_entity_code = :entityCode', { entityCode })
      .andWhere('a.aud_record_id = :recordId', { recordId: String(recordId) });
  }

  /** A page of a record's entries, newest first, and how many it has. */
  async page(
    tenantId: string,
    entityCode: string,
    recordId: number,
    limit: number,
    skip: number,
  ): Promise<{ rows: AuditRow[]; total: number }> {
    const qb = this.ofRecord(tenantId, entityCode, recordId);
    const count = qb.clone().select('COUNT(*)', 'total');
    const [rows, total] = await Promise.all([
      qb
        .orderBy('a.aud_version', 'DESC')
        .addOrderBy('a.aud_id', 'DESC')
        .offset(skip)
        .limit(limit)
        .getRawMany<Row>(),
      count.getRawOne<{ total: unknown }>(),
    ]);
    return { rows: rows.map((r) => this.toRow(r)), total: Number(total?.total ?? 0) };
  }

  /** The record's entry of `version` (the last written, should there be two). */
  async atVersion(
    tenantId: string,
    entityCode: string,
    recordId: number,
    version: number,
  ): Promise<AuditRow | undefined> {
    const raw = await this.ofRecord(tenantId, entityCode, recordId)
      .andWhere('a.aud_version = :version', { version })
      .orderBy('a.aud_id', 'DESC')
      .limit(1)
      .getRawOne<Row>();
    return raw ? this.toRow(raw) : undefined;
  }

  /** The newest entry of the record up to `version` whose `after` is the whole record. */
  async lastSnapshot(
    tenantId: string,
    entityCode: string,
    recordId: number,
    version: number,
  ): Promise<AuditRow | undefined> {
    const raw = await this.ofRecord(tenantId, entityCode, recordId)
      .andWhere('a.aud_version <= :version', { version })
      .andWhere('a.aud_event IN (:...events)', {
        events: ['entity.created', 'entity.updated', 'entity.restored'],
      })
      .orderBy('a.aud_version', 'DESC')
      .addOrderBy('a.aud_id', 'DESC')
      .limit(1)
      .getRawOne<Row>();
    return raw ? this.toRow(raw) : undefined;
  }

  /** The record's newest delete entry. */
  async lastDelete(
    tenantId: string,
    entityCode: string,
    recordId: number,
    qr?: QueryRunner,
  ): Promise<AuditRow | undefined> {
    const raw = await this.ofRecord(tenantId, entityCode, recordId, qr)
      .andWhere('a.aud_event = :event', { event: 'entity.deleted' })
      .orderBy('a.aud_version', 'DESC')
      .addOrderBy('a.aud_id', 'DESC')
      .limit(1)
      .getRawOne<Row>();
    return raw ? this.toRow(raw) : undefined;
  }

  /** The delete entries of one operation: a delete and its cascade. */
  async deletesOf(tenantId: string, operationId: string, qr?: QueryRunner): Promise<AuditRow[]> {
    const rows = await this.entries(tenantId, qr)
      .andWhere('a.aud_operation_id = :operationId', { operationId })
      .andWhere('a.aud_event = :event', { event: 'entity.deleted' })
      .orderBy('a.aud_id', 'ASC')
      .getRawMany<Row>();
    return rows.map((r) => this.toRow(r));
  }

  /**
   * Retention (D56): deletes up to `batch` entries written before `before` — of one tenant, or of
   * every tenant but `except` (whose own retention differs) — and answers how many it deleted.
   * Batches keep each statement short; the ids are read first so every dialect deletes the same way.
   */
  async pruneBatch(
    before: number,
    whose: { tenantId: number } | { except: number[] },
    batch: number,
  ): Promise<number> {
    const qb = this.ds
      .createQueryBuilder()
      .select('a.aud_id', 'id')
      .from(AUDIT_TABLE, 'a')
      .where('a.aud_at < :before', { before: toDbTimestamp(before) });
    if ('tenantId' in whose) {
      const tenant = tenantPredicate('a.aud_tenant_id', 'STRICT', String(whose.tenantId));
      qb.andWhere(tenant.sql, tenant.params);
    } else if (whose.except.length > 0) {
      qb.andWhere('(a.aud_tenant_id IS NULL OR a.aud_tenant_id NOT IN (:...except))', {
        except: whose.except,
      });
    }
    const ids = (await qb.orderBy('a.aud_id', 'ASC').limit(batch).getRawMany<{ id: unknown }>()).map((r) =>
      Number(r.id),
    );
    if (ids.length === 0) return 0;
    const result = await this.ds
      .createQueryBuilder()
      .delete()
      .from(AUDIT_TABLE)
      .where('aud_id IN (:...ids)', { ids })
      .execute();
    return result.affected ?? ids.length;
  }

  private toRow(raw: Row): AuditRow {
    const changed = parseJson(raw.changed);
    return {
      id: Number(raw.id),
      event: String(raw.event),
      entityCode: String(raw.entityCode),
      recordId: String(raw.recordId),
      userId: raw.userId === null || raw.userId === undefined ? null : Number(raw.userId),
      userEmail: typeof raw.userEmail === 'string' ? raw.userEmail : null,
      before: asObject(raw.before),
      after: asObject(raw.after),
      at: fromDbTimestamp(raw.at, this.ds.driver.options.type) ?? 0,
      version: Number(raw.version ?? 0),
      changed: Array.isArray(changed) ? changed.filter((x): x is string => typeof x === 'string') : null,
      operationId: typeof raw.operationId === 'string' ? raw.operationId : null,
    };
  }
}
