import { renderTemplate } from '../definition/templates';
import type { StepHandler } from '../engine/step-types';

/**
 * `approval`: the instance waits at this step until a user with the step's permission (default
 * `approve`) approves or rejects it (engine/approvals.ts); with `timeoutS`, a timeout row is queued.
 */
export const approvalStep: StepHandler = {
  type: 'approval',
  async run({ step, scope }, commit) {
    const message =
      step.config.message === undefined
        ? `Approval needed at ${step.id}`
        : String(renderTemplate(step.config.message, scope));
    const timeoutMs =
      typeof step.config.timeoutS === 'number' ? Math.round(step.config.timeoutS * 1000) : undefined;
    await commit({
      kind: 'wait',
      output: {
        waitingFor: 'approval',
        message,
        permission: typeof step.config.permission === 'string' ? step.config.permission : 'approve',
        ...(timeoutMs ? { timeoutAt: new Date(Date.now() + timeoutMs).toISOString() } : {}),
      },
      timeoutMs,
      log: { level: 'info', message: `Waiting for approval: ${message}` },
    });
  },
};
