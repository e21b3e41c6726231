import { Injectable, Logger } from '@nestjs/common';
import type { QueryRunner } from 'typeorm';
import { AppError, ConflictError } from '../../common/errors/app-error';
import { requestScope } from '../../common/request-scope';
import { DatabaseService } from '../../database/database.service';
import { toDbTimestamp } from '../../database/dialect';
import { BusyError, isBusyError } from '../../database/dialect/constraint-errors';
import { RecordsWriteRepository } from '../../records/records-write.repository';
import { retryDelayMs } from '../definition/backoff';
import type { ExpressionScope } from '../definition/expressions';
import {
  WorkflowDefinitionsService,
  type WorkflowDefinition,
} from '../definition/workflow-definitions.service';
import { retryPolicyOf, type StepDef, type StepType } from '../definition/workflow-schema';
import { InstancesRepository, type InstanceRow } from '../instance/instances.repository';
import { FINAL_STATES } from '../instance/state-machine';
import { QueueRepository, type QueueRow } from '../queue/queue.repository';
import { WorkflowWakeBus } from '../queue/wake-bus';
import { approvalStep } from '../steps/approval.step';
import { conditionStep } from '../steps/condition.step';
import { delayStep } from '../steps/delay.step';
import { EntitySteps } from '../steps/entity.steps';
import { logStep } from '../steps/log.step';
import { setStep } from '../steps/set.step';
import { WorkflowTelemetry } from '../workflow-telemetry';
import { isPermanent, type StepHandler, type StepLogEntry, type StepOutcome } from './step-types';

/** Why a step's commit did not happen: the instance moved on (D49's checks before the commit). */
export class StepAborted extends ConflictError {
  constructor(readonly reason: 'paused' | 'final' | 'duplicate' | 'gone') {
    super(`Step not committed: ${reason}`);
  }
}

/** How often a transaction that hit a deadlock runs again before it gives up (409). */
const BUSY_RETRIES = 5;

/** A run longer than this many steps is a loop: the instance fails. */
export const MAX_STEPS_PER_INSTANCE = 10_000;

/** Where an instance goes after a step: to a step (after a delay), or to its end. */
interface Continuation {
  next: string | null;
  delayMs?: number;
}

/**
 * Runs queued steps (D35, D49). Every state change of an instance — a step's result, a retry, a
 * failure, an approval — is a fenced commit: one transaction that locks the instance row, checks
 * that it still runs and that the step sequence the queue row was queued at is the current one,
 * writes the node state, the idempotency key, the log lines and the next queue row, and advances
 * the sequence. A row delivered twice (an expired lease) or a step overtaken by pause or cancel on
 * another instance therefore commits nothing; a step that writes a record does so in this very
 * transaction (WriteHooks), so the record is written once.
 */
@Injectable()
export class WorkflowEngine {
  private readonly logger = new Logger('WorkflowEngine');
  private readonly handlers: ReadonlyMap<StepType, StepHandler>;

  constructor(
    private readonly database: DatabaseService,
    private readonly writes: RecordsWriteRepository,
    private readonly instances: InstancesRepository,
    private readonly queue: QueueRepository,
    private readonly definitions: WorkflowDefinitionsService,
    private readonly telemetry: WorkflowTelemetry,
    private readonly wakeBus: WorkflowWakeBus,
    entitySteps: EntitySteps,
  ) {
    this.handlers = new Map(
      [
        logStep,
        setStep,
        conditionStep,
        delayStep,
        approvalStep,
        entitySteps.createStep,
        entitySteps.updateStep,
      ].map((h) => [h.type, h] as const),
    );
  }

  /** A transaction on the configuration database (SQLite: in its single writer's queue). */
  /**
   * A transaction on the configuration database (SQLite: in its single writer's queue), at READ
   * COMMITTED where the default is stricter (MariaDB's REPEATABLE READ takes gap locks on the
   * queue's index ranges, and concurrent claims and commits deadlock on them). A deadlock or
   * serialization failure rolls back everything, so the work simply runs again (up to
   * BUSY_RETRIES times, after a short random pause); then it is a 409 BusyError.
   */
  async transaction<T>(work: (qr: QueryRunner) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.writes.transaction(
          this.database.dataSource,
          (tx) => work(tx.config),
          'READ COMMITTED',
        );
      } catch (err) {
        if (!isBusyError(err)) throw err;
        if (attempt >= BUSY_RETRIES) throw new BusyError('The workflow queue is busy; retry');
        await new Promise((r) => setTimeout(r, 5 + Math.floor(Math.random() * 20 * attempt)));
      }
    }
  }

  /**
   * Locks the instance in `qr`'s transaction and checks it may still take the change: it exists,
   * is not final, and (for engine commits) is not paused and still at `stepSeq`.
   */
  async fence(qr: QueryRunner, tenantId: string, instanceId: number, stepSeq?: number): Promise<InstanceRow> {
    const locked = await this.instances.lock(qr, tenantId, instanceId);
    if (!locked) throw new StepAborted('gone');
    if (FINAL_STATES.has(locked.status)) throw new StepAborted('final');
    if (stepSeq !== undefined) {
      if (locked.status === 'PAUSED') throw new StepAborted('paused');
      if (locked.stepSeq !== stepSeq) throw new StepAborted('duplicate');
    }
    return locked;
  }

  /** The expression scope of an instance: input, context values, earlier outputs, the record. */
  async scopeOf(instance: InstanceRow): Promise<ExpressionScope> {
    const states = await this.instances.nodeStates(instance.tenantId, instance.id);
    const steps: Record<string, unknown> = {};
    for (const s of states) steps[s.nodeId] = s.output;
    const values = instance.context.values;
    return {
      input: instance.input,
      context: values && typeof values === 'object' ? (values as Record<string, unknown>) : {},
      steps,
      record: instance.context.record,
    };
  }

  /** Runs one claimed queue row to its commit (or to a harmless abort). */
  async process(row: QueueRow): Promise<void> {
    await requestScope.run({ requestId: `workflow-${row.instanceId}`, tenantId: row.tenantId }, async () => {
      const instance = await this.instances.find(row.tenantId, row.instanceId);
      if (!instance || FINAL_STATES.has(instance.status) || instance.stepSeq !== row.stepSeq) {
        await this.queue.delete(undefined, row.id);
        return;
      }
      requestScope.set({
        requestId: instance.requestId ?? undefined,
        userId: instance.startedBy ?? undefined,
      });
      if (instance.status === 'PAUSED') {
        await this.queue.hold(row.id);
        return;
      }
      if (instance.status === 'PENDING')
        await this.instances.update(
          undefined,
          row.tenantId,
          row.instanceId,
          { wfi_status: 'RUNNING' },
          Date.now(),
          'PENDING',
        );
      let definition: WorkflowDefinition;
      try {
        definition = await this.definitions.byId(row.tenantId, instance.workflowId);
      } catch (err) {
        await this.failInstance(row, row.nodeId, `Definition unusable: ${messageOf(err)}`);
        return;
      }
      const step = definition.schema.byId.get(row.nodeId);
      if (!step) {
        await this.failInstance(
          row,
          row.nodeId,
          `Step ${row.nodeId} is not in version ${definition.version}`,
        );
        return;
      }
      if (row.kind === 'timeout') {
        await this.approvalTimedOut(row, step);
        return;
      }
      await this.runStep(row, instance, definition, step);
    });
  }

  private async runStep(
    row: QueueRow,
    instance: InstanceRow,
    definition: WorkflowDefinition,
    step: StepDef,
  ): Promise<void> {
    const startedAt = Date.now();
    const handler = this.handlers.get(step.type);
    try {
      if (!handler) throw new Error(`No handler for step type ${step.type}`);
      if (row.stepSeq >= MAX_STEPS_PER_INSTANCE)
        throw new Error(`More than ${MAX_STEPS_PER_INSTANCE} steps: a loop?`);
      const scope = await this.scopeOf(instance);
      let committed = false;
      await handler.run({ definition, step, instance, scope, attempt: row.attempt }, async (outcome, tx) => {
        const work = (qr: QueryRunner) => this.commitOutcome(qr, row, step, outcome, startedAt);
        if (tx) await work(tx.config);
        else await this.transaction(work);
        committed = true;
      });
      if (!committed) throw new Error(`Step ${step.id} ended without a result`);
      this.telemetry.step(step.type, outcomeName(step), (Date.now() - startedAt) / 1000);
      await this.afterCommit(row, step);
    } catch (err) {
      if (err instanceof StepAborted) {
        this.telemetry.step(step.type, 'aborted', (Date.now() - startedAt) / 1000);
        await this.aborted(row, err);
        return;
      }
      if (isBusyError(err)) {
        // A deadlock in the step's own write transaction rolled everything back: not a failure of
        // the step, so no attempt is spent. The row goes back to the queue, due shortly.
        this.telemetry.step(step.type, 'requeued', (Date.now() - startedAt) / 1000);
        await this.queue.release(row.id, Date.now() + 10 + Math.floor(Math.random() * 90));
        return;
      }
      await this.stepFailed(row, definition, step, err, startedAt);
    }
  }

  /** The fenced commit of a step's outcome (in the step's own write transaction when it has one). */
  private async commitOutcome(
    qr: QueryRunner,
    row: QueueRow,
    step: StepDef,
    outcome: StepOutcome,
    startedAt: number,
  ): Promise<void> {
    const instance = await this.fence(qr, row.tenantId, row.instanceId, row.stepSeq);
    const now = Date.now();
    await this.instances.insertStepKey(
      qr,
      row.tenantId,
      row.instanceId,
      { stepSeq: row.stepSeq, nodeId: step.id, attempt: row.attempt },
      now,
    );
    if (outcome.log) await this.writeLog(qr, instance, outcome.log, step.id, now);
    await this.queue.delete(qr, row.id);
    const seq = instance.stepSeq + 1;
    if (outcome.kind === 'wait') {
      await this.instances.saveNodeState(qr, row.tenantId, row.instanceId, {
        nodeId: step.id,
        status: 'WAITING',
        attempts: row.attempt,
        output: outcome.output,
        startedAt,
      });
      await this.instances.update(
        qr,
        row.tenantId,
        row.instanceId,
        { wfi_status: 'RUNNING', wfi_current_node: step.id, wfi_step_seq: seq },
        now,
      );
      if (outcome.timeoutMs !== undefined)
        await this.queue.enqueue(
          qr,
          {
            tenantId: row.tenantId,
            instanceId: row.instanceId,
            nodeId: step.id,
            kind: 'timeout',
            attempt: 1,
            stepSeq: seq,
            availableAt: now + outcome.timeoutMs,
          },
          now,
        );
      return;
    }
    await this.instances.saveNodeState(qr, row.tenantId, row.instanceId, {
      nodeId: step.id,
      status: 'COMPLETED',
      attempts: row.attempt,
      output: outcome.output ?? null,
      startedAt,
      finishedAt: now,
    });
    const context = {
      ...instance.context,
      values: { ...asObject(instance.context.values), ...(outcome.contextValues ?? {}) },
      ...(outcome.record ? { record: outcome.record } : {}),
    };
    const next = outcome.next === undefined ? (step.next ?? null) : outcome.next;
    await this.continueWith(
      qr,
      instance,
      { next, delayMs: outcome.delayMs },
      { wfi_context: JSON.stringify(context) },
      now,
    );
  }

  /**
   * Moves a locked instance on: queues `next` (sequence + 1), or completes the instance. `extra`
   * are further instance columns to set.
   */
  async continueWith(
    qr: QueryRunner,
    instance: InstanceRow,
    continuation: Continuation,
    extra: Record<string, unknown>,
    now: number,
  ): Promise<void> {
    const seq = instance.stepSeq + 1;
    if (continuation.next) {
      await this.queue.enqueue(
        qr,
        {
          tenantId: instance.tenantId,
          instanceId: instance.id,
          nodeId: continuation.next,
          kind: 'step',
          attempt: 1,
          stepSeq: seq,
          availableAt: now + (continuation.delayMs ?? 0),
        },
        now,
      );
      await this.instances.update(
        qr,
        instance.tenantId,
        instance.id,
        { ...extra, wfi_status: 'RUNNING', wfi_current_node: continuation.next, wfi_step_seq: seq },
        now,
      );
      return;
    }
    await this.queue.deleteForInstance(qr, instance.tenantId, instance.id);
    await this.instances.update(
      qr,
      instance.tenantId,
      instance.id,
      { ...extra, wfi_status: 'COMPLETED', wfi_step_seq: seq, wfi_completed_at: toDbTimestamp(now) },
      now,
    );
    await this.instances.insertLog(
      qr,
      instance.tenantId,
      instance.id,
      { level: 'info', message: 'Workflow completed' },
      now,
    );
  }

  /** Ends a locked instance as FAILED: its queue rows go, the reason is logged. */
  async failLocked(
    qr: QueryRunner,
    instance: InstanceRow,
    message: string,
    extra: Record<string, unknown>,
    now: number,
  ): Promise<void> {
    await this.queue.deleteForInstance(qr, instance.tenantId, instance.id);
    await this.instances.update(
      qr,
      instance.tenantId,
      instance.id,
      {
        ...extra,
        wfi_status: 'FAILED',
        wfi_error_message: message.slice(0, 4000),
        wfi_step_seq: instance.stepSeq + 1,
        wfi_completed_at: toDbTimestamp(now),
      },
      now,
    );
    await this.instances.insertLog(
      qr,
      instance.tenantId,
      instance.id,
      { level: 'error', message: `Workflow failed: ${message}` },
      now,
    );
  }

  /**
   * Where a step's `onError`, `onTimeout` or `onReject` sends a locked instance: `fail` ends it as
   * FAILED with `failure`; `continue` goes on at the step's `next`; anything else is a step id.
   */
  async goTo(
    qr: QueryRunner,
    instance: InstanceRow,
    step: StepDef,
    target: string,
    failure: string,
    now: number,
  ): Promise<void> {
    if (target === 'fail') await this.failLocked(qr, instance, failure, {}, now);
    else
      await this.continueWith(
        qr,
        instance,
        { next: target === 'continue' ? (step.next ?? null) : target },
        {},
        now,
      );
  }

  /**
   * A fenced transaction for a claimed row: committed, then the events; or, when the instance moved
   * on meanwhile (StepAborted), the row is held or dropped. Whether it committed.
   */
  private async fencedForRow(
    row: QueueRow,
    work: (qr: QueryRunner, locked: InstanceRow) => Promise<void>,
  ): Promise<boolean> {
    try {
      await this.transaction(async (qr) =>
        work(qr, await this.fence(qr, row.tenantId, row.instanceId, row.stepSeq)),
      );
      return true;
    } catch (err) {
      if (!(err instanceof StepAborted)) throw err;
      await this.aborted(row, err);
      return false;
    }
  }

  /**
   * Events and wake-ups once a commit fenced at `row.stepSeq` has landed. The final events are
   * emitted only by the commit that ended the instance (its sequence is still the current one):
   * the commit before it may run its after-commit later and must not emit them again.
   */
  async afterCommit(
    row: Pick<QueueRow, 'tenantId' | 'instanceId' | 'stepSeq'>,
    step?: StepDef,
  ): Promise<void> {
    const now = await this.instances.find(row.tenantId, row.instanceId);
    if (!now) return;
    if (now.stepSeq !== row.stepSeq + 1) {
      this.wakeBus.wake();
      return;
    }
    const fields = {
      tenantId: now.tenantId,
      userId: now.startedBy,
      instanceId: now.id,
      workflowCode: now.workflowCode,
    };
    if (now.status === 'COMPLETED') this.telemetry.event('workflow.completed', fields);
    else if (now.status === 'FAILED')
      this.telemetry.event('workflow.failed', { ...fields, error: now.errorMessage, step: step?.id });
    else this.wakeBus.wake();
  }

  private async writeLog(
    qr: QueryRunner,
    instance: InstanceRow,
    log: StepLogEntry,
    nodeId: string,
    now: number,
  ): Promise<void> {
    const data = log.data === undefined ? { step: nodeId } : { step: nodeId, data: log.data };
    await this.instances.insertLog(
      qr,
      instance.tenantId,
      instance.id,
      { level: log.level, message: log.message, data },
      now,
    );
  }

  private async aborted(row: QueueRow, err: StepAborted): Promise<void> {
    this.logger.debug(
      { instanceId: row.instanceId, node: row.nodeId, reason: err.reason },
      'Workflow step not committed',
    );
    if (err.reason === 'paused') await this.queue.hold(row.id);
    else await this.queue.delete(undefined, row.id);
  }

  /**
   * A step threw: retried with backoff while its policy allows and the error is not permanent
   * (a 4xx other than 409/429 would fail again), then its `onError` (or the schema's
   * `errorHandling.onFailure`): `fail`, `continue` (its `next`), or a step to go to.
   */
  private async stepFailed(
    row: QueueRow,
    definition: WorkflowDefinition,
    step: StepDef,
    err: unknown,
    startedAt: number,
  ): Promise<void> {
    const message = messageOf(err);
    const policy = retryPolicyOf(definition.schema, step);
    const retry = !isPermanent(err) && row.attempt < policy.maxAttempts;
    const done = await this.fencedForRow(row, async (qr, instance) => {
      const now = Date.now();
      await this.instances.insertStepKey(
        qr,
        row.tenantId,
        row.instanceId,
        { stepSeq: row.stepSeq, nodeId: step.id, attempt: row.attempt },
        now,
      );
      await this.queue.delete(qr, row.id);
      if (retry) {
        const delay = retryDelayMs(policy, row.attempt);
        await this.instances.saveNodeState(qr, row.tenantId, row.instanceId, {
          nodeId: step.id,
          status: 'RETRYING',
          error: message,
          attempts: row.attempt,
          startedAt,
        });
        await this.instances.insertLog(
          qr,
          row.tenantId,
          row.instanceId,
          {
            level: 'warn',
            message: `Step ${step.id} failed (attempt ${row.attempt} of ${policy.maxAttempts}); retrying in ${delay} ms: ${message}`,
            data: { step: step.id, attempt: row.attempt, delayMs: delay },
          },
          now,
        );
        const seq = instance.stepSeq + 1;
        await this.queue.enqueue(
          qr,
          {
            tenantId: row.tenantId,
            instanceId: row.instanceId,
            nodeId: step.id,
            kind: 'step',
            attempt: row.attempt + 1,
            stepSeq: seq,
            availableAt: now + delay,
          },
          now,
        );
        await this.instances.update(
          qr,
          row.tenantId,
          row.instanceId,
          { wfi_step_seq: seq, wfi_status: 'RUNNING' },
          now,
        );
        return;
      }
      await this.instances.saveNodeState(qr, row.tenantId, row.instanceId, {
        nodeId: step.id,
        status: 'FAILED',
        error: message,
        attempts: row.attempt,
        startedAt,
        finishedAt: now,
      });
      await this.instances.insertLog(
        qr,
        row.tenantId,
        row.instanceId,
        {
          level: 'error',
          message: `Step ${step.id} failed after ${row.attempt} attempt(s): ${message}`,
          data: { step: step.id, attempt: row.attempt },
        },
        now,
      );
      const onError = step.onError ?? definition.schema.errorHandling.onFailure;
      await this.goTo(qr, instance, step, onError, `Step ${step.id}: ${message}`, now);
    });
    if (!done) return;
    if (retry) this.telemetry.retry(step.type);
    this.telemetry.step(step.type, retry ? 'retry' : 'failed', (Date.now() - startedAt) / 1000);
    this.logger.warn(
      { instanceId: row.instanceId, step: step.id, attempt: row.attempt, err: message },
      retry ? 'Workflow step failed; retry queued' : 'Workflow step failed',
    );
    await this.afterCommit(row, step);
  }

  /** The definition or step is gone: the instance cannot go on. */
  private async failInstance(row: QueueRow, nodeId: string, message: string): Promise<void> {
    const done = await this.fencedForRow(row, (qr, locked) =>
      this.failLocked(qr, locked, message, { wfi_current_node: nodeId }, Date.now()),
    );
    if (done) await this.afterCommit(row);
  }

  /** An approval step's `timeoutS` came due while it still waits: its `onTimeout` decides. */
  private async approvalTimedOut(row: QueueRow, step: StepDef): Promise<void> {
    const onTimeout = typeof step.config.onTimeout === 'string' ? step.config.onTimeout : 'fail';
    const done = await this.fencedForRow(row, async (qr, locked) => {
      const now = Date.now();
      await this.queue.delete(qr, row.id);
      await this.instances.insertLog(
        qr,
        row.tenantId,
        row.instanceId,
        {
          level: 'warn',
          message: `Approval at ${step.id} timed out (onTimeout: ${onTimeout})`,
          data: { step: step.id },
        },
        now,
      );
      if (onTimeout === 'approve' || onTimeout === 'reject') {
        const decision = onTimeout === 'approve' ? 'approved' : 'rejected';
        const by = { userId: null, email: 'system (timeout)' };
        await this.decideLocked(qr, locked, step, decision, by, 'timed out', now);
        return;
      }
      const waiting = (await this.instances.nodeStates(row.tenantId, row.instanceId)).find(
        (s) => s.nodeId === step.id,
      );
      await this.instances.saveNodeState(qr, row.tenantId, row.instanceId, {
        nodeId: step.id,
        status: 'TIMED_OUT',
        attempts: 1,
        startedAt: waiting?.startedAt ?? now,
        finishedAt: now,
        output: {
          ...asObject(waiting?.output),
          decision: 'timed out',
          decidedAt: new Date(now).toISOString(),
        },
      });
      await this.goTo(qr, locked, step, onTimeout, `Approval at ${step.id} timed out`, now);
    });
    if (done) await this.afterCommit(row, step);
  }

  /**
   * Records an approval decision on a locked instance that waits at `step` (the caller checked
   * state, permission and four-eyes): node state, log, then `next` (approved) or `onReject`
   * (rejected; without one the instance fails).
   */
  async decideLocked(
    qr: QueryRunner,
    instance: InstanceRow,
    step: StepDef,
    decision: 'approved' | 'rejected',
    by: { userId: number | null; email: string },
    comment: string | null,
    now: number,
  ): Promise<void> {
    const states = await this.instances.nodeStates(instance.tenantId, instance.id);
    const waiting = states.find((s) => s.nodeId === step.id);
    await this.queue.deleteForInstance(qr, instance.tenantId, instance.id, 'timeout');
    await this.instances.saveNodeState(qr, instance.tenantId, instance.id, {
      nodeId: step.id,
      status: decision === 'approved' ? 'COMPLETED' : 'REJECTED',
      attempts: 1,
      startedAt: waiting?.startedAt ?? now,
      finishedAt: now,
      output: {
        ...asObject(waiting?.output),
        decision,
        approver: by,
        comment,
        decidedAt: new Date(now).toISOString(),
      },
    });
    await this.instances.insertLog(
      qr,
      instance.tenantId,
      instance.id,
      {
        level: 'info',
        message: `${decision === 'approved' ? 'Approved' : 'Rejected'} at ${step.id} by ${by.email}${comment ? `: ${comment}` : ''}`,
        data: { step: step.id, decision, approver: by, comment },
      },
      now,
    );
    if (decision === 'approved') {
      await this.continueWith(qr, instance, { next: step.next ?? null }, {}, now);
      return;
    }
    const onReject = typeof step.config.onReject === 'string' ? step.config.onReject : 'fail';
    await this.goTo(
      qr,
      instance,
      step,
      onReject,
      `Rejected at ${step.id} by ${by.email}${comment ? `: ${comment}` : ''}`,
      now,
    );
  }
}

function outcomeName(step: StepDef): string {
  return step.type === 'approval' ? 'waiting' : 'completed';
}

function asObject(value: unknown): Record<string, unknown> {
  return value && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}

export function messageOf(err: unknown): string {
  if (err instanceof AppError) {
    const details = Array.isArray(err.details)
      ? ` (${(err.details as Array<{ field?: string; error?: string }>).map((d) => `${d.field}: ${d.error}`).join('; ')})`
      : '';
    return `${err.code}: ${err.message}${details}`;
  }
  return err instanceof Error ? err.message : String(err);
}
