import { renderTemplate } from '../definition/templates';
import type { StepHandler, StepLogEntry } from '../engine/step-types';

const LEVELS = new Set(['debug', 'info', 'warn', 'error']);

/** `log`: a line in the instance's log (wft_logs), message and data rendered from the scope. */
export const logStep: StepHandler = {
  type: 'log',
  async run({ step, scope }, commit) {
    const level = LEVELS.has(String(step.config.level))
      ? (step.config.level as StepLogEntry['level'])
      : 'info';
    const rendered = renderTemplate(step.config.message ?? '', scope);
    const message = typeof rendered === 'string' ? rendered : JSON.stringify(rendered ?? '');
    const data = step.config.data === undefined ? undefined : renderTemplate(step.config.data, scope);
    await commit({ kind: 'advance', output: { level, message }, log: { level, message, data } });
  },
};
