import { Injectable } from '@nestjs/common';
import type { QueryRunner } from 'typeorm';
import type { StepDef } from '../definition/workflow-schema';
import { InstanceJournalRepository } from '../instance/journal.repository';
import type { InstanceRow } from '../instance/instances.repository';
import { QueueRepository, type QueueRow } from '../queue/queue.repository';
import { asObject } from './messages';
import { InstanceTransitions } from './transitions';

/**
 * Approval decisions (issue 12 #6): a user's approve or reject of the step an instance waits at
 * (the routes' use case checks state, permission and four-eyes first), and a `timeoutS` that came
 * due while it still waits. The decision, approver, comment and time go into the node output and
 * the log; then `next`, `onReject` or `onTimeout` decides where the instance goes.
 */
@Injectable()
export class Approvals {
  constructor(
    private readonly transitions: InstanceTransitions,
    private readonly journal: InstanceJournalRepository,
    private readonly queue: QueueRepository,
  ) {}

  /** An approval step's `timeoutS` came due while it still waits: its `onTimeout` decides. */
  async timedOut(row: QueueRow, step: StepDef): Promise<void> {
    const onTimeout = typeof step.config.onTimeout === 'string' ? step.config.onTimeout : 'fail';
    const done = await this.transitions.fencedForRow(row, async (qr, locked) => {
      const now = Date.now();
      await this.queue.delete(qr, row.id);
      await this.journal.insertLog(
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
      const waiting = (await this.journal.nodeStates(row.tenantId, row.instanceId)).find(
        (s) => s.nodeId === step.id,
      );
      await this.journal.saveNodeState(qr, row.tenantId, row.instanceId, {
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
      await this.transitions.goTo(qr, locked, step, onTimeout, `Approval at ${step.id} timed out`, now);
    });
    if (done) await this.transitions.afterCommit(row, step);
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
    const states = await this.journal.nodeStates(instance.tenantId, instance.id);
    const waiting = states.find((s) => s.nodeId === step.id);
    await this.queue.deleteForInstance(qr, instance.tenantId, instance.id, 'timeout');
    await this.journal.saveNodeState(qr, instance.tenantId, instance.id, {
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
    await this.journal.insertLog(
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
      await this.transitions.continueWith(qr, instance, { next: step.next ?? null }, {}, now);
      return;
    }
    const onReject = typeof step.config.onReject === 'string' ? step.config.onReject : 'fail';
    await this.transitions.goTo(
      qr,
      instance,
      step,
      onReject,
      `Rejected at ${step.id} by ${by.email}${comment ? `: ${comment}` : ''}`,
      now,
    );
  }
}
