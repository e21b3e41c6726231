import { compileExpression, truthy } from '../definition/expressions';
import type { StepHandler } from '../engine/step-types';

/** `condition`: `expression` over the scope picks `then` or `else` (no `else`: the end). */
export const conditionStep: StepHandler = {
  type: 'condition',
  async run({ step, scope }, commit) {
    const value = compileExpression(String(step.config.expression)).evaluate(scope);
    const result = truthy(value);
    const next = result
      ? String(step.config.then)
      : typeof step.config.else === 'string'
        ? step.config.else
        : null;
    await commit({ kind: 'advance', output: { result, next }, next });
  },
};
