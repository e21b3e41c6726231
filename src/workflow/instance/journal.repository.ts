import { Injectable } from '@nestjs/common';
import type { QueryRunner } from 'typeorm';
import { DatabaseService } from '../../database/database.service';
import { fromDbTimestamp, toDbTimestamp } from '../../database/dialect';
import { tenantNumber } from '../../database/raw-values';
import { parseJsonColumn, textOf } from './json';

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

/**
 * What happens to an instance, step by step (spec §2.8, D49): node states (one row per instance
 * and node), the log (wft_logs) and the idempotency keys of committed steps (wft_step_keys). Every
 * statement names the tenant. The `qr` variants run in the caller's fenced transaction.
 */
@Injectable()
export class InstanceJournalRepository {
  constructor(private readonly database: DatabaseService) {}

  private get driverType(): string {
    return this.database.dataSource.driver.options.type;
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
