import { Injectable } from '@nestjs/common';
import type { QueryRunner, SelectQueryBuilder } from 'typeorm';
import { DatabaseService } from '../../database/database.service';
import { tenantNumber } from '../../database/raw-values';
import { dialectOf, exactEquals, fromDbTimestamp, rowLockFor, toDbTimestamp } from '../../database/dialect';
import { insertedKeyOf, returningOf } from '../../database/dialect/returning';
import { isInstanceState, type InstanceState } from './state-machine';
import { jsonObject, parseJsonColumn, textOf } from './json';

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

export interface NodeStateRow {
  nodeId: string;
  status: string;
  error: string | null;
  attempts: number;
  output: unknown;
  startedAt: number | null;
  finishedAt: number | null;
}

export interface LogRow {
  id: number;
  level: string;
  message: string | null;
  data: unknown;
  createdAt: number | null;
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

  /** The tenant's instance, or undefined (another tenant's id included). */
  async find(tenantId: string, id: number): Promise<InstanceRow | undefined> {
    const raw = await this.select()
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

  async nodeStates(tenantId: string, instanceId: number): Promise<NodeStateRow[]> {
    const raws = await this.database.dataSource
      .createQueryBuilder()
      .select([
        'n.wns_node_id AS wns_node_id',
        'n.wns_status AS wns_status',
        'n.wns_error AS wns_error',
        'n.wns_attempts AS wns_attempts',
        'n.wns_output AS wns_output',
        'n.wns_started_at AS wns_started_at',
        'n.wns_finished_at AS wns_finished_at',
      ])
      .from('wft_node_states', 'n')
      .where('n.wns_instance_id = :id AND n.wns_tenant_id = :tenant', {
        id: instanceId,
        tenant: tenantNumber(tenantId),
      })
      .orderBy('n.wns_id', 'ASC')
      .getRawMany<Record<string, unknown>>();
    return raws.map((r) => ({
      nodeId: String(textOf(r.wns_node_id)),
      status: String(textOf(r.wns_status)),
      error: textOf(r.wns_error),
      attempts: Number(r.wns_attempts ?? 0),
      output: parseJsonColumn(r.wns_output) ?? null,
      startedAt: fromDbTimestamp(r.wns_started_at, this.driverType),
      finishedAt: fromDbTimestamp(r.wns_finished_at, this.driverType),
    }));
  }

  /** The nodes that wait (approval steps) of the given instances, by instance id. */
  async waitingNodes(tenantId: string, instanceIds: number[]): Promise<Map<number, NodeStateRow>> {
    const out = new Map<number, NodeStateRow>();
    if (instanceIds.length === 0) return out;
    const raws = await this.database.dataSource
      .createQueryBuilder()
      .select([
        'n.wns_instance_id AS wns_instance_id',
        'n.wns_node_id AS wns_node_id',
        'n.wns_status AS wns_status',
        'n.wns_attempts AS wns_attempts',
        'n.wns_output AS wns_output',
        'n.wns_started_at AS wns_started_at',
      ])
      .from('wft_node_states', 'n')
      .where("n.wns_tenant_id = :tenant AND n.wns_status = 'WAITING' AND n.wns_instance_id IN (:...ids)", {
        tenant: tenantNumber(tenantId),
        ids: instanceIds,
      })
      .getRawMany<Record<string, unknown>>();
    for (const r of raws)
      out.set(Number(r.wns_instance_id), {
        nodeId: String(textOf(r.wns_node_id)),
        status: 'WAITING',
        error: null,
        attempts: Number(r.wns_attempts ?? 0),
        output: parseJsonColumn(r.wns_output) ?? null,
        startedAt: fromDbTimestamp(r.wns_started_at, this.driverType),
        finishedAt: null,
      });
    return out;
  }

  /**
   * One row per (instance, node) (unique index): a node visited again updates its row. Runs under
   * the instance's lock, so two writers never both insert.
   */
  async saveNodeState(
    qr: QueryRunner,
    tenantId: string,
    instanceId: number,
    state: {
      nodeId: string;
      status: string;
      error?: string | null;
      attempts: number;
      output?: unknown;
      startedAt: number;
      finishedAt?: number | null;
    },
  ): Promise<void> {
    const ds = this.database.dataSource;
    const values = {
      wns_status: state.status,
      wns_error: state.error ?? null,
      wns_attempts: state.attempts,
      wns_output: state.output === undefined ? null : JSON.stringify(state.output),
      wns_started_at: toDbTimestamp(state.startedAt),
      wns_finished_at: state.finishedAt ? toDbTimestamp(state.finishedAt) : null,
    };
    const updated = await ds
      .createQueryBuilder(qr)
      .update('wft_node_states')
      .set(values)
      .where('wns_instance_id = :id AND wns_node_id = :node AND wns_tenant_id = :tenant', {
        id: instanceId,
        node: state.nodeId,
        tenant: tenantNumber(tenantId),
      })
      .execute();
    if ((updated.affected ?? 0) > 0) return;
    await ds
      .createQueryBuilder(qr)
      .insert()
      .into('wft_node_states', ['wns_tenant_id', 'wns_instance_id', 'wns_node_id', ...Object.keys(values)])
      .values({
        wns_tenant_id: tenantNumber(tenantId),
        wns_instance_id: instanceId,
        wns_node_id: state.nodeId,
        ...values,
      })
      .execute();
  }

  /** The step's idempotency key (D49), in the step's transaction; a second one violates the unique index. */
  async insertStepKey(
    qr: QueryRunner,
    tenantId: string,
    instanceId: number,
    key: { stepSeq: number; nodeId: string; attempt: number },
    now: number,
  ): Promise<void> {
    await this.database.dataSource
      .createQueryBuilder(qr)
      .insert()
      .into('wft_step_keys', [
        'wsk_tenant_id',
        'wsk_instance_id',
        'wsk_step_seq',
        'wsk_node_id',
        'wsk_attempt',
        'wsk_created_at',
      ])
      .values({
        wsk_tenant_id: tenantNumber(tenantId),
        wsk_instance_id: instanceId,
        wsk_step_seq: key.stepSeq,
        wsk_node_id: key.nodeId,
        wsk_attempt: key.attempt,
        wsk_created_at: toDbTimestamp(now),
      })
      .execute();
  }

  async insertLog(
    qr: QueryRunner | undefined,
    tenantId: string,
    instanceId: number,
    entry: { level: string; message: string; data?: unknown },
    now: number,
  ): Promise<void> {
    await this.database.dataSource
      .createQueryBuilder(qr)
      .insert()
      .into('wft_logs', [
        'wfl_tenant_id',
        'wfl_instance_id',
        'wfl_level',
        'wfl_message',
        'wfl_data',
        'wfl_created_at',
      ])
      .values({
        wfl_tenant_id: tenantNumber(tenantId),
        wfl_instance_id: instanceId,
        wfl_level: entry.level.slice(0, 10),
        wfl_message: entry.message,
        wfl_data: entry.data === undefined ? null : JSON.stringify(entry.data),
        wfl_created_at: toDbTimestamp(now),
      })
      .execute();
  }

  async logs(
    tenantId: string,
    instanceId: number,
    page: { afterId: number; limit: number },
  ): Promise<LogRow[]> {
    const raws = await this.database.dataSource
      .createQueryBuilder()
      .select([
        'l.wfl_id AS wfl_id',
        'l.wfl_level AS wfl_level',
        'l.wfl_message AS wfl_message',
        'l.wfl_data AS wfl_data',
        'l.wfl_created_at AS wfl_created_at',
      ])
      .from('wft_logs', 'l')
      .where('l.wfl_instance_id = :id AND l.wfl_tenant_id = :tenant AND l.wfl_id > :after', {
        id: instanceId,
        tenant: tenantNumber(tenantId),
        after: page.afterId,
      })
      .orderBy('l.wfl_id', 'ASC')
      .limit(page.limit)
      .getRawMany<Record<string, unknown>>();
    return raws.map((r) => ({
      id: Number(r.wfl_id),
      level: String(textOf(r.wfl_level)),
      message: textOf(r.wfl_message),
      data: parseJsonColumn(r.wfl_data) ?? null,
      createdAt: fromDbTimestamp(r.wfl_created_at, this.driverType),
    }));
  }
}
