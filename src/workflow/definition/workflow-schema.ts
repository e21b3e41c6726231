import { errorMessage } from '../../common/errors/error-message';
import { FieldError, ValidationError } from '../../common/errors/app-error';
import { expressionError } from './expressions';
import { templateProblems } from './templates';
import {
  STEP_TYPES,
  type StepType,
  type RetryPolicy,
  type StepDef,
  type WorkflowSchema,
  MAX_STEPS,
  MAX_WAIT_S,
  STEP_ID_PATTERN,
  CONTEXT_KEY_PATTERN,
  RESERVED_KEYS,
  DEFAULT_RETRY,
  LOG_LEVELS,
  ON_ERROR_WORDS,
  ON_TIMEOUT_WORDS,
  STEP_KEYS,
  RETRY_KEYS,
  ERROR_HANDLING_KEYS,
  CONFIG_KEYS,
} from './schema-types';

/**
 * `wft_schema` (spec §2.8, D35, D49): parsed and validated in one pass that collects every problem,
 * each naming the step it belongs to, e.g. `steps[3] (approve_gold).config.timeoutS`.
 *
 * ```json
 * { "trigger": {…}, "steps": [{ "id", "type", "config", "next"?, "onError"?, "retry"? }],
 *   "errorHandling": { "retry"?: {…}, "onFailure"?: "fail" | "continue" } }
 * ```
 * The first step is where an instance starts; a step without `next` ends the workflow (a condition
 * goes on at `then` / `else` instead). Strings in a step's config may hold `{{ expression }}`
 * templates (see expressions.ts); their syntax is checked here.
 */

type Problems = FieldError[];

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isStepType(value: unknown): value is StepType {
  return (STEP_TYPES as readonly unknown[]).includes(value);
}

function isNumberIn(value: unknown, min: number, max: number): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value >= min && value <= max;
}

/** How a step is named in problems: `steps[3] (approve_gold)`, or `steps[3]` while its id is unusable. */
function stepLabel(index: number, raw: unknown): string {
  const id = isObject(raw) ? raw.id : undefined;
  return typeof id === 'string' && STEP_ID_PATTERN.test(id) ? `steps[${index}] (${id})` : `steps[${index}]`;
}

/** Template problems of a config value, reported under `field` (and the path below it). */
function checkTemplates(value: unknown, field: string, problems: Problems): void {
  for (const p of templateProblems(value))
    problems.push({
      field: p.path === '' ? field : `${field}${p.path.startsWith('[') ? '' : '.'}${p.path}`,
      error: p.error,
    });
}

/**
 * A retry policy: `maxAttempts` an integer 1..10 (required), `backoffMs` an integer 0..3,600,000,
 * `backoffMultiplier` 1..10, `maxBackoffMs` an integer 0..86,400,000; missing ones take the defaults,
 * and the default `maxBackoffMs` is never below `backoffMs`.
 */
function parseRetry(raw: unknown, field: string, problems: Problems): RetryPolicy | undefined {
  if (!isObject(raw)) {
    problems.push({
      field,
      error: 'must be an object {maxAttempts, backoffMs?, backoffMultiplier?, maxBackoffMs?}',
    });
    return undefined;
  }
  const before = problems.length;
  for (const key of Object.keys(raw))
    if (!RETRY_KEYS.has(key)) problems.push({ field: `${field}.${key}`, error: 'unknown retry key' });
  const {
    maxAttempts,
    backoffMs = DEFAULT_RETRY.backoffMs,
    backoffMultiplier = DEFAULT_RETRY.backoffMultiplier,
  } = raw;
  if (!Number.isInteger(maxAttempts) || !isNumberIn(maxAttempts, 1, 10))
    problems.push({ field: `${field}.maxAttempts`, error: 'must be an integer from 1 to 10' });
  if (!Number.isInteger(backoffMs) || !isNumberIn(backoffMs, 0, 3_600_000))
    problems.push({ field: `${field}.backoffMs`, error: 'must be an integer from 0 to 3600000' });
  if (!isNumberIn(backoffMultiplier, 1, 10))
    problems.push({ field: `${field}.backoffMultiplier`, error: 'must be a number from 1 to 10' });
  const maxBackoffMs =
    raw.maxBackoffMs ?? (typeof backoffMs === 'number' ? Math.max(DEFAULT_RETRY.maxBackoffMs, backoffMs) : 0);
  if (!Number.isInteger(maxBackoffMs) || !isNumberIn(maxBackoffMs, 0, 86_400_000))
    problems.push({ field: `${field}.maxBackoffMs`, error: 'must be an integer from 0 to 86400000' });
  if (problems.length > before) return undefined;
  return {
    maxAttempts: maxAttempts as number,
    backoffMs: backoffMs as number,
    backoffMultiplier: backoffMultiplier as number,
    maxBackoffMs: maxBackoffMs as number,
  };
}

/** Checks of one step's config, by type; returns the config with the type's defaults filled in. */
function parseConfig(
  type: StepType,
  config: Record<string, unknown>,
  at: string,
  problems: Problems,
): Record<string, unknown> {
  const add = (key: string, error: string) => problems.push({ field: `${at}.${key}`, error });
  const allowed = CONFIG_KEYS[type];
  for (const key of Object.keys(config))
    if (!allowed.includes(key)) add(key, `unknown ${type} config key (allowed: ${allowed.join(', ')})`);
  const text = (key: string, required: boolean) => {
    const value = config[key];
    if (value === undefined && !required) return;
    if (typeof value !== 'string' || value.trim() === '') add(key, 'must be a non-empty string');
    else checkTemplates(value, `${at}.${key}`, problems);
  };
  const values = (nonEmpty: boolean) => {
    const value = config.values;
    if (!isObject(value)) add('values', 'must be an object');
    else if (nonEmpty && Object.keys(value).length === 0) add('values', 'must have at least one value');
    else checkTemplates(value, `${at}.values`, problems);
  };
  const entityCode = () => {
    const code = config.entityCode;
    if (typeof code !== 'string' || code.trim() === '' || code.length > 100)
      add('entityCode', 'must be a non-empty string of at most 100 characters');
  };
  switch (type) {
    case 'log': {
      const level = config.level ?? 'info';
      if (!(LOG_LEVELS as readonly unknown[]).includes(level))
        add('level', `must be one of ${LOG_LEVELS.join(', ')}`);
      text('message', true);
      if (config.data !== undefined) checkTemplates(config.data, `${at}.data`, problems);
      return { ...config, level };
    }
    case 'set': {
      values(true);
      if (isObject(config.values))
        for (const key of Object.keys(config.values))
          if (!CONTEXT_KEY_PATTERN.test(key))
            add(`values.${key}`, 'context keys are letters, digits and _ (not starting with a digit)');
          else if (RESERVED_KEYS.has(key)) add(`values.${key}`, 'is a reserved name');
      return { ...config };
    }
    case 'condition': {
      const { expression } = config;
      if (typeof expression !== 'string' || expression.trim() === '')
        add('expression', 'must be a non-empty string');
      else {
        const error = expressionError(expression);
        if (error) add('expression', `invalid expression: ${error}`);
      }
      return { ...config };
    }
    case 'delay': {
      const { seconds, ms } = config;
      if ((seconds === undefined) === (ms === undefined)) add('seconds', 'give exactly one of seconds or ms');
      else if (seconds !== undefined && (!isNumberIn(seconds, 0, MAX_WAIT_S) || seconds === 0))
        add('seconds', `must be a number greater than 0 and at most ${MAX_WAIT_S}`);
      else if (ms !== undefined && (!isNumberIn(ms, 0, MAX_WAIT_S * 1000) || ms === 0))
        add('ms', `must be a number greater than 0 and at most ${MAX_WAIT_S * 1000}`);
      return { ...config };
    }
    case 'entity.create':
      entityCode();
      values(false);
      return { ...config };
    case 'entity.update': {
      entityCode();
      const { id } = config;
      if (typeof id === 'number') {
        if (!Number.isSafeInteger(id) || id < 1) add('id', 'must be a positive integer or a template');
      } else if (typeof id !== 'string' || !(id.includes('{{') || /^[1-9][0-9]{0,15}$/.test(id))) {
        add('id', 'must be a positive integer or a template such as "{{input.id}}"');
      } else checkTemplates(id, `${at}.id`, problems);
      values(true);
      return { ...config };
    }
    case 'approval': {
      text('message', false);
      const permission = config.permission ?? 'approve';
      if (typeof permission !== 'string' || permission.trim() === '')
        add('permission', 'must be a non-empty string');
      const allowSelfApproval = config.allowSelfApproval ?? false;
      if (typeof allowSelfApproval !== 'boolean') add('allowSelfApproval', 'must be true or false');
      const { timeoutS } = config;
      if (timeoutS !== undefined && (!isNumberIn(timeoutS, 0, MAX_WAIT_S) || timeoutS === 0))
        add('timeoutS', `must be a number greater than 0 and at most ${MAX_WAIT_S} (30 days)`);
      if (config.onTimeout !== undefined && timeoutS === undefined) add('onTimeout', 'needs timeoutS');
      return { ...config, permission, allowSelfApproval };
    }
  }
}

/** A reference to another step, checked once every id is known. */
interface Reference {
  field: string;
  from: string;
  target: unknown;
  /** Words allowed instead of a step id. */
  words: readonly string[];
  required: boolean;
}

function checkReference(ref: Reference, ids: ReadonlySet<string>, problems: Problems): void {
  const { field, from, target, words, required } = ref;
  if (target === undefined) {
    if (required) problems.push({ field, error: 'must name a step' });
    return;
  }
  const choices = words.length > 0 ? ` (or one of ${words.join(', ')})` : '';
  if (typeof target !== 'string' || target === '')
    problems.push({ field, error: `must be a step id${choices}` });
  else if (words.includes(target)) return;
  else if (!ids.has(target))
    problems.push({ field, error: `names no step of this workflow: "${target}"${choices}` });
  else if (target === from) problems.push({ field, error: 'must not name the step itself' });
}

/** The schema value as an object: a JSON text is parsed (prototype keys dropped), an object taken as is. */
function schemaObject(raw: unknown, problems: Problems): Record<string, unknown> | undefined {
  let value = raw;
  if (typeof raw === 'string') {
    try {
      value = JSON.parse(raw, (key, v: unknown) => (key === '__proto__' ? undefined : v));
    } catch (err) {
      problems.push({
        field: 'schema',
        error: `is not valid JSON: ${errorMessage(err)}`,
      });
      return undefined;
    }
  }
  if (!isObject(value)) {
    problems.push({ field: 'schema', error: 'must be an object {trigger?, steps, errorHandling?}' });
    return undefined;
  }
  return value;
}

function parseErrorHandling(raw: unknown, problems: Problems): WorkflowSchema['errorHandling'] {
  const fallback: WorkflowSchema['errorHandling'] = { retry: { ...DEFAULT_RETRY }, onFailure: 'fail' };
  if (raw === undefined) return fallback;
  if (!isObject(raw)) {
    problems.push({ field: 'errorHandling', error: 'must be an object {retry?, onFailure?}' });
    return fallback;
  }
  for (const key of Object.keys(raw))
    if (!ERROR_HANDLING_KEYS.has(key)) problems.push({ field: `errorHandling.${key}`, error: 'unknown key' });
  const retry =
    raw.retry === undefined ? fallback.retry : parseRetry(raw.retry, 'errorHandling.retry', problems);
  const onFailure = raw.onFailure ?? 'fail';
  if (onFailure !== 'fail' && onFailure !== 'continue')
    problems.push({ field: 'errorHandling.onFailure', error: 'must be fail or continue' });
  return { retry: retry ?? fallback.retry, onFailure: onFailure === 'continue' ? 'continue' : 'fail' };
}

/** One step checked; its references are queued for the second pass. */
function parseStep(raw: unknown, index: number, problems: Problems, refs: Reference[]): StepDef | undefined {
  const label = stepLabel(index, raw);
  if (!isObject(raw)) {
    problems.push({ field: label, error: 'must be an object {id, type, config, next?, onError?, retry?}' });
    return undefined;
  }
  const before = problems.length;
  for (const key of Object.keys(raw))
    if (!STEP_KEYS.has(key)) problems.push({ field: `${label}.${key}`, error: 'unknown step key' });
  const { id, type, config } = raw;
  const validId = typeof id === 'string' && STEP_ID_PATTERN.test(id);
  if (!validId)
    problems.push({
      field: `${label}.id`,
      error: 'must be a string of 1 to 100 letters, digits, _ . - starting with a letter',
    });
  if (!isStepType(type))
    problems.push({ field: `${label}.type`, error: `must be one of ${STEP_TYPES.join(', ')}` });
  if (!isObject(config)) problems.push({ field: `${label}.config`, error: 'must be an object' });
  const parsedConfig =
    isStepType(type) && isObject(config) ? parseConfig(type, config, `${label}.config`, problems) : {};
  const from = validId ? id : '';
  const ref = (field: string, target: unknown, words: readonly string[], required = false) =>
    refs.push({ field: `${label}.${field}`, from, target, words, required });
  if (type === 'condition') {
    if (raw.next !== undefined)
      problems.push({ field: `${label}.next`, error: 'a condition goes on at then/else, not next' });
    if (isObject(config)) {
      ref('config.then', config.then, [], true);
      ref('config.else', config.else, []);
    }
  } else ref('next', raw.next, []);
  ref('onError', raw.onError, ON_ERROR_WORDS);
  if (type === 'approval' && isObject(config)) {
    ref('config.onReject', config.onReject, ON_ERROR_WORDS);
    ref('config.onTimeout', config.onTimeout, ON_TIMEOUT_WORDS);
  }
  const retry = raw.retry === undefined ? undefined : parseRetry(raw.retry, `${label}.retry`, problems);
  if (problems.length > before || !validId || !isStepType(type)) return undefined;
  const step: StepDef = { id, type, config: parsedConfig };
  if (typeof raw.next === 'string') step.next = raw.next;
  if (typeof raw.onError === 'string') step.onError = raw.onError;
  if (retry) step.retry = retry;
  return step;
}

/**
 * The validated workflow definition. `raw` is the `wft_schema` value: a JSON text or an object.
 * Rules (all problems are collected and reported together):
 * - `steps`: 1 to {@link MAX_STEPS} objects with only the keys id, type, config, next, onError, retry;
 * - `id` matches {@link STEP_ID_PATTERN} and is unique; `type` is one of {@link STEP_TYPES};
 *   `config` is an object with only its type's keys, checked per type (see the *Config interfaces);
 * - `next`, a condition's `then` / `else`, `onError` (unless 'fail' / 'continue'), an approval's
 *   `onReject` (unless 'fail' / 'continue') and `onTimeout` (unless 'fail' / 'approve' / 'reject')
 *   name existing steps other than the step itself; a condition has no `next`;
 * - retry policies (a step's `retry`, `errorHandling.retry`): see {@link parseRetry};
 *   `errorHandling.onFailure` is 'fail' (default) or 'continue';
 * - every `{{…}}` in a config string is a valid expression; a condition's expression compiles.
 * `trigger` is optional (an object; its content is the trigger's business); other top-level keys
 * (e.g. `actions`, spec §2.8) are ignored.
 * Throws `ValidationError('Invalid workflow definition', [{field, error}])`.
 */
export function parseWorkflowSchema(raw: unknown): WorkflowSchema {
  const problems: Problems = [];
  const fail = () => new ValidationError('Invalid workflow definition', problems);
  const schema = schemaObject(raw, problems);
  if (!schema) throw fail();

  const trigger = schema.trigger ?? {};
  if (!isObject(trigger)) problems.push({ field: 'trigger', error: 'must be an object' });
  const errorHandling = parseErrorHandling(schema.errorHandling, problems);

  const rawSteps = schema.steps;
  if (!Array.isArray(rawSteps) || rawSteps.length === 0) {
    problems.push({ field: 'steps', error: 'must be a non-empty array of steps' });
    throw fail();
  }
  if (rawSteps.length > MAX_STEPS) {
    problems.push({ field: 'steps', error: `must have at most ${MAX_STEPS} steps (has ${rawSteps.length})` });
    throw fail();
  }

  const refs: Reference[] = [];
  const steps: StepDef[] = [];
  const firstIndex = new Map<string, number>();
  (rawSteps as unknown[]).forEach((rawStep, index) => {
    const id = isObject(rawStep) ? rawStep.id : undefined;
    if (typeof id === 'string' && STEP_ID_PATTERN.test(id)) {
      const seen = firstIndex.get(id);
      if (seen === undefined) firstIndex.set(id, index);
      else
        problems.push({
          field: `${stepLabel(index, rawStep)}.id`,
          error: `duplicate step id (also steps[${seen}])`,
        });
    }
    const step = parseStep(rawStep, index, problems, refs);
    if (step) steps.push(step);
  });
  const ids = new Set(firstIndex.keys());
  for (const ref of refs) checkReference(ref, ids, problems);
  if (problems.length > 0) throw fail();

  return {
    trigger: isObject(trigger) ? trigger : {},
    steps,
    errorHandling,
    firstStep: steps[0].id,
    byId: new Map(steps.map((s) => [s.id, s])),
  };
}

/** The retry policy that applies to a step: its own, else `errorHandling.retry` (itself defaulted). */
export function retryPolicyOf(schema: WorkflowSchema, step: StepDef): RetryPolicy {
  return step.retry ?? schema.errorHandling.retry;
}

/** The shapes and limits, for the rest of the engine. */
export * from './schema-types';
