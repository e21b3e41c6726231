import { Injectable, Logger } from '@nestjs/common';
import type { QueryRunner } from 'typeorm';
import { requestScope } from '../../common/request-scope';
import { isBusyError } from '../../database/dialect/constraint-errors';
import { retryDelayMs } from '../definition/backoff';
import type { ExpressionScope } from '../definition/expressions';
import {
  WorkflowDefinitionsService,
  type WorkflowDefinition,
} from '../definition/workflow-definitions.service';
import { retryPolicyOf, type StepDef, type StepType } from '../definition/workflow-schema';
import { InstanceJournalRepository } from '../instance/journal.repository';
import { InstancesRepository, type InstanceRow } from '../instance/instances.repository';
import { FINAL_STATES } from '../instance/state-machine';
import { QueueRepository, type QueueRow } from '../queue/queue.repository';
import { approvalStep } from '../steps/approval.step';
import { conditionStep } from '../steps/condition.step';
import { delayStep } from '../steps/delay.step';
import { EntitySteps } from '../steps/entity.steps';
import { logStep } from '../steps/log.step';
import { setStep } from '../steps/set.step';
import { WorkflowTelemetry } from '../workflow-telemetry';
import { Approvals } from './approvals';
import { asObject, messageOf } from './messages';
import { isPermanent, type StepHandler, type StepLogEntry, type StepOutcome } from './step-types';
import { failureOf, InstanceTransitions, StepAborted } from './transitions';

/** A run longer than this many steps is a loop: the instance fails. */
export const MAX_STEPS_PER_INSTANCE = 10_000;

/**
 * Runs queued steps (D35, D49) through their handlers (steps/). Every state change of an instance — a step's result, a retry, a
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
    private readonly transitions: InstanceTransitions,
    private readonly approvals: Approvals,
    private readonly instances: InstancesRepository,
    private readonly journal: InstanceJournalRepository,
    private readonly queue: QueueRepository,
    private readonly definitions: WorkflowDefinitionsService,
    private readonly telemetry: WorkflowTelemetry,
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

  /** The expression scope of an instance: input, context values, earlier outputs, the record. */
  async scopeOf(instance: InstanceRow): Promise<ExpressionScope> {
    const states = await this.journal.nodeStates(instance.tenantId, instance.id);
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
        await this.approvals.timedOut(row, step);
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
        else await this.transitions.transaction(work);
        committed = true;
      });
      if (!committed) throw new Error(`Step ${step.id} ended without a result`);
      this.telemetry.step(step.type, outcomeName(step), (Date.now() - startedAt) / 1000);
      await this.transitions.afterCommit(row, step);
    } catch (err) {
      if (err instanceof StepAborted) {
        this.telemetry.step(step.type, 'aborted', (Date.now() - startedAt) / 1000);
        await this.transitions.aborted(row, err);
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
    const instance = await this.transitions.fence(qr, row.tenantId, row.instanceId, row.stepSeq);
    const now = Date.now();
    await this.journal.insertStepKey(
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
      await this.journal.saveNodeState(qr, row.tenantId, row.instanceId, {
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
    await this.journal.saveNodeState(qr, row.tenantId, row.instanceId, {
      nodeId: step.id,
      status: 'COMPLETED',
      attempts: row.attempt,
      output: outcome.output ?? null,
      startedAt,
      finishedAt: now,
    });
    const { failure: _failure, ...kept } = instance.context;
    // A step that failed and now succeeds (a retry loop through its onError path): recovered.
    const recovered = failureOf(instance.context)?.step === step.id;
    const context = {
      ...(recovered ? kept : instance.context),
      values: { ...asObject(instance.context.values), ...(outcome.contextValues ?? {}) },
      ...(outcome.record ? { record: outcome.record } : {}),
    };
    const next = outcome.next === undefined ? (step.next ?? null) : outcome.next;
    await this.transitions.continueWith(
      qr,
      instance,
      { next, delayMs: outcome.delayMs },
      { wfi_context: JSON.stringify(context), ...(recovered ? { wfi_error_message: null } : {}) },
      now,
    );
  }

  private async writeLog(
    qr: QueryRunner,
    instance: InstanceRow,
    log: StepLogEntry,
    nodeId: string,
    now: number,
  ): Promise<void> {
    const data = log.data === undefined ? { step: nodeId } : { step: nodeId, data: log.data };
    await this.journal.insertLog(
      qr,
      instance.tenantId,
      instance.id,
      { level: log.level, message: log.message, data },
      now,
    );
  }

  /**
   * A step threw: retried with backoff while its policy allows and the error is not permanent
   * (a domain error that is not transient — a bad value, no permission, dependents — would fail again), then its `onError` (or the schema's
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
    const done = await this.transitions.fencedForRow(row, async (qr, instance) => {
      const now = Date.now();
      await this.journal.insertStepKey(
        qr,
        row.tenantId,
        row.instanceId,
        { stepSeq: row.stepSeq, nodeId: step.id, attempt: row.attempt },
        now,
      );
      await this.queue.delete(qr, row.id);
      if (retry) {
        const delay = retryDelayMs(policy, row.attempt);
        await this.journal.saveNodeState(qr, row.tenantId, row.instanceId, {
          nodeId: step.id,
          status: 'RETRYING',
          error: message,
          attempts: row.attempt,
          startedAt,
        });
        await this.journal.insertLog(
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
      await this.journal.saveNodeState(qr, row.tenantId, row.instanceId, {
        nodeId: step.id,
        status: 'FAILED',
        error: message,
        attempts: row.attempt,
        startedAt,
        finishedAt: now,
      });
      await this.journal.insertLog(
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
      await this.transitions.goTo(qr, instance, step, onError, `Step ${step.id}: ${message}`, now, true);
    });
    if (!done) return;
    if (retry) this.telemetry.retry(step.type);
    this.telemetry.step(step.type, retry ? 'retry' : 'failed', (Date.now() - startedAt) / 1000);
    this.logger.warn(
      { instanceId: row.instanceId, step: step.id, attempt: row.attempt, err: message },
      retry ? 'Workflow step failed; retry queued' : 'Workflow step failed',
    );
    await this.transitions.afterCommit(row, step);
  }

  /** The definition or step is gone: the instance cannot go on. */
  private async failInstance(row: QueueRow, nodeId: string, message: string): Promise<void> {
    const done = await this.transitions.fencedForRow(row, (qr, locked) =>
      this.transitions.failLocked(qr, locked, message, { wfi_current_node: nodeId }, Date.now()),
    );
    if (done) await this.transitions.afterCommit(row);
  }
}

function outcomeName(step: StepDef): string {
  return step.type === 'approval' ? 'waiting' : 'completed';
}
