/**
 * The shapes and limits of `wft_schema` (spec §2.8, D35): step types, step and retry definitions,
 * the config of each step type, and the keys and words each part allows. workflow-schema.ts
 * validates a definition against them.
 */
export const STEP_TYPES = [
  'log',
  'set',
  'condition',
  'delay',
  'entity.create',
  'entity.update',
  'approval',
] as const;
export type StepType = (typeof STEP_TYPES)[number];

export interface RetryPolicy {
  /** Attempts in all, the first included: 1 = no retry. */
  maxAttempts: number;
  /** Wait before the second attempt. */
  backoffMs: number;
  /** Each further wait is the previous one times this. */
  backoffMultiplier: number;
  /** No wait is longer than this. */
  maxBackoffMs: number;
}

export interface StepDef {
  id: string;
  type: StepType;
  /** The step's config, with the defaults of its type filled in (see the *Config interfaces). */
  config: Record<string, unknown>;
  /** The following step; none = the workflow ends after this step. Never set on a condition. */
  next?: string;
  /** Once the retries are exhausted: 'fail' the instance, 'continue' at `next`, or go to a step id. */
  onError?: string;
  /** Overrides `errorHandling.retry` for this step. */
  retry?: RetryPolicy;
}

export interface WorkflowSchema {
  trigger: Record<string, unknown>;
  steps: StepDef[];
  errorHandling: { retry: RetryPolicy; onFailure: 'fail' | 'continue' };
  /** Where an instance starts: the first step's id. */
  firstStep: string;
  byId: ReadonlyMap<string, StepDef>;
}

/** `log`: writes a line to the instance's log. `message` and `data` are templates. */
export interface LogConfig {
  level: 'debug' | 'info' | 'warn' | 'error';
  message: string;
  data?: unknown;
}

/** `set`: stores each rendered value in the instance context (`context.<key>`). */
export interface SetConfig {
  values: Record<string, unknown>;
}

/** `condition`: goes on at `then` when the expression is truthy, else at `else` (none = the end). */
export interface ConditionConfig {
  expression: string;
  then: string;
  else?: string;
}

/** `delay`: waits `seconds` or `ms` (exactly one of them) before going on. */
export interface DelayConfig {
  seconds?: number;
  ms?: number;
}

/** `entity.create`: creates a record of `entityCode` from the rendered values. */
export interface EntityCreateConfig {
  entityCode: string;
  values: Record<string, unknown>;
}

/** `entity.update`: updates record `id` (a template or a positive integer) of `entityCode`. */
export interface EntityUpdateConfig {
  entityCode: string;
  id: string | number;
  values: Record<string, unknown>;
}

/**
 * `approval`: waits for a user holding `permission`; the starter may not approve unless
 * `allowSelfApproval` (D49). On rejection: `onReject` ('fail' by default, 'continue' at `next`, or a
 * step id); after `timeoutS` without a decision: `onTimeout` ('fail' by default, 'approve',
 * 'reject', or a step id).
 */
export interface ApprovalConfig {
  message?: string;
  permission: string;
  allowSelfApproval: boolean;
  timeoutS?: number;
  onTimeout?: string;
  onReject?: string;
}

/** Most steps a workflow may have. */
export const MAX_STEPS = 200;
/** Longest wait of a delay step and longest approval timeout: 30 days. */
export const MAX_WAIT_S = 30 * 24 * 3600;
export const STEP_ID_PATTERN = /^[A-Za-z][A-Za-z0-9_.-]{0,99}$/;
/** Keys of `set` values: names an expression can reach as `context.<key>`. */
export const CONTEXT_KEY_PATTERN = /^[A-Za-z_][A-Za-z0-9_]{0,99}$/;
/** Names that only ever lead to prototypes: never context keys. */
export const RESERVED_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

/** Used when neither the step nor `errorHandling` has a retry policy: one attempt, no retry. */
export const DEFAULT_RETRY: Readonly<RetryPolicy> = {
  maxAttempts: 1,
  backoffMs: 500,
  backoffMultiplier: 2,
  maxBackoffMs: 60_000,
};

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export const ON_ERROR_WORDS = ['fail', 'continue'] as const;
export const ON_TIMEOUT_WORDS = ['fail', 'approve', 'reject'] as const;
export const STEP_KEYS: ReadonlySet<string> = new Set(['id', 'type', 'config', 'next', 'onError', 'retry']);
export const RETRY_KEYS: ReadonlySet<string> = new Set([
  'maxAttempts',
  'backoffMs',
  'backoffMultiplier',
  'maxBackoffMs',
]);
export const ERROR_HANDLING_KEYS: ReadonlySet<string> = new Set(['retry', 'onFailure']);
/** Config keys of each step type; any other key is a mistake (typically a typo). */
export const CONFIG_KEYS: Readonly<Record<StepType, readonly string[]>> = {
  log: ['level', 'message', 'data'],
  set: ['values'],
  condition: ['expression', 'then', 'else'],
  delay: ['seconds', 'ms'],
  'entity.create': ['entityCode', 'values'],
  'entity.update': ['entityCode', 'id', 'values'],
  approval: ['message', 'permission', 'allowSelfApproval', 'timeoutS', 'onTimeout', 'onReject'],
};
