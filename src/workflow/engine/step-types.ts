import { isTransient } from '../../common/errors/error-codes';
import type { WriteTx } from '../../records/write-tx';
import type { ExpressionScope } from '../definition/expressions';
import type { WorkflowDefinition } from '../definition/workflow-definitions.service';
import type { StepDef, StepType } from '../definition/workflow-schema';
import type { InstanceRow } from '../instance/instances.repository';

/** One delivery of a queued step to its handler. */
export interface StepRun {
  definition: WorkflowDefinition;
  step: StepDef;
  instance: InstanceRow;
  /** input, context (the values `set` steps wrote), steps (earlier outputs), record. */
  scope: ExpressionScope;
  attempt: number;
}

export interface StepLogEntry {
  level: 'debug' | 'info' | 'warn' | 'error';
  message: string;
  data?: unknown;
}

/**
 * What a step did. `advance`: go on to `next` (undefined = the step's own `next`; null = the end),
 * after `delayMs` when given, with `contextValues` merged into the context and `record` as the
 * record later steps read. `wait`: stop at this step until a user decides (approval), with an
 * optional timeout.
 */
export type StepOutcome =
  | {
      kind: 'advance';
      output?: unknown;
      next?: string | null;
      delayMs?: number;
      contextValues?: Record<string, unknown>;
      record?: Record<string, unknown>;
      log?: StepLogEntry;
    }
  | { kind: 'wait'; output: unknown; timeoutMs?: number; log?: StepLogEntry };

/**
 * Commits a step's outcome, fenced (engine/step-runner.ts). A step that writes a record passes its
 * write's transaction, so that the record, the node state and the idempotency key commit together
 * (D49); the others let the runner open one.
 */
export type CommitStep = (outcome: StepOutcome, tx?: WriteTx) => Promise<void>;

export interface StepHandler {
  readonly type: StepType;
  run(run: StepRun, commit: CommitStep): Promise<void>;
}

/**
 * A step failure that retrying cannot mend (a bad value, a missing record, no permission, restricting
 * dependents, a taken value): decided by the error's code and reason, never by an HTTP status.
 */
export function isPermanent(err: unknown): boolean {
  return !isTransient(err);
}
