import type { StepHandler } from '../engine/step-types';

/** The delay a `delay` step asks for, in ms (`seconds` or `ms`). */
export function delayMsOf(config: Record<string, unknown>): number {
  if (typeof config.ms === 'number') return Math.max(0, Math.round(config.ms));
  if (typeof config.seconds === 'number') return Math.max(0, Math.round(config.seconds * 1000));
  return 0;
}

/**
 * `delay`: the next step is queued with a due time (`wfq_available_at`), never a timer in memory,
 * so a delay survives restarts and runs on whichever instance is free when it is due.
 */
export const delayStep: StepHandler = {
  type: 'delay',
  async run({ step }, commit) {
    const delayMs = delayMsOf(step.config);
    await commit({
      kind: 'advance',
      output: { delayMs, until: new Date(Date.now() + delayMs).toISOString() },
      delayMs,
    });
  },
};
