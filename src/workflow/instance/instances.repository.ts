import { Injectable } from '@nestjs/common';
import type { QueryRunner, SelectQueryBuilder } from 'typeorm';
import { DatabaseService } from '../../database/database.service';
import { tenantNumber } from '../../database/raw-values';
import { dialectOf, exactEquals, fromDbTimestamp, rowLockFor, toDbTimestamp } from '../../database/dialect';
import { insertedKeyOf, returningOf } from '../../database/dialect/returning';
import { isInstanceState, type InstanceState } from './state-machine';
import { jsonObject, textOf } from './json';

/** A wft_instances row as the engine and the routes use it. */
export interface InstanceRow {
  id: number;
  tenantId: string;
  workflowId: number;
  workflowCode: string;
  workflowVersion: number;
  status: InstanceState;
  currentNode: string | null;
  errorMessage: string | null;
  input: Record<string, unknown>;
  /** `{values, record}`: what `set` steps wrote, the last entity step's record. */
  context: Record<string, unknown>;
  startedBy: number | null;
  requestId: string | null;
  stepSeq: number;
  createdAt: number | null;
  updatedAt: number | null;
  completedAt: number | null;
}

export interface NewInstance {
  tenantId: string;
  workflowId: number;
  workflowCode: string;
  workflowVersion: number;
  input: Record<string, unknown>;
  startedBy: number;
  requestId: string;
}

export interface InstanceFilter {
  status?: InstanceState;
  code?: string;
  limit: number;
  offset: number;
}

const INSTANCE_COLUMNS = [
  'wfi_id',
  'wfi_tenant_id',
  'wfi_workflow_id',
  'wfi_workflow_code',
  'wfi_workflow_version',
  'wfi_status',
  'wfi_current_node',
  'wfi_error_message',
  'wfi_input',
  'wfi_context',
  'wfi_started_by',
  'wfi_request_id',
  'wfi_step_seq',
  'wfi_created_at',
  'wfi_updated_at',
  'wfi_completed_at',
];

/**
 * Statements on wft_instances, wft_node_states, wft_logs and wft_step_keys (spec §2.8, D49). Every
 * one names the tenant: an instance id of another tenant finds nothing. The `qr` variants run in the
 * caller's transaction (the engine's fenced commits); the others on the pool.
 */
@Injectable()
export class InstancesRepository {
  constructor(private readonly database: DatabaseService) {}

  private get driverType(): string {
    return this.database.dataSource.driver.options.type;
  }

  toInstance(raw: Record<string, unknown>): InstanceRow {
    const t = (v: unknown) => fromDbTimestamp(v, this.driverType);
    const status = textOf(raw.wfi_status);
    return {
      id: Number(raw.wfi_id),
      tenantId: String(raw.wfi_tenant_id),
      workflowId: Number(raw.wfi_workflow_id),
      workflowCode: String(textOf(raw.wfi_workflow_code)),
      workflowVersion: Number(raw.wfi_workflow_version),
      status: isInstanceState(status) ? status : 'FAILED',
      currentNode: textOf(raw.wfi_current_node),
      errorMessage: textOf(raw.wfi_error_message),
      input: jsonObject(raw.wfi_input),
      context: jsonObject(raw.wfi_context),
      startedBy:
        raw.wfi_started_by === null || raw.wfi_started_by === undefined ? null : Number(raw.wfi_started_by),
      requestId: textOf(raw.wfi_request_id),
      stepSeq: Number(raw.wfi_step_seq ?? 0),
      createdAt: t(raw.wfi_created_at),
      updatedAt: t(raw.wfi_updated_at),
      completedAt: t(raw.wfi_completed_at),
    };
  }

  private select(qr?: QueryRunner): SelectQueryBuilder<Record<string, unknown>> {
    return this.database.dataSource
      .createQueryBuilder(qr)
      .select(INSTANCE_COLUMNS.map((c) => `i.${c} AS ${c}`))
      .from('wft_instances', 'i');
  }

  async insert(qr: QueryRunner, row: NewInstance, now: number): Promise<number> {
    const ds = this.database.dataSource;
    const qb = ds
      .createQueryBuilder(qr)
      .insert()
      .into('wft_instances', [
        'wfi_tenant_id',
        'wfi_workflow_id',
        'wfi_workflow_code',
        'wfi_workflow_version',
        'wfi_status',
        'wfi_input',
        'wfi_context',
        'wfi_started_by',
        'wfi_request_id',
        'wfi_step_seq',
        'wfi_created_at',
        'wfi_updated_at',
      ])
      .values({
        wfi_tenant_id: tenantNumber(row.tenantId),
        wfi_workflow_id: row.workflowId,
        wfi_workflow_code: row.workflowCode,
        wfi_workflow_version: row.workflowVersion,
        wfi_status: 'PENDING',
        wfi_input: JSON.stringify(row.input),
        wfi_context: JSON.stringify({ values: {} }),
        wfi_started_by: row.startedBy,
        wfi_request_id: row.requestId.slice(0, 100),
        wfi_step_seq: 0,
        wfi_created_at: toDbTimestamp(now),
        wfi_updated_at: toDbTimestamp(now),
      });
    const dialect = dialectOf(this.driverType);
    const returning = returningOf(dialect, 'wfi_id', (c) => ds.driver.escape(c));
    if (returning) qb.returning(returning);
    const result = await qb.execute();
    return insertedKeyOf(dialect, result.raw);
  }

  /** The tenant's instance, or undefined (another tenant's id included); in `qr`'s transaction if given. */
  async find(tenantId: string, id: number, qr?: QueryRunner): Promise<InstanceRow | undefined> {
    const raw = await this.select(qr)
      .where('i.wfi_id = :id AND i.wfi_tenant_id = :tenant', { id, tenant: tenantNumber(tenantId) })
      .getRawOne<Record<string, unknown>>();
    return raw ? this.toInstance(raw) : undefined;
  }

  /**
   * The instance locked for update in the caller's transaction (SQLite: its single writer), so that
   * a step's commit, a pause, a cancel and an approval of one instance exclude each other.
   */
  async lock(qr: QueryRunner, tenantId: string, id: number): Promise<InstanceRow | undefined> {
    const raw = await this.lockQuery(qr, tenantId, id).getRawOne<Record<string, unknown>>();
    return raw ? this.toInstance(raw) : undefined;
  }

  /** The SELECT … FOR UPDATE (SQL Server: WITH (UPDLOCK, ROWLOCK)) of `lock`. */
  lockQuery(qr: QueryRunner, tenantId: string, id: number): SelectQueryBuilder<Record<string, unknown>> {
    const qb = this.select(qr).where('i.wfi_id = :id AND i.wfi_tenant_id = :tenant', {
      id,
      tenant: tenantNumber(tenantId),
    });
    const lock = rowLockFor(dialectOf(qr.connection.driver.options.type), 'parent-of-delete');
    if (lock) qb.setLock(lock);
    return qb;
  }

  async list(tenantId: string, filter: InstanceFilter): Promise<{ rows: InstanceRow[]; total: number }> {
    const qb = this.select().where('i.wfi_tenant_id = :tenant', { tenant: tenantNumber(tenantId) });
    if (filter.status) qb.andWhere('i.wfi_status = :status', { status: filter.status });
    if (filter.code)
      qb.andWhere(exactEquals(dialectOf(this.driverType), 'i.wfi_workflow_code', 'code'), {
        code: filter.code,
      });
    const totalRaw = await qb.clone().select('COUNT(*)', 'n').getRawOne<{ n: unknown }>();
    const raws = await qb
      .orderBy('i.wfi_id', 'DESC')
      .offset(filter.offset)
      .limit(filter.limit)
      .getRawMany<Record<string, unknown>>();
    return { rows: raws.map((r) => this.toInstance(r)), total: Number(totalRaw?.n ?? 0) };
  }

  /** Sets instance columns (always with wfi_updated_at) in the caller's transaction. */
  async update(
    qr: QueryRunner | undefined,
    tenantId: string,
    id: number,
    set: Record<string, unknown>,
    now: number,
    onlyIfStatus?: InstanceState,
  ): Promise<number> {
    const qb = this.database.dataSource
      .createQueryBuilder(qr)
      .update('wft_instances')
      .set({ ...set, wfi_updated_at: toDbTimestamp(now) })
      .where('wfi_id = :id AND wfi_tenant_id = :tenant', { id, tenant: tenantNumber(tenantId) });
    if (onlyIfStatus) qb.andWhere('wfi_status = :only', { only: onlyIfStatus });
    const result = await qb.execute();
    return result.affected ?? 0;
  }
}
