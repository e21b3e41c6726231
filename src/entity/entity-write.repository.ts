import { Injectable } from '@nestjs/common';
import type { QueryRunner } from 'typeorm';
import { DatabaseService } from '../database/database.service';
import type { EntityPolicy } from '../profile/policy/policy.model';
import type { EntityInfo, FieldDef } from '../registry/registry.types';
import {
  col,
  insertedId,
  insertRow,
  QueryContext,
  scoped,
  scopedUpdate,
  tenantLiveRows,
  tenantRowUpdate,
  writeTenantMode,
} from './entity-query';
import type { Row } from './entity.repository';

/** A row as loaded for a write: its fields by name plus the raw concurrency and audit columns. */
export interface WriteRow {
  fields: Row;
  /** `<p>_last_modified` exactly as the driver returned it (used as the compare-and-set value). */
  lastModifiedRaw: unknown;
  auditRaw: unknown;
}

const LM = '__lm';
const AUDIT = '__audit';
/** IN lists are chunked below every dialect's parameter limit. */
const IN_CHUNK = 500;

/**
 * Writes to registered entity tables (spec §4.3). Every statement is built by entity-query.ts from
 * registry identifiers and runs on the query runner of the caller's transaction.
 */
@Injectable()
export class EntityWriteRepository {
  /** SQLite has one connection: write transactions are run one after another in this process. */
  private sqliteQueue: Promise<unknown> = Promise.resolve();

  constructor(private readonly database: DatabaseService) {}

  get ds() {
    return this.database.dataSource;
  }

  get driverType(): string {
    return this.ds.driver.options.type;
  }

  /** Runs `work` in one transaction: committed when it resolves, rolled back when it throws. */
  async transaction<T>(work: (qr: QueryRunner) => Promise<T>): Promise<T> {
    const run = async (): Promise<T> => {
      const qr = this.ds.createQueryRunner();
      await qr.connect();
      await qr.startTransaction();
      try {
        const result = await work(qr);
        await qr.commitTransaction();
        return result;
      } catch (err) {
        if (qr.isTransactionActive) await qr.rollbackTransaction();
        throw err;
      } finally {
        await qr.release();
      }
    };
    if (this.database.dialect !== 'sqlite') return run();
    // better-sqlite3 shares one query runner: two interleaved transactions would nest as savepoints.
    const next = this.sqliteQueue.then(run, run);
    this.sqliteQueue = next.catch(() => undefined);
    return next;
  }

  /** The row in the caller's write scope (own tenant, live, row filter), or undefined. */
  async load(
    qr: QueryRunner,
    entity: EntityInfo,
    policy: EntityPolicy,
    ctx: QueryContext,
    fields: FieldDef[],
    id: number,
  ): Promise<WriteRow | undefined> {
    const qb = scoped(this.ds, entity, policy, ctx, {
      queryRunner: qr,
      tenantMode: writeTenantMode(entity, policy, ctx.user),
    }).andWhere(`${col(this.ds, entity.primaryKeyColumn)} = :__id`, { __id: id });
    qb.select(col(this.ds, entity.columns.lastModified), LM).addSelect(
      col(this.ds, entity.columns.auditData),
      AUDIT,
    );
    for (const f of fields) qb.addSelect(col(this.ds, f.column), f.name);
    const raw = await qb.getRawOne<Row>();
    if (!raw) return undefined;
    const out: Row = {};
    for (const f of fields) out[f.name] = raw[f.name];
    return { fields: out, lastModifiedRaw: raw[LM], auditRaw: raw[AUDIT] };
  }

  async insert(qr: QueryRunner, entity: EntityInfo, row: Row): Promise<number> {
    const result = await insertRow(this.ds, entity, row, qr).execute();
    return insertedId(this.ds, result.raw);
  }

  /** Scoped UPDATE, a compare-and-set on last_modified when `expectedLastModified` is given; affected rows. */
  async update(
    qr: QueryRunner,
    entity: EntityInfo,
    policy: EntityPolicy,
    ctx: QueryContext,
    id: number,
    set: Row,
    expectedLastModified?: { value: unknown },
  ): Promise<number> {
    const result = await scopedUpdate(this.ds, entity, policy, ctx, id, set, {
      queryRunner: qr,
      lastModified: expectedLastModified,
    }).execute();
    return result.affected ?? 0;
  }

  /** UPDATE of a live row of the tenant reached by a cascade; affected rows. */
  async updateTenantRow(
    qr: QueryRunner,
    entity: EntityInfo,
    tenantId: string,
    id: number,
    set: Row,
  ): Promise<number> {
    const result = await tenantRowUpdate(this.ds, entity, tenantId, id, set, qr).execute();
    return result.affected ?? 0;
  }

  /**
   * Whether a live row of the tenant has `value` in `field` (e-mail fields compared case-blind),
   * other than row `exceptId`.
   */
  async existsWithValue(
    qr: QueryRunner,
    entity: EntityInfo,
    tenantId: string,
    field: FieldDef,
    value: unknown,
    exceptId?: number,
  ): Promise<boolean> {
    const qb = tenantLiveRows(this.ds, entity, tenantId, qr);
    const column = col(this.ds, field.column);
    if (field.type === 'email') qb.andWhere(`LOWER(${column}) = :__value`, { __value: value });
    else qb.andWhere(`${column} = :__value`, { __value: value });
    if (exceptId !== undefined)
      qb.andWhere(`${col(this.ds, entity.primaryKeyColumn)} <> :__exceptId`, { __exceptId: exceptId });
    const row = await qb.select('1', 'one').limit(1).getRawOne<Row>();
    return row !== undefined;
  }

  /** Keys and audit data of the tenant's live rows whose `field` holds one of `values`. */
  async liveRowsReferencing(
    qr: QueryRunner,
    entity: EntityInfo,
    tenantId: string,
    field: FieldDef,
    values: number[],
  ): Promise<Array<{ id: number; auditRaw: unknown }>> {
    const out: Array<{ id: number; auditRaw: unknown }> = [];
    for (let i = 0; i < values.length; i += IN_CHUNK) {
      const rows = await tenantLiveRows(this.ds, entity, tenantId, qr)
        .andWhere(`${col(this.ds, field.column)} IN (:...__values)`, {
          __values: values.slice(i, i + IN_CHUNK),
        })
        .select(col(this.ds, entity.primaryKeyColumn), 'id')
        .addSelect(col(this.ds, entity.columns.auditData), 'audit')
        .orderBy(col(this.ds, entity.primaryKeyColumn), 'ASC')
        .getRawMany<{ id: unknown; audit: unknown }>();
      out.push(...rows.map((r) => ({ id: Number(r.id), auditRaw: r.audit })));
    }
    return out;
  }

  /**
   * The codes of a value set (`app_value_sets.vs_values`, spec 2.10): the tenant's row over the
   * system-wide one (D41). Undefined when neither exists or the values are unreadable.
   */
  async valueSetCodes(qr: QueryRunner, code: string, tenantId: string): Promise<Set<string> | undefined> {
    const rows = await this.ds
      .createQueryBuilder(qr)
      .select('v.vs_tenant_id', 'tenant')
      .addSelect('v.vs_values', 'vals')
      .from('app_value_sets', 'v')
      .where('v.vs_code = :code', { code })
      .andWhere('(v.vs_tenant_id = :tenantId OR v.vs_tenant_id IS NULL)', { tenantId: Number(tenantId) })
      .andWhere('(v.vs_is_deleted = :notDeleted OR v.vs_is_deleted IS NULL)', { notDeleted: 0 })
      .andWhere('COALESCE(v.vs_status, 1) = 1')
      .getRawMany<{ tenant: unknown; vals: unknown }>();
    const row = rows.find((r) => r.tenant !== null) ?? rows[0];
    if (!row) return undefined;
    let values: unknown = row.vals;
    if (typeof values === 'string') {
      try {
        values = JSON.parse(values);
      } catch {
        return undefined;
      }
    }
    if (!Array.isArray(values)) return undefined;
    return new Set(
      values
        .map((v) => (v && typeof v === 'object' ? (v as Record<string, unknown>).code : undefined))
        .filter((c): c is string => typeof c === 'string'),
    );
  }

  /** Inserts an `app_audit_logs` row (D29) in the caller's transaction. */
  async insertAudit(qr: QueryRunner, row: Row): Promise<void> {
    await this.ds
      .createQueryBuilder(qr)
      .insert()
      .into('app_audit_logs', Object.keys(row))
      .values(row)
      .execute();
  }
}
