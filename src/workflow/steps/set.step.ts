import { renderTemplate } from '../definition/templates';
import type { StepHandler } from '../engine/step-types';

/** `set`: values (templates and expressions over the scope) merged into the context. */
export const setStep: StepHandler = {
  type: 'set',
  async run({ step, scope }, commit) {
    const values = renderTemplate(step.config.values ?? {}, scope) as Record<string, unknown>;
    await commit({ kind: 'advance', output: values, contextValues: values });
  },
};
