import { Injectable } from '@nestjs/common';
import {
  AuthorizationError,
  ConflictError,
  NotFoundError,
  ValidationError,
} from '../../common/errors/app-error';
import { approvalGrant, assertCanPerform, roleGrants } from '../../profile/access/can-perform';
import { toDbTimestamp } from '../../database/dialect';
import type { QueryRunner } from 'typeorm';
import type { Actor } from '../../common/request-context';
import { ProfileLoaderService } from '../../profile/profile-loader.service';
import { WorkflowDefinitionsService } from '../definition/workflow-definitions.service';
import { Approvals } from '../engine/approvals';
import { InstanceTransitions } from '../engine/transitions';
import { QueueRepository } from '../queue/queue.repository';
import { WorkflowWakeBus } from '../queue/wake-bus';
import { WorkflowTelemetry, type WorkflowEvent } from '../workflow-telemetry';
import { InstancesRepository, type InstanceFilter, type InstanceRow } from './instances.repository';
import { InstanceJournalRepository, type LogRow, type NodeStateRow } from './journal.repository';
import { transition, type InstanceAction, type InstanceState } from './state-machine';

export type { Actor };

/** An instance as the API answers it. */
export interface InstanceView {
  id: number;
  workflowCode: string;
  version: number;
  status: InstanceState;
  currentNode: string | null;
  error: string | null;
  input: Record<string, unknown>;
  context: Record<string, unknown>;
  startedBy: number | null;
  createdAt: string | null;
  updatedAt: string | null;
  completedAt: string | null;
  /** Set while the instance waits at an approval step. */
  waitingFor: {
    type: 'approval';
    step: string;
    message: unknown;
    permission: unknown;
    since: string | null;
  } | null;
  nodes?: Array<
    Omit<NodeStateRow, 'startedAt' | 'finishedAt'> & { startedAt: string | null; finishedAt: string | null }
  >;
}

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/**
 * The workflow routes' use cases (D33, D34, issue 12): start, read, list, logs, pause, resume,
 * cancel, approve and reject. Every one is scoped to the caller's tenant: another tenant's instance
 * id is 404. State changes are transactions that lock the instance row (transitions.fence), so they
 * exclude each other and the steps running on any instance.
 */
@Injectable()
export class WorkflowInstancesService {
  constructor(
    private readonly definitions: WorkflowDefinitionsService,
    private readonly instances: InstancesRepository,
    private readonly journal: InstanceJournalRepository,
    private readonly queue: QueueRepository,
    private readonly transitions: InstanceTransitions,
    private readonly approvals: Approvals,
    private readonly wakeBus: WorkflowWakeBus,
    private readonly telemetry: WorkflowTelemetry,
    private readonly profiles: ProfileLoaderService,
  ) {}

  async start(
    actor: Actor,
    code: string,
    body: { input?: unknown; version?: unknown },
  ): Promise<InstanceView & { instanceId: number }> {
    const problems: Array<{ field: string; error: string }> = [];
    const input = body.input ?? {};
    if (!input || typeof input !== 'object' || Array.isArray(input))
      problems.push({ field: 'input', error: 'must be an object' });
    const version = body.version;
    if (
      version !== undefined &&
      version !== null &&
      !(Number.isSafeInteger(version) && (version as number) >= 1)
    )
      problems.push({ field: 'version', error: 'must be a positive integer' });
    if (JSON.stringify(input ?? {}).length > 64 * 1024)
      problems.push({ field: 'input', error: 'must be at most 64 KB as JSON' });
    if (problems.length > 0) throw new ValidationError('Validation failed', problems);
    const definition = await this.definitions.resolve(
      actor.tenantId,
      code,
      (version ?? undefined) as number | undefined,
    );
    const now = Date.now();
    const created = await this.transitions.transaction(async (qr) => {
      const newId = await this.instances.insert(
        qr,
        {
          tenantId: actor.tenantId,
          workflowId: definition.id,
          workflowCode: definition.code,
          workflowVersion: definition.version,
          input: input as Record<string, unknown>,
          startedBy: actor.user.userId,
          requestId: actor.requestId,
        },
        now,
      );
      await this.queue.enqueue(
        qr,
        {
          tenantId: actor.tenantId,
          instanceId: newId,
          nodeId: definition.schema.firstStep,
          kind: 'step',
          attempt: 1,
          stepSeq: 0,
          availableAt: now,
        },
        now,
      );
      await this.journal.insertLog(
        qr,
        actor.tenantId,
        newId,
        {
          level: 'info',
          message: `Workflow ${definition.code} v${definition.version} started by ${actor.user.email}`,
          data: { input },
        },
        now,
      );
      // Read in the transaction that created it: once committed, a worker (of any process) may
      // claim it before this request could read it again.
      const instance = await this.instances.find(actor.tenantId, newId, qr);
      if (!instance) throw new Error(`Workflow instance ${newId} not readable after its insert`);
      return instance;
    });
    const id = created.id;
    this.wakeBus.wake();
    this.emit('workflow.started', actor, id, definition.code, { version: definition.version });
    // D33: 202 with the instance id (`instanceId`, the same as `id`) and the instance as queued.
    return { instanceId: id, ...this.view(created, [], false) };
  }

  async get(tenantId: string, id: number, withNodes = false): Promise<InstanceView> {
    const instance = await this.instances.find(tenantId, id);
    if (!instance) throw new NotFoundError(`Workflow instance ${id} not found`);
    const nodes = await this.journal.nodeStates(tenantId, id);
    return this.view(instance, nodes, withNodes);
  }

  async list(tenantId: string, filter: InstanceFilter): Promise<{ rows: InstanceView[]; total: number }> {
    const { rows, total } = await this.instances.list(tenantId, filter);
    const waiting = await this.journal.waitingNodes(
      tenantId,
      rows.map((r) => r.id),
    );
    return {
      rows: rows.map((r) => {
        const node = waiting.get(r.id);
        return this.view(r, node ? [node] : [], false);
      }),
      total,
    };
  }

  async logs(tenantId: string, id: number, page: { afterId: number; limit: number }): Promise<LogRow[]> {
    if (!(await this.instances.find(tenantId, id)))
      throw new NotFoundError(`Workflow instance ${id} not found`);
    return this.journal.logs(tenantId, id, page);
  }

  async pause(actor: Actor, id: number, reason: string | null): Promise<InstanceView> {
    return this.change(actor, id, 'pause', reason, async (qr, instance, now) => {
      await this.instances.update(qr, actor.tenantId, id, { wfi_status: 'PAUSED' }, now);
      await this.queue.holdForInstance(qr, actor.tenantId, id);
      await this.journal.insertLog(
        qr,
        actor.tenantId,
        id,
        {
          level: 'info',
          message: `Paused by ${actor.user.email}${reason ? `: ${reason}` : ''}`,
          data: { reason, from: instance.status },
        },
        now,
      );
    });
  }

  async resume(actor: Actor, id: number, reason: string | null): Promise<InstanceView> {
    const view = await this.change(actor, id, 'resume', reason, async (qr, _instance, now) => {
      await this.instances.update(qr, actor.tenantId, id, { wfi_status: 'RUNNING' }, now);
      await this.queue.releaseForInstance(qr, actor.tenantId, id);
      await this.journal.insertLog(
        qr,
        actor.tenantId,
        id,
        {
          level: 'info',
          message: `Resumed by ${actor.user.email}${reason ? `: ${reason}` : ''}`,
          data: { reason },
        },
        now,
      );
    });
    this.wakeBus.wake();
    return view;
  }

  async cancel(actor: Actor, id: number, reason: string | null): Promise<InstanceView> {
    return this.change(actor, id, 'cancel', reason, async (qr, instance, now) => {
      const cleared = await this.queue.deleteForInstance(qr, actor.tenantId, id);
      await this.instances.update(
        qr,
        actor.tenantId,
        id,
        { wfi_status: 'CANCELLED', wfi_step_seq: instance.stepSeq + 1, wfi_completed_at: toDbTimestamp(now) },
        now,
      );
      await this.journal.insertLog(
        qr,
        actor.tenantId,
        id,
        {
          level: 'warn',
          message: `Cancelled by ${actor.user.email}${reason ? `: ${reason}` : ''}`,
          data: { reason, from: instance.status, queueItemsCleared: cleared },
        },
        now,
      );
    });
  }

  /**
   * Approve or reject the approval step an instance waits at (issue 12 #6): the caller needs the
   * step's permission (`approve` by default) on workflows (`approve:workflow` or `approve:<code>`)
   * and, when the workflow's trigger names an entity, the entity profile's `approve`; the user who
   * started the instance may not decide it unless the step says `allowSelfApproval: true`.
   */
  async decide(
    actor: Actor,
    id: number,
    decision: 'approved' | 'rejected',
    comment: string | null,
  ): Promise<InstanceView> {
    const action: InstanceAction = decision === 'approved' ? 'approve' : 'reject';
    const instance = await this.instances.find(actor.tenantId, id);
    if (!instance) throw new NotFoundError(`Workflow instance ${id} not found`);
    transition(id, instance.status, action);
    const definition = await this.definitions.byId(actor.tenantId, instance.workflowId);
    const step = instance.currentNode ? definition.schema.byId.get(instance.currentNode) : undefined;
    if (!step || step.type !== 'approval') throw this.notWaiting(instance);
    await this.checkApprover(actor, instance, definition.code, step.config, definition.schema.trigger);
    let fencedAt = 0;
    const view = await this.change(actor, id, action, comment, async (qr, locked, now) => {
      fencedAt = locked.stepSeq;
      const states = await this.journal.nodeStates(actor.tenantId, id);
      const waiting = states.find((s) => s.nodeId === step.id);
      if (locked.currentNode !== step.id || waiting?.status !== 'WAITING') throw this.notWaiting(locked);
      await this.approvals.decideLocked(
        qr,
        locked,
        step,
        decision,
        { userId: actor.user.userId, email: actor.user.email },
        comment,
        now,
      );
    });
    await this.transitions.afterCommit({ tenantId: actor.tenantId, instanceId: id, stepSeq: fencedAt }, step);
    return view;
  }

  private notWaiting(instance: InstanceRow): ConflictError {
    return new ConflictError(
      `Workflow instance ${instance.id} is not waiting for an approval`,
      { instanceId: instance.id, status: instance.status, currentNode: instance.currentNode },
      'illegal_state',
    );
  }

  private async checkApprover(
    actor: Actor,
    instance: InstanceRow,
    code: string,
    config: Record<string, unknown>,
    trigger: Record<string, unknown>,
  ): Promise<void> {
    const permission =
      typeof config.permission === 'string' && config.permission !== '' ? config.permission : 'approve';
    const grant = approvalGrant(permission, code);
    // The one access decision: on the trigger's entity (role grant, profile, mode) when the
    // workflow names one, else the role grant alone.
    if (typeof trigger.entityCode === 'string') {
      const loaded = await this.profiles.load({ entityCode: trigger.entityCode, tenantId: actor.tenantId });
      assertCanPerform('approve', { entity: loaded.entity, policy: loaded.policy, user: actor.user }, grant);
    } else if (!roleGrants(actor.user, grant))
      throw new AuthorizationError(`Permission ${grant[0]} required to decide this approval`);
    if (instance.startedBy === actor.user.userId && config.allowSelfApproval !== true)
      throw new AuthorizationError('The user who started the instance may not approve it (four-eyes rule)');
  }

  /** A user action in a transaction that locks the instance: the D34 check, then `work`. */
  private async change(
    actor: Actor,
    id: number,
    action: InstanceAction,
    reason: string | null,
    work: (qr: QueryRunner, instance: InstanceRow, now: number) => Promise<void>,
  ): Promise<InstanceView> {
    let code = '';
    await this.transitions.transaction(async (qr) => {
      const locked = await this.instances.lock(qr, actor.tenantId, id);
      if (!locked) throw new NotFoundError(`Workflow instance ${id} not found`);
      transition(id, locked.status, action);
      code = locked.workflowCode;
      await work(qr, locked, Date.now());
    });
    const event: Record<InstanceAction, WorkflowEvent> = {
      pause: 'workflow.paused',
      resume: 'workflow.resumed',
      cancel: 'workflow.cancelled',
      approve: 'workflow.approved',
      reject: 'workflow.rejected',
    };
    this.emit(event[action], actor, id, code, reason ? { reason } : {});
    return this.get(actor.tenantId, id);
  }

  private emit(
    event: WorkflowEvent,
    actor: Actor,
    instanceId: number,
    workflowCode: string,
    extra: Record<string, unknown>,
  ): void {
    this.telemetry.event(event, {
      tenantId: actor.tenantId,
      userId: actor.user.userId,
      instanceId,
      workflowCode,
      ...extra,
    });
  }

  private view(instance: InstanceRow, nodes: NodeStateRow[], withNodes: boolean): InstanceView {
    const waitingNode = nodes.find((n) => n.nodeId === instance.currentNode && n.status === 'WAITING');
    const waitingOutput = (waitingNode?.output ?? {}) as Record<string, unknown>;
    const values = instance.context.values;
    return {
      id: instance.id,
      workflowCode: instance.workflowCode,
      version: instance.workflowVersion,
      status: instance.status,
      currentNode: instance.currentNode,
      error: instance.errorMessage,
      input: instance.input,
      context: values && typeof values === 'object' ? (values as Record<string, unknown>) : {},
      startedBy: instance.startedBy,
      createdAt: iso(instance.createdAt),
      updatedAt: iso(instance.updatedAt),
      completedAt: iso(instance.completedAt),
      waitingFor:
        waitingNode && !['COMPLETED', 'FAILED', 'CANCELLED'].includes(instance.status)
          ? {
              type: 'approval',
              step: waitingNode.nodeId,
              message: waitingOutput.message ?? null,
              permission: waitingOutput.permission ?? 'approve',
              since: iso(waitingNode.startedAt),
            }
          : null,
      ...(withNodes
        ? { nodes: nodes.map((n) => ({ ...n, startedAt: iso(n.startedAt), finishedAt: iso(n.finishedAt) })) }
        : {}),
    };
  }
}
