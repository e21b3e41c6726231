import { errorMessage } from '../../common/errors/error-message';
import jsep from 'jsep';
import { LRUCache } from 'lru-cache';

/**
 * Workflow expressions and `{{…}}` templates (D35).
 *
 * Expressions are parsed by `jsep` (a parser only: it builds an AST, never runs code) and
 * interpreted here over a small, explicit subset, so nothing but the scope's own data is reachable:
 * - names: `input`, `context`, `steps`, `record` (anything else is a syntax error);
 * - literals: numbers, "text" / 'text', `true`, `false`, `null`, arrays `[a, b]`;
 * - paths: `a.b`, `a["b"]`, `a[0]`, `a?.b` — a missing step on the way gives `undefined`, never an
 *   error; only own data properties of plain objects and arrays are read (and `length` of a text or
 *   an array), so `constructor`, `__proto__`, `prototype`, getters and methods are `undefined`;
 * - `!`, unary `-` / `+`; `* / % **`, `+ -`; `< <= > >=`; `== != === !==`; `&&`, `||`, `??`;
 *   `test ? a : b`.
 * No function calls, no assignment, no `this`, no bitwise operators, no regular expressions.
 * The implementation never uses `eval`, `new Function` or `vm`.
 */

/** Longest expression source accepted (one `{{…}}` placeholder or one condition). */
export const MAX_EXPRESSION_LENGTH = 1_000;

/** The names an expression may start from. */
export const SCOPE_NAMES = ['input', 'context', 'steps', 'record'] as const;
type ScopeName = (typeof SCOPE_NAMES)[number];

/** What an expression can read: the instance's input, its context, earlier steps' results, a record. */
export interface ExpressionScope {
  input: unknown;
  context: Record<string, unknown>;
  steps: Record<string, unknown>;
  record?: unknown;
}

/** A parsed, checked expression; `evaluate` is synchronous and pure. */
export interface CompiledExpression {
  readonly source: string;
  /** Throws {@link ExpressionEvaluationError} on a type error (e.g. arithmetic on a non-number). */
  evaluate(scope: ExpressionScope): unknown;
}

/** An expression that parsed but could not be evaluated on the given data. */
export class ExpressionEvaluationError extends Error {
  constructor(
    readonly source: string,
    reason: string,
  ) {
    super(`Expression "${short(source)}" failed: ${reason}`);
    this.name = 'ExpressionEvaluationError';
  }
}

type BinaryOperator =
  '==' | '!=' | '===' | '!==' | '<' | '<=' | '>' | '>=' | '+' | '-' | '*' | '/' | '%' | '**';
type LogicalOperator = '&&' | '||' | '??';
type UnaryOperator = '!' | '-' | '+';
type Primitive = string | number | boolean | null;

/** Our own AST: only the node kinds we interpret, so evaluation needs no casts. */
type Ast =
  | { kind: 'literal'; value: Primitive }
  | { kind: 'name'; name: ScopeName }
  | { kind: 'member'; object: Ast; key: Ast }
  | { kind: 'unary'; op: UnaryOperator; arg: Ast }
  | { kind: 'binary'; op: BinaryOperator; left: Ast; right: Ast }
  | { kind: 'logical'; op: LogicalOperator; left: Ast; right: Ast }
  | { kind: 'conditional'; test: Ast; then: Ast; otherwise: Ast }
  | { kind: 'array'; items: Ast[] };

const BINARY: ReadonlySet<string> = new Set<BinaryOperator>([
  '==', '!=', '===', '!==', '<', '<=', '>', '>=', '+', '-', '*', '/', '%', '**',
]); // prettier-ignore
const LOGICAL: ReadonlySet<string> = new Set<LogicalOperator>(['&&', '||', '??']);
const UNARY: ReadonlySet<string> = new Set<UnaryOperator>(['!', '-', '+']);
const NAMES: ReadonlySet<string> = new Set(SCOPE_NAMES);

/** Keys never read, even as own properties: they only ever lead to prototypes. */
const BLOCKED_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

class SyntaxProblem extends Error {}

/** The source shortened for messages. */
export function short(source: string): string {
  return source.length > 60 ? `${source.slice(0, 57)}...` : source;
}

/** jsep's node converted to our AST; unsupported constructs throw a {@link SyntaxProblem}. */
function toAst(node: jsep.Expression): Ast {
  switch (node.type) {
    case 'Literal': {
      const { value } = node as jsep.Literal;
      if (value === null || ['string', 'number', 'boolean'].includes(typeof value))
        return { kind: 'literal', value: value as Primitive };
      throw new SyntaxProblem(`unsupported literal ${(node as jsep.Literal).raw}`);
    }
    case 'Identifier': {
      const { name } = node as jsep.Identifier;
      if (!NAMES.has(name))
        throw new SyntaxProblem(`unknown name "${name}" (expressions read ${SCOPE_NAMES.join(', ')})`);
      return { kind: 'name', name: name as ScopeName };
    }
    case 'MemberExpression': {
      const m = node as jsep.MemberExpression;
      const key: Ast = m.computed
        ? toAst(m.property)
        : { kind: 'literal', value: (m.property as jsep.Identifier).name };
      return { kind: 'member', object: toAst(m.object), key };
    }
    case 'UnaryExpression': {
      const u = node as jsep.UnaryExpression;
      if (!UNARY.has(u.operator)) throw new SyntaxProblem(`operator ${u.operator} is not supported`);
      return { kind: 'unary', op: u.operator as UnaryOperator, arg: toAst(u.argument) };
    }
    case 'BinaryExpression':
    case 'LogicalExpression': {
      const b = node as jsep.BinaryExpression;
      const [left, right] = [toAst(b.left), toAst(b.right)];
      if (LOGICAL.has(b.operator)) return { kind: 'logical', op: b.operator as LogicalOperator, left, right };
      if (BINARY.has(b.operator)) return { kind: 'binary', op: b.operator as BinaryOperator, left, right };
      throw new SyntaxProblem(`operator ${b.operator} is not supported`);
    }
    case 'ConditionalExpression': {
      const c = node as jsep.ConditionalExpression;
      return {
        kind: 'conditional',
        test: toAst(c.test),
        then: toAst(c.consequent),
        otherwise: toAst(c.alternate),
      };
    }
    case 'ArrayExpression': {
      const items = (node as jsep.ArrayExpression).elements.map((e) => {
        if (e === null) throw new SyntaxProblem('array holes are not supported');
        return toAst(e);
      });
      return { kind: 'array', items };
    }
    case 'CallExpression':
      throw new SyntaxProblem('function calls are not supported');
    case 'ThisExpression':
      throw new SyntaxProblem('"this" is not supported');
    case 'Compound':
    case 'SequenceExpression':
      throw new SyntaxProblem('only one expression is allowed');
    default:
      throw new SyntaxProblem(`${node.type} is not supported`);
  }
}

/** The checked AST of a source, or the reason it is not a valid expression. */
function parse(source: string): { ast: Ast } | { error: string } {
  if (source.length > MAX_EXPRESSION_LENGTH)
    return { error: `expression is longer than ${MAX_EXPRESSION_LENGTH} characters` };
  if (source.trim() === '') return { error: 'expression is empty' };
  try {
    return { ast: toAst(jsep(source)) };
  } catch (err) {
    return { error: errorMessage(err) };
  }
}

/** True for objects made by `{}`, JSON or `Object.create(null)`: the only objects whose keys we read. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

/**
 * `target[key]` restricted to data: an own, non-accessor property of a plain object or an array
 * (or `length` of a text or an array); anything else, functions included, is `undefined`.
 */
function readMember(target: unknown, key: unknown): unknown {
  let name: string;
  if (typeof key === 'number') {
    if (!Number.isInteger(key) || key < 0) return undefined;
    name = String(key);
  } else if (typeof key === 'string') {
    name = key;
  } else {
    return undefined;
  }
  if (BLOCKED_KEYS.has(name)) return undefined;
  if (name === 'length' && (typeof target === 'string' || Array.isArray(target))) return target.length;
  if (!isPlainObject(target) && !Array.isArray(target)) return undefined;
  const descriptor = Object.getOwnPropertyDescriptor(target, name);
  if (!descriptor || !('value' in descriptor)) return undefined;
  const value: unknown = descriptor.value;
  return typeof value === 'function' ? undefined : value;
}

/** Truthiness used by conditions, `!`, `&&`, `||` and `?:`: JavaScript's (false, 0, NaN, '', null, undefined are false). */
export function truthy(value: unknown): boolean {
  return Boolean(value);
}

/** `==` / `!=`: strict equality (no text/number coercion), except that `null` equals a missing value. */
function looseEquals(a: unknown, b: unknown): boolean {
  return (a === null || a === undefined) && (b === null || b === undefined) ? true : a === b;
}

/** Ordering compares two numbers or two texts; any other pair is simply not ordered (false). */
function compare(op: '<' | '<=' | '>' | '>=', a: unknown, b: unknown): boolean {
  const ordered =
    (typeof a === 'number' && typeof b === 'number') || (typeof a === 'string' && typeof b === 'string');
  if (!ordered) return false;
  switch (op) {
    case '<':
      return a < b;
    case '<=':
      return a <= b;
    case '>':
      return a > b;
    case '>=':
      return a >= b;
  }
}

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value === 'string' ? 'text' : typeof value;
}

/** Arithmetic: `+` adds numbers or joins text with a text, number or boolean; the rest need numbers. */
function arithmetic(
  source: string,
  op: '+' | '-' | '*' | '/' | '%' | '**',
  a: unknown,
  b: unknown,
): number | string {
  if (op === '+' && (typeof a === 'string' || typeof b === 'string')) {
    const joinable = (v: unknown) => ['string', 'number', 'boolean'].includes(typeof v);
    if (joinable(a) && joinable(b)) return String(a) + String(b);
  }
  if (typeof a !== 'number' || typeof b !== 'number')
    throw new ExpressionEvaluationError(
      source,
      `operator ${op} needs numbers, got ${typeName(a)} and ${typeName(b)}`,
    );
  const result =
    op === '+'
      ? a + b
      : op === '-'
        ? a - b
        : op === '*'
          ? a * b
          : op === '/'
            ? a / b
            : op === '%'
              ? a % b
              : a ** b;
  if (!Number.isFinite(result))
    throw new ExpressionEvaluationError(source, `${a} ${op} ${b} is not a finite number`);
  return result;
}

function evaluateAst(source: string, ast: Ast, scope: ExpressionScope): unknown {
  const run = (node: Ast): unknown => evaluateAst(source, node, scope);
  switch (ast.kind) {
    case 'literal':
      return ast.value;
    case 'name':
      return ast.name === 'input'
        ? scope.input
        : ast.name === 'context'
          ? scope.context
          : ast.name === 'steps'
            ? scope.steps
            : scope.record;
    case 'member':
      return readMember(run(ast.object), run(ast.key));
    case 'array':
      return ast.items.map(run);
    case 'conditional':
      return truthy(run(ast.test)) ? run(ast.then) : run(ast.otherwise);
    case 'logical': {
      const left = run(ast.left);
      switch (ast.op) {
        case '&&':
          return truthy(left) ? run(ast.right) : left;
        case '||':
          return truthy(left) ? left : run(ast.right);
        case '??':
          return left === null || left === undefined ? run(ast.right) : left;
      }
      break;
    }
    case 'unary': {
      const value = run(ast.arg);
      if (ast.op === '!') return !truthy(value);
      if (typeof value !== 'number')
        throw new ExpressionEvaluationError(
          source,
          `operator ${ast.op} needs a number, got ${typeName(value)}`,
        );
      return ast.op === '-' ? -value : value;
    }
    case 'binary': {
      const [left, right] = [run(ast.left), run(ast.right)];
      switch (ast.op) {
        case '==':
          return looseEquals(left, right);
        case '!=':
          return !looseEquals(left, right);
        case '===':
          return left === right;
        case '!==':
          return left !== right;
        case '<':
        case '<=':
        case '>':
        case '>=':
          return compare(ast.op, left, right);
        case '+':
        case '-':
        case '*':
        case '/':
        case '%':
        case '**':
          return arithmetic(source, ast.op, left, right);
      }
    }
  }
}

type CacheEntry = { compiled: CompiledExpression } | { error: string };

/** Compiled expressions (and syntax errors) by source; bounded, least recently used dropped first. */
const cache = new LRUCache<string, CacheEntry>({ max: 2_000 });

function lookup(source: string): CacheEntry {
  const hit = cache.get(source);
  if (hit) return hit;
  const parsed = parse(source);
  const entry: CacheEntry =
    'error' in parsed
      ? { error: parsed.error }
      : { compiled: { source, evaluate: (scope) => evaluateAst(source, parsed.ast, scope) } };
  // An over-long source is rejected before parsing; caching it would only let it evict real entries.
  if (source.length <= MAX_EXPRESSION_LENGTH) cache.set(source, entry);
  return entry;
}

/** The compiled expression; throws an `Error` naming the expression and the problem when it is invalid. */
export function compileExpression(source: string): CompiledExpression {
  const entry = lookup(source);
  if ('error' in entry) throw new Error(`Invalid expression "${short(source)}": ${entry.error}`);
  return entry.compiled;
}

/** Why the source is not a valid expression, or `undefined` when it is. */
export function expressionError(source: string): string | undefined {
  const entry = lookup(source);
  return 'error' in entry ? entry.error : undefined;
}
