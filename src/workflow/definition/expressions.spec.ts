import {
  compileExpression,
  ExpressionEvaluationError,
  expressionError,
  ExpressionScope,
  MAX_EXPRESSION_LENGTH,
  truthy,
} from './expressions';
import { renderTemplate, templateErrors, templateProblems } from './templates';

const scope: ExpressionScope = {
  input: { customerId: 42, tier: 'gold', amount: 12.5, tags: ['a', 'b'], nested: { deep: { value: 7 } } },
  context: { note: 'hello', empty: null, flag: false },
  steps: { 'load-customer': { name: 'Ada' } },
  record: { id: 9 },
};

const run = (source: string, s: ExpressionScope = scope): unknown => compileExpression(source).evaluate(s);

describe('compileExpression', () => {
  it.each([
    ['1 + 2 * 3', 7],
    ['(1 + 2) * 3', 9],
    ['10 / 4', 2.5],
    ['10 % 4', 2],
    ['2 ** 3', 8],
    ['-input.customerId', -42],
    ['input.amount * 2', 25],
    ['"a" + "b"', 'ab'],
    ['"id " + input.customerId', 'id 42'],
    ['input.tier == "gold"', true],
    ['input.tier != "gold"', false],
    ['input.customerId > 40 && input.customerId <= 42', true],
    ['input.customerId < 10 || input.tier == "gold"', true],
    ['!context.flag', true],
    ['"b" > "a"', true],
    ['input.tier > 1', false],
    ['input.customerId == "42"', false],
    ['input.missing == null', true],
    ['input.missing === null', false],
    ['context.empty ?? "fallback"', 'fallback'],
    ['context.note || "fallback"', 'hello'],
    ['context.flag && "never"', false],
    ['input.tier == "gold" ? "vip" : "normal"', 'vip'],
    ['input.tags[1]', 'b'],
    ['input.tags.length', 2],
    ['input.tier.length', 4],
    ['input["tier"]', 'gold'],
    ['input.nested.deep.value', 7],
    ['input?.nested?.deep?.value', 7],
    ['steps["load-customer"].name', 'Ada'],
    ['record.id', 9],
    ['true', true],
    ['null', null],
  ])('%s evaluates to %p', (source, expected) => {
    expect(run(source)).toEqual(expected);
  });

  it('should evaluate array literals', () => {
    expect(run('[input.customerId, "x"]')).toEqual([42, 'x']);
  });

  it('should give undefined for a missing path, however deep', () => {
    expect(run('input.nope')).toBeUndefined();
    expect(run('input.nope.deeper.still')).toBeUndefined();
    expect(run('input.tags[5]')).toBeUndefined();
    expect(run('input.tags[-1]')).toBeUndefined();
    expect(run('record.id', { input: null, context: {}, steps: {} })).toBeUndefined();
  });

  it('should keep the source and return the same compiled expression for the same source (cache)', () => {
    const a = compileExpression('input.tier == "silver"');
    expect(a.source).toBe('input.tier == "silver"');
    expect(compileExpression('input.tier == "silver"')).toBe(a);
  });

  describe('sandbox', () => {
    it.each([
      'input.constructor',
      'input["constructor"]',
      'input.__proto__',
      'input["__proto__"]',
      'input.prototype',
      'input.constructor.constructor',
      'input.tier.constructor',
      'input.tags.constructor',
      'input.tier["constructor"]',
      'input.toString',
      'input.hasOwnProperty',
      'input.tags.map',
      'input.tags.push',
      'input.tier.toUpperCase',
      'context.valueOf',
      '"x"["constructor"]',
      '[]["constructor"]',
    ])('%s is undefined', (source) => {
      expect(run(source)).toBeUndefined();
    });

    it('should not return functions placed in the scope, nor run getters or read class instances', () => {
      let called = false;
      const s: ExpressionScope = {
        input: {
          fn: () => 1,
          get secret() {
            called = true;
            return 'x';
          },
          date: new Date(0),
          map: new Map([['a', 1]]),
        },
        context: {},
        steps: {},
      };
      expect(run('input.fn', s)).toBeUndefined();
      expect(run('input.secret', s)).toBeUndefined();
      expect(called).toBe(false);
      expect(run('input.date.getTime', s)).toBeUndefined();
      expect(run('input.map.size', s)).toBeUndefined();
    });

    it('should not expose a parsed own __proto__ key', () => {
      const input: unknown = JSON.parse('{"__proto__": {"polluted": true}}');
      expect(run('input.__proto__', { input, context: {}, steps: {} })).toBeUndefined();
    });

    it.each([
      ['input.tier.toUpperCase()', 'function calls are not supported'],
      ['constructor', 'unknown name "constructor"'],
      ['process.exit', 'unknown name "process"'],
      ['globalThis', 'unknown name "globalThis"'],
      ['this.x', '"this" is not supported'],
      ['input.x = 1', 'Unexpected "="'],
      ['1, 2', 'only one expression'],
      ['input.a | 1', 'operator | is not supported'],
      ['~input.a', 'operator ~ is not supported'],
    ])('%s is refused: %s', (source, message) => {
      expect(expressionError(source)).toContain(message);
    });
  });

  describe('syntax errors', () => {
    it.each(['1 +', 'input.tier ==', '(1 + 2', 'input..tier', '"unclosed', 'input[', ''])(
      '%p is reported',
      (source) => {
        expect(expressionError(source)).toEqual(expect.any(String));
        expect(() => compileExpression(source)).toThrow(/^Invalid expression/);
      },
    );

    it('should report nothing for a valid expression', () => {
      expect(expressionError('input.tier == "gold"')).toBeUndefined();
    });

    it(`should refuse an expression longer than ${MAX_EXPRESSION_LENGTH} characters`, () => {
      const long = `${'1 + '.repeat(300)}1`;
      expect(long.length).toBeGreaterThan(MAX_EXPRESSION_LENGTH);
      expect(expressionError(long)).toBe(`expression is longer than ${MAX_EXPRESSION_LENGTH} characters`);
      expect(() => compileExpression(long)).toThrow(/longer than 1000 characters/);
    });

    it('should cope with deep nesting within the length cap', () => {
      const nested = `${'('.repeat(400)}1${')'.repeat(400)}`;
      expect(run(nested)).toBe(1);
    });
  });

  describe('evaluation errors', () => {
    it.each([
      ['input.missing * 2', 'operator * needs numbers, got undefined and number'],
      ['input.tier - 1', 'operator - needs numbers, got text and number'],
      ['-input.tier', 'operator - needs a number, got text'],
      ['1 / 0', 'is not a finite number'],
      ['input.tags + 1', 'operator + needs numbers, got array and number'],
    ])('%s throws: %s', (source, message) => {
      expect(() => run(source)).toThrow(ExpressionEvaluationError);
      expect(() => run(source)).toThrow(message);
    });
  });
});

describe('truthy', () => {
  it.each([
    [undefined, false],
    [null, false],
    [false, false],
    [0, false],
    [Number.NaN, false],
    ['', false],
    [true, true],
    [1, true],
    ['false', true],
    [[], true],
    [{}, true],
  ])('%p is %p', (value, expected) => {
    expect(truthy(value)).toBe(expected);
  });
});

describe('renderTemplate', () => {
  it('should keep the type of a whole-string template', () => {
    expect(renderTemplate('{{input.customerId}}', scope)).toBe(42);
    expect(renderTemplate('{{ input.customerId }}', scope)).toBe(42);
    expect(renderTemplate('{{input.tier == "gold"}}', scope)).toBe(true);
    expect(renderTemplate('{{input.nested}}', scope)).toEqual({ deep: { value: 7 } });
    expect(renderTemplate('{{input.missing}}', scope)).toBeUndefined();
  });

  it('should interpolate mixed text', () => {
    expect(renderTemplate('Onboarding customer {{input.customerId}} ({{input.tier}})', scope)).toBe(
      'Onboarding customer 42 (gold)',
    );
    expect(renderTemplate('{{input.customerId}}{{input.tier}}', scope)).toBe('42gold');
    expect(renderTemplate('[{{input.missing}}|{{context.empty}}]', scope)).toBe('[|]');
    expect(renderTemplate('tags: {{input.tags}}, n: {{input.nested}}', scope)).toBe(
      'tags: ["a","b"], n: {"deep":{"value":7}}',
    );
    expect(renderTemplate(' {{input.customerId}} ', scope)).toBe(' 42 ');
    expect(renderTemplate('no placeholders', scope)).toBe('no placeholders');
  });

  it('should render objects and arrays recursively and leave other values alone', () => {
    const template = {
      id: '{{input.customerId}}',
      notes: ['{{context.note}} world', 3, null, true],
      nested: { tier: 'tier={{input.tier}}' },
    };
    expect(renderTemplate(template, scope)).toEqual({
      id: 42,
      notes: ['hello world', 3, null, true],
      nested: { tier: 'tier=gold' },
    });
    expect(template.id).toBe('{{input.customerId}}');
    expect(renderTemplate(5, scope)).toBe(5);
    expect(renderTemplate(null, scope)).toBeNull();
  });

  it('should keep a __proto__ key as plain data', () => {
    const template: unknown = JSON.parse('{"__proto__": "{{input.tier}}"}');
    const rendered = renderTemplate(template, scope) as Record<string, unknown>;
    expect(Object.getPrototypeOf(rendered)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(rendered, '__proto__')?.value).toBe('gold');
  });
});

describe('templateErrors', () => {
  it('should find nothing in valid templates', () => {
    expect(templateErrors('Customer {{input.customerId}} ({{ input.tier }})')).toEqual([]);
    expect(templateErrors({ a: ['{{context.note}}', 1], b: null })).toEqual([]);
  });

  it('should report every invalid placeholder, with its path', () => {
    expect(templateErrors({ a: 'x {{ 1 + }} y {{input.}}', b: ['ok', '{{ foo }}'] })).toEqual([
      expect.stringMatching(/^a: \{\{ 1 \+ \}\}: /),
      expect.stringMatching(/^a: \{\{input\.\}\}: /),
      expect.stringMatching(/^b\[1\]: \{\{ foo \}\}: unknown name "foo"/),
    ]);
  });

  it('should report an unclosed placeholder', () => {
    expect(templateErrors('Hello {{input.name')).toEqual(['"{{" without a closing "}}"']);
  });

  it('should refuse templates nested too deeply', () => {
    let deep: unknown = 'x';
    for (let i = 0; i < 100; i++) deep = [deep];
    expect(templateProblems(deep)).toEqual([
      { path: expect.stringMatching(/^(\[0\]){32}$/), error: 'nested more than 32 levels deep' },
    ]);
  });
});

describe('template scanning', () => {
  it('should stay fast on hostile text', () => {
    const hostile = '{{'.repeat(200_000);
    const started = Date.now();
    expect(templateErrors(hostile)).toEqual(['"{{" without a closing "}}"']);
    expect(renderTemplate(`${'{'.repeat(100_000)}x`, scope)).toBe(`${'{'.repeat(100_000)}x`);
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it('should close each placeholder at the first }}', () => {
    expect(renderTemplate('{{input.customerId}}}}', scope)).toBe('42}}');
    expect(templateErrors('{{{input.customerId}}')).toEqual([expect.stringContaining('Unexpected "{"')]);
  });
});
