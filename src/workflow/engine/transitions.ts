import { Injectable, Logger } from '@nestjs/common';
import type { QueryRunner } from 'typeorm';
import { ConflictError } from '../../common/errors/app-error';
import { DatabaseService } from '../../database/database.service';
import { toDbTimestamp } from '../../database/dialect';
import { BusyError, isBusyError } from '../../database/dialect/constraint-errors';
import { RecordsWriteRepository } from '../../records/records-write.repository';
import type { StepDef } from '../definition/workflow-schema';
import { InstanceJournalRepository } from '../instance/journal.repository';
import { InstancesRepository, type InstanceRow } from '../instance/instances.repository';
import { FINAL_STATES } from '../instance/state-machine';
import { QueueRepository, type QueueRow } from '../queue/queue.repository';
import { WorkflowWakeBus } from '../queue/wake-bus';
import { WorkflowTelemetry } from '../workflow-telemetry';

/** Why a step's commit did not happen: the instance moved on (D49's checks before the commit). */
export class StepAborted extends ConflictError {
  constructor(readonly why: 'paused' | 'final' | 'duplicate' | 'gone') {
    super(`Step not committed: ${why}`, null, 'illegal_state');
  }
}

/** How often a transaction that hit a deadlock runs again before it gives up (409). */
const BUSY_RETRIES = 5;

/** Where an instance goes after a step: to a step (after a delay), or to its end. */
export interface Continuation {
  next: string | null;
  delayMs?: number;
}

/**
 * The fenced commits every change of an instance is made of (D49): a transaction that locks the
 * instance row and checks that it still runs and is still at the step sequence the change was
 * prepared for; moving a locked instance on (next step, completion, failure, an onError target);
 * and what happens after a commit (events, wake-ups) or instead of one (a row held or dropped).
 * Used by the step runner (workflow-engine.ts), approvals (approvals.ts) and the routes' use cases.
 */
@Injectable()
export class InstanceTransitions {
  private readonly logger = new Logger('WorkflowEngine');

  constructor(
    private readonly database: DatabaseService,
    private readonly writes: RecordsWriteRepository,
    private readonly instances: InstancesRepository,
    private readonly journal: InstanceJournalRepository,
    private readonly queue: QueueRepository,
    private readonly telemetry: WorkflowTelemetry,
    private readonly wakeBus: WorkflowWakeBus,
  ) {}

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
    // The end of an error path (a step failed and its onError named a step): the work the
    // workflow was for did not happen, so it ends FAILED with that step's error.
    const context =
      typeof extra.wfi_context === 'string'
        ? (JSON.parse(extra.wfi_context) as Record<string, unknown>)
        : instance.context;
    const handled = failureOf(context);
    if (handled) {
      await this.failLocked(
        qr,
        instance,
        `${handled.error} (the workflow ended on its onError path)`,
        extra,
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
    await this.journal.insertLog(
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
    await this.journal.insertLog(
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
    errorPath = false,
  ): Promise<void> {
    if (target === 'fail') {
      await this.failLocked(qr, instance, failure, {}, now);
      return;
    }
    if (target === 'continue') {
      await this.continueWith(qr, instance, { next: step.next ?? null }, {}, now);
      return;
    }
    // A step id: on an error path, the failure is remembered (and shown) until the failed step
    // succeeds on a later visit, or the path ends (FAILED, see continueWith).
    const extra: Record<string, unknown> = errorPath
      ? {
          wfi_context: JSON.stringify({ ...instance.context, failure: { step: step.id, error: failure } }),
          wfi_error_message: failure.slice(0, 4000),
        }
      : {};
    await this.continueWith(qr, instance, { next: target }, extra, now);
  }

  /**
   * A fenced transaction for a claimed row: committed, then the events; or, when the instance moved
   * on meanwhile (StepAborted), the row is held or dropped. Whether it committed.
   */
  async fencedForRow(
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

  async aborted(row: QueueRow, err: StepAborted): Promise<void> {
    this.logger.debug(
      { instanceId: row.instanceId, node: row.nodeId, reason: err.why },
      'Workflow step not committed',
    );
    if (err.why === 'paused') await this.queue.hold(row.id);
    else await this.queue.delete(undefined, row.id);
  }
}

/** The failure an instance's context remembers (goTo on an error path), if any. */
export function failureOf(context: Record<string, unknown>): { step: string; error: string } | undefined {
  const f = context.failure;
  if (!f || typeof f !== 'object') return undefined;
  const { step, error } = f as Record<string, unknown>;
  return typeof step === 'string' && typeof error === 'string' ? { step, error } : undefined;
}
