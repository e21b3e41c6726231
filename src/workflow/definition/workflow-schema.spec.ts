import { FieldError, ValidationError } from '../../common/errors/app-error';
import { DEMO_WORKFLOWS } from '../../database/seed/demo-data';
import {
  DEFAULT_RETRY,
  MAX_STEPS,
  parseWorkflowSchema,
  retryPolicyOf,
  STEP_TYPES,
  StepDef,
  WorkflowSchema,
} from './workflow-schema';

/** The problems a definition is refused with (fails the test when it is accepted). */
function problemsOf(raw: unknown): FieldError[] {
  try {
    parseWorkflowSchema(raw);
  } catch (err) {
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).message).toBe('Invalid workflow definition');
    return (err as ValidationError).details as FieldError[];
  }
  throw new Error('expected the definition to be refused');
}

/** A valid two-step workflow, with `step` as its second step. */
function withStep(step: Record<string, unknown>): Record<string, unknown> {
  return {
    steps: [
      { id: 'first', type: 'log', config: { message: 'hi' }, next: 'second' },
      { id: 'second', ...step },
    ],
  };
}

function stepProblems(step: Record<string, unknown>): FieldError[] {
  return problemsOf(withStep(step));
}

describe('parseWorkflowSchema', () => {
  describe('the seeded demo definitions', () => {
    it.each(DEMO_WORKFLOWS.map((w) => [`${w.code} v${w.version}`, w.schema]))(
      '%s is valid',
      (_name, schema) => {
        const parsed = parseWorkflowSchema(schema);
        expect(parsed.firstStep).toBe('start');
        expect(parsed.steps.map((s) => s.id)).toContain('approve_gold');
        expect(parsed.byId.get('check_tier')?.config).toMatchObject({ expression: 'input.tier == "gold"' });
        expect(parsed.errorHandling).toEqual({
          retry: { maxAttempts: 3, backoffMs: 500, backoffMultiplier: 2, maxBackoffMs: 60_000 },
          onFailure: 'fail',
        });
        expect(parsed.trigger).toMatchObject({ type: 'manual', entityCode: 'customers' });
      },
    );

    it('should cover both versions', () => {
      expect(DEMO_WORKFLOWS.filter((w) => w.code === 'customer_onboarding').map((w) => w.version)).toEqual([
        1, 2,
      ]);
    });

    it('should fill in the defaults of each type', () => {
      const parsed = parseWorkflowSchema(DEMO_WORKFLOWS[0].schema);
      expect(parsed.byId.get('approve_gold')?.config).toEqual({
        message: 'Approve onboarding of gold customer {{input.customerId}}',
        permission: 'approve',
        allowSelfApproval: false,
      });
      expect(parsed.byId.get('update_customer')).toMatchObject({ next: 'done', onError: 'failed' });
    });
  });

  it('should accept a JSON text', () => {
    const parsed = parseWorkflowSchema(JSON.stringify(DEMO_WORKFLOWS[1].schema));
    expect(parsed.steps).toHaveLength(9);
    expect(parsed.byId.get('note_approval')?.type).toBe('set');
  });

  it('should drop __proto__ keys of a JSON text', () => {
    const text =
      '{"steps":[{"id":"a","type":"set","config":{"values":{"x":1}}}],"__proto__":{"polluted":true}}';
    const parsed = parseWorkflowSchema(text) as WorkflowSchema & { polluted?: boolean };
    expect(parsed.polluted).toBeUndefined();
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
  });

  it('should not change the given object', () => {
    const raw = withStep({ type: 'approval', config: {} });
    const copy = structuredClone(raw);
    parseWorkflowSchema(raw);
    expect(raw).toEqual(copy);
  });

  it('should default the trigger and the error handling', () => {
    const parsed = parseWorkflowSchema({ steps: [{ id: 'only', type: 'log', config: { message: 'x' } }] });
    expect(parsed.trigger).toEqual({});
    expect(parsed.errorHandling).toEqual({ retry: DEFAULT_RETRY, onFailure: 'fail' });
    expect(parsed.byId.get('only')?.config).toEqual({ level: 'info', message: 'x' });
  });

  it('should accept every step type', () => {
    const parsed = parseWorkflowSchema({
      steps: [
        {
          id: 'log',
          type: 'log',
          config: { level: 'debug', message: 'x', data: { a: '{{input.a}}' } },
          next: 's',
        },
        { id: 's', type: 'set', config: { values: { a: 1, b: '{{input.b}}' } }, next: 'c' },
        { id: 'c', type: 'condition', config: { expression: 'context.a > 0', then: 'd' } },
        { id: 'd', type: 'delay', config: { seconds: 1.5 }, next: 'd2' },
        { id: 'd2', type: 'delay', config: { ms: 200 }, next: 'new' },
        { id: 'new', type: 'entity.create', config: { entityCode: 'orders', values: {} }, next: 'upd' },
        {
          id: 'upd',
          type: 'entity.update',
          config: { entityCode: 'orders', id: 7, values: { a: 1 } },
          next: 'ok',
        },
        {
          id: 'ok',
          type: 'approval',
          config: {
            timeoutS: 3600,
            onTimeout: 'approve',
            onReject: 'log',
            allowSelfApproval: true,
            permission: 'p',
          },
          onError: 'continue',
          retry: { maxAttempts: 2 },
        },
      ],
      errorHandling: { onFailure: 'continue' },
    });
    expect(new Set(parsed.steps.map((s) => s.type))).toEqual(new Set(STEP_TYPES));
    expect(parsed.errorHandling.onFailure).toBe('continue');
  });

  describe('garbage', () => {
    it.each([
      [null, 'must be an object'],
      [42, 'must be an object'],
      [[], 'must be an object'],
      ['{"steps": [', 'is not valid JSON'],
      ['"text"', 'must be an object'],
    ])('%p is refused', (raw, error) => {
      expect(problemsOf(raw)).toEqual([{ field: 'schema', error: expect.stringContaining(error) }]);
    });

    it.each([[{}], [{ steps: [] }], [{ steps: 'x' }]])('%p has no steps', (raw) => {
      expect(problemsOf(raw)).toEqual([{ field: 'steps', error: 'must be a non-empty array of steps' }]);
    });

    it(`should refuse more than ${MAX_STEPS} steps`, () => {
      const steps = Array.from({ length: MAX_STEPS + 1 }, (_, i) => ({
        id: `s${i}`,
        type: 'log',
        config: { message: 'x' },
      }));
      expect(problemsOf({ steps })).toEqual([
        { field: 'steps', error: expect.stringContaining('at most 200') },
      ]);
      expect(parseWorkflowSchema({ steps: steps.slice(0, MAX_STEPS) }).steps).toHaveLength(MAX_STEPS);
    });
  });

  describe('step rules', () => {
    it.each<[string, Record<string, unknown>, string, string]>([
      ['an unknown type', { type: 'email', config: {} }, 'steps[1] (second).type', 'must be one of log, set'],
      ['a missing config', { type: 'log' }, 'steps[1] (second).config', 'must be an object'],
      ['an array config', { type: 'log', config: [] }, 'steps[1] (second).config', 'must be an object'],
      [
        'an unknown step key',
        { type: 'log', config: { message: 'x' }, nxt: 'first' },
        'steps[1] (second).nxt',
        'unknown step key',
      ],
      [
        'a next naming no step',
        { type: 'log', config: { message: 'x' }, next: 'nope' },
        'steps[1] (second).next',
        'names no step',
      ],
      [
        'a next naming itself',
        { type: 'log', config: { message: 'x' }, next: 'second' },
        'steps[1] (second).next',
        'itself',
      ],
      [
        'a non-string next',
        { type: 'log', config: { message: 'x' }, next: 3 },
        'steps[1] (second).next',
        'must be a step id',
      ],
      [
        'an onError naming no step',
        { type: 'log', config: { message: 'x' }, onError: 'retry' },
        'steps[1] (second).onError',
        'or one of fail, continue',
      ],
      [
        'an unknown config key',
        { type: 'log', config: { message: 'x', mesage: 'y' } },
        'steps[1] (second).config.mesage',
        'unknown log config key',
      ],
      // log
      [
        'a log without message',
        { type: 'log', config: {} },
        'steps[1] (second).config.message',
        'non-empty string',
      ],
      [
        'a bad log level',
        { type: 'log', config: { message: 'x', level: 'fatal' } },
        'steps[1] (second).config.level',
        'debug, info, warn, error',
      ],
      [
        'a bad message template',
        { type: 'log', config: { message: 'x {{ 1 + }}' } },
        'steps[1] (second).config.message',
        '{{ 1 + }}',
      ],
      [
        'a bad data template',
        { type: 'log', config: { message: 'x', data: { a: ['{{ nope }}'] } } },
        'steps[1] (second).config.data.a[0]',
        'unknown name "nope"',
      ],
      // set
      [
        'a set without values',
        { type: 'set', config: {} },
        'steps[1] (second).config.values',
        'must be an object',
      ],
      [
        'a set with empty values',
        { type: 'set', config: { values: {} } },
        'steps[1] (second).config.values',
        'at least one',
      ],
      [
        'a bad context key',
        { type: 'set', config: { values: { 'a-b': 1 } } },
        'steps[1] (second).config.values.a-b',
        'context keys',
      ],
      [
        'a bad set template',
        { type: 'set', config: { values: { a: '{{input.}}' } } },
        'steps[1] (second).config.values.a',
        '{{input.}}',
      ],
      // condition
      [
        'a condition without expression',
        { type: 'condition', config: { then: 'first' } },
        'steps[1] (second).config.expression',
        'non-empty string',
      ],
      [
        'a condition with a bad expression',
        { type: 'condition', config: { expression: 'input.a ==', then: 'first' } },
        'steps[1] (second).config.expression',
        'invalid expression',
      ],
      [
        'a condition calling a function',
        { type: 'condition', config: { expression: 'input.a()', then: 'first' } },
        'steps[1] (second).config.expression',
        'function calls',
      ],
      [
        'a condition without then',
        { type: 'condition', config: { expression: 'true' } },
        'steps[1] (second).config.then',
        'must name a step',
      ],
      [
        'a condition with a bad else',
        { type: 'condition', config: { expression: 'true', then: 'first', else: 'x' } },
        'steps[1] (second).config.else',
        'names no step',
      ],
      [
        'a condition with next',
        { type: 'condition', config: { expression: 'true', then: 'first' }, next: 'first' },
        'steps[1] (second).next',
        'not next',
      ],
      // delay
      [
        'a delay without duration',
        { type: 'delay', config: {} },
        'steps[1] (second).config.seconds',
        'exactly one',
      ],
      [
        'a delay with both',
        { type: 'delay', config: { seconds: 1, ms: 1000 } },
        'steps[1] (second).config.seconds',
        'exactly one',
      ],
      [
        'a zero delay',
        { type: 'delay', config: { seconds: 0 } },
        'steps[1] (second).config.seconds',
        'greater than 0',
      ],
      [
        'a too long delay',
        { type: 'delay', config: { seconds: 2_592_001 } },
        'steps[1] (second).config.seconds',
        'at most 2592000',
      ],
      [
        'a text delay',
        { type: 'delay', config: { seconds: '10' } },
        'steps[1] (second).config.seconds',
        'must be a number',
      ],
      [
        'a too long ms delay',
        { type: 'delay', config: { ms: 2_592_000_001 } },
        'steps[1] (second).config.ms',
        'at most',
      ],
      // entity.create
      [
        'a create without entityCode',
        { type: 'entity.create', config: { values: {} } },
        'steps[1] (second).config.entityCode',
        'non-empty string',
      ],
      [
        'a create without values',
        { type: 'entity.create', config: { entityCode: 'x' } },
        'steps[1] (second).config.values',
        'must be an object',
      ],
      // entity.update
      [
        'an update without id',
        { type: 'entity.update', config: { entityCode: 'x', values: { a: 1 } } },
        'steps[1] (second).config.id',
        'positive integer or a template',
      ],
      [
        'an update with id 0',
        { type: 'entity.update', config: { entityCode: 'x', id: 0, values: { a: 1 } } },
        'steps[1] (second).config.id',
        'positive integer',
      ],
      [
        'an update with a text id',
        { type: 'entity.update', config: { entityCode: 'x', id: 'abc', values: { a: 1 } } },
        'steps[1] (second).config.id',
        'template',
      ],
      [
        'an update with a bad id template',
        { type: 'entity.update', config: { entityCode: 'x', id: '{{ input. }}', values: { a: 1 } } },
        'steps[1] (second).config.id',
        '{{ input. }}',
      ],
      [
        'an update with empty values',
        { type: 'entity.update', config: { entityCode: 'x', id: 1, values: {} } },
        'steps[1] (second).config.values',
        'at least one',
      ],
      // approval
      [
        'an approval with a zero timeout',
        { type: 'approval', config: { timeoutS: 0 } },
        'steps[1] (second).config.timeoutS',
        'greater than 0',
      ],
      [
        'an approval with a long timeout',
        { type: 'approval', config: { timeoutS: 2_592_001 } },
        'steps[1] (second).config.timeoutS',
        '30 days',
      ],
      [
        'an approval with onTimeout but no timeout',
        { type: 'approval', config: { onTimeout: 'fail' } },
        'steps[1] (second).config.onTimeout',
        'needs timeoutS',
      ],
      [
        'an approval with a bad onTimeout',
        { type: 'approval', config: { timeoutS: 5, onTimeout: 'continue' } },
        'steps[1] (second).config.onTimeout',
        'fail, approve, reject',
      ],
      [
        'an approval with a bad onReject',
        { type: 'approval', config: { onReject: 'approve' } },
        'steps[1] (second).config.onReject',
        'fail, continue',
      ],
      [
        'an approval with a bad permission',
        { type: 'approval', config: { permission: '' } },
        'steps[1] (second).config.permission',
        'non-empty string',
      ],
      [
        'an approval with a text allowSelfApproval',
        { type: 'approval', config: { allowSelfApproval: 'yes' } },
        'steps[1] (second).config.allowSelfApproval',
        'true or false',
      ],
      [
        'an approval with a bad message',
        { type: 'approval', config: { message: 'ok {{' } },
        'steps[1] (second).config.message',
        'without a closing',
      ],
      // retry
      [
        'a retry that is not an object',
        { type: 'log', config: { message: 'x' }, retry: 3 },
        'steps[1] (second).retry',
        'must be an object',
      ],
      [
        'a retry without maxAttempts',
        { type: 'log', config: { message: 'x' }, retry: {} },
        'steps[1] (second).retry.maxAttempts',
        '1 to 10',
      ],
      [
        'too many attempts',
        { type: 'log', config: { message: 'x' }, retry: { maxAttempts: 11 } },
        'steps[1] (second).retry.maxAttempts',
        '1 to 10',
      ],
      [
        'fractional attempts',
        { type: 'log', config: { message: 'x' }, retry: { maxAttempts: 1.5 } },
        'steps[1] (second).retry.maxAttempts',
        'integer',
      ],
      [
        'a negative backoff',
        { type: 'log', config: { message: 'x' }, retry: { maxAttempts: 2, backoffMs: -1 } },
        'steps[1] (second).retry.backoffMs',
        '0 to 3600000',
      ],
      [
        'a long backoff',
        { type: 'log', config: { message: 'x' }, retry: { maxAttempts: 2, backoffMs: 3_600_001 } },
        'steps[1] (second).retry.backoffMs',
        '0 to 3600000',
      ],
      [
        'a small multiplier',
        { type: 'log', config: { message: 'x' }, retry: { maxAttempts: 2, backoffMultiplier: 0.5 } },
        'steps[1] (second).retry.backoffMultiplier',
        '1 to 10',
      ],
      [
        'a bad maxBackoffMs',
        { type: 'log', config: { message: 'x' }, retry: { maxAttempts: 2, maxBackoffMs: 'x' } },
        'steps[1] (second).retry.maxBackoffMs',
        'integer',
      ],
      [
        'an unknown retry key',
        { type: 'log', config: { message: 'x' }, retry: { maxAttempts: 2, jitter: true } },
        'steps[1] (second).retry.jitter',
        'unknown retry key',
      ],
    ])('%s is refused', (_name, step, field, error) => {
      expect(stepProblems(step)).toEqual([{ field, error: expect.stringContaining(error) }]);
    });

    it('should refuse duplicate ids, naming both places', () => {
      const problems = problemsOf({
        steps: [
          { id: 'a', type: 'log', config: { message: 'x' } },
          { id: 'a', type: 'log', config: { message: 'y' } },
        ],
      });
      expect(problems).toEqual([{ field: 'steps[1] (a).id', error: 'duplicate step id (also steps[0])' }]);
    });

    it.each([
      [{ type: 'log', config: { message: 'x' } }],
      [{ id: '9lives', type: 'log', config: { message: 'x' } }],
      [{ id: 'a'.repeat(101), type: 'log', config: { message: 'x' } }],
      [{ id: 'a b', type: 'log', config: { message: 'x' } }],
    ])('should refuse the id of %p', (step) => {
      expect(problemsOf({ steps: [step] })).toEqual([
        { field: 'steps[0].id', error: expect.stringContaining('must be a string of 1 to 100') },
      ]);
    });

    it.each(['constructor', 'prototype', '__proto__'])('should refuse the context key %s', (key) => {
      const values: Record<string, unknown> = JSON.parse(`{"${key}": 1}`);
      expect(stepProblems({ type: 'set', config: { values } })).toEqual([
        { field: `steps[1] (second).config.values.${key}`, error: 'is a reserved name' },
      ]);
    });

    it('should refuse a step that is not an object', () => {
      expect(problemsOf({ steps: ['log'] })).toEqual([
        { field: 'steps[0]', error: expect.stringContaining('must be an object') },
      ]);
    });

    it('should accept forward references and the onError words', () => {
      const parsed = parseWorkflowSchema({
        steps: [
          { id: 'a', type: 'log', config: { message: 'x' }, next: 'c', onError: 'fail' },
          { id: 'b', type: 'log', config: { message: 'x' }, onError: 'continue' },
          { id: 'c', type: 'log', config: { message: 'x' }, onError: 'b' },
        ],
      });
      expect(parsed.steps.map((s) => [s.next, s.onError])).toEqual([
        ['c', 'fail'],
        [undefined, 'continue'],
        [undefined, 'b'],
      ]);
    });

    it('should accept an update id given as digits', () => {
      expect(() =>
        parseWorkflowSchema(
          withStep({ type: 'entity.update', config: { entityCode: 'x', id: '12', values: { a: 1 } } }),
        ),
      ).not.toThrow();
    });
  });

  describe('top-level rules', () => {
    const steps = [{ id: 'a', type: 'log', config: { message: 'x' } }];

    it.each<[unknown, string, string]>([['manual', 'trigger', 'must be an object']])(
      'trigger %p is refused',
      (trigger, field, error) => {
        expect(problemsOf({ trigger, steps })).toEqual([{ field, error }]);
      },
    );

    it.each<[unknown, string, string]>([
      ['x', 'errorHandling', 'must be an object'],
      [{ onFailure: 'retry' }, 'errorHandling.onFailure', 'must be fail or continue'],
      [{ retries: 3 }, 'errorHandling.retries', 'unknown key'],
      [{ retry: { maxAttempts: 0 } }, 'errorHandling.retry.maxAttempts', 'must be an integer from 1 to 10'],
    ])('errorHandling %p is refused', (errorHandling, field, error) => {
      expect(problemsOf({ errorHandling, steps })).toEqual([
        { field, error: expect.stringContaining(error) },
      ]);
    });

    it('should ignore other top-level keys', () => {
      expect(parseWorkflowSchema({ steps, actions: [] }).steps).toHaveLength(1);
    });
  });

  it('should report every problem together, each naming its step', () => {
    const problems = problemsOf({
      trigger: 'x',
      steps: [
        { id: 'start', type: 'log', config: { message: '' }, next: 'missing' },
        { id: 'check', type: 'condition', config: { expression: '1 +', then: 'start', else: 'nowhere' } },
        { id: 'approve_gold', type: 'approval', config: { timeoutS: -5 }, retry: { maxAttempts: 99 } },
        { id: 'start', type: 'wait', config: {} },
      ],
      errorHandling: { onFailure: 'ignore' },
    });
    expect(problems).toEqual(
      expect.arrayContaining([
        { field: 'trigger', error: 'must be an object' },
        { field: 'errorHandling.onFailure', error: 'must be fail or continue' },
        { field: 'steps[0] (start).config.message', error: 'must be a non-empty string' },
        { field: 'steps[0] (start).next', error: expect.stringContaining('names no step') },
        { field: 'steps[1] (check).config.expression', error: expect.stringContaining('invalid expression') },
        { field: 'steps[1] (check).config.else', error: expect.stringContaining('names no step') },
        {
          field: 'steps[2] (approve_gold).config.timeoutS',
          error: expect.stringContaining('greater than 0'),
        },
        { field: 'steps[2] (approve_gold).retry.maxAttempts', error: 'must be an integer from 1 to 10' },
        { field: 'steps[3] (start).id', error: 'duplicate step id (also steps[0])' },
        { field: 'steps[3] (start).type', error: expect.stringContaining('must be one of') },
      ]),
    );
    expect(problems).toHaveLength(10);
  });
});

describe('retryPolicyOf', () => {
  const schema = parseWorkflowSchema({
    steps: [
      {
        id: 'own',
        type: 'log',
        config: { message: 'x' },
        retry: { maxAttempts: 5, backoffMs: 100_000 },
        next: 'shared',
      },
      { id: 'shared', type: 'log', config: { message: 'x' } },
    ],
    errorHandling: { retry: { maxAttempts: 3, backoffMs: 500, backoffMultiplier: 2 } },
  });
  const step = (id: string): StepDef => schema.byId.get(id) as StepDef;

  it("should take the step's own policy, with defaults filled in", () => {
    expect(retryPolicyOf(schema, step('own'))).toEqual({
      maxAttempts: 5,
      backoffMs: 100_000,
      backoffMultiplier: 2,
      maxBackoffMs: 100_000,
    });
  });

  it("should fall back to errorHandling's policy", () => {
    expect(retryPolicyOf(schema, step('shared'))).toEqual({
      maxAttempts: 3,
      backoffMs: 500,
      backoffMultiplier: 2,
      maxBackoffMs: 60_000,
    });
  });

  it('should default to a single attempt', () => {
    const bare = parseWorkflowSchema({ steps: [{ id: 'a', type: 'log', config: { message: 'x' } }] });
    expect(retryPolicyOf(bare, bare.steps[0])).toEqual({
      maxAttempts: 1,
      backoffMs: 500,
      backoffMultiplier: 2,
      maxBackoffMs: 60_000,
    });
  });
});
