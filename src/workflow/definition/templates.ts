import {
  compileExpression,
  expressionError,
  isPlainObject,
  short,
  type ExpressionScope,
} from './expressions';

/**
 * `{{ expression }}` templates in step configs (D35): rendered against an instance's scope, and
 * checked for syntax when a definition is validated. Expressions themselves: expressions.ts.
 */

/** A template string cut into literal text and `{{ expression }}` sources. */
interface Pieces {
  parts: Array<{ text: string } | { source: string }>;
  /** A `{{` without a closing `}}` (kept as text). */
  unclosed: boolean;
}

/**
 * Splits on `{{ … }}`: each `{{` is closed by the first `}}` after it (so an expression cannot
 * contain `}}`). A linear scan with `indexOf`, so no input can make it slow.
 */
function pieces(text: string): Pieces {
  const parts: Pieces['parts'] = [];
  let from = 0;
  for (;;) {
    const open = text.indexOf('{{', from);
    const close = open < 0 ? -1 : text.indexOf('}}', open + 2);
    if (open < 0 || close < 0) {
      if (from < text.length) parts.push({ text: text.slice(from) });
      return { parts, unclosed: open >= 0 };
    }
    if (open > from) parts.push({ text: text.slice(from, open) });
    parts.push({ source: text.slice(open + 2, close) });
    from = close + 2;
  }
}

/** Deepest nesting of objects and arrays a template may have. */
export const MAX_TEMPLATE_DEPTH = 32;

/** How a value reads inside text: nothing for null/undefined, ISO time for dates, JSON for objects. */
function asText(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint')
    return String(value);
  if (value instanceof Date) return value.toISOString();
  return JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? String(v) : v)) ?? '';
}

function renderString(text: string, scope: ExpressionScope): unknown {
  if (!text.includes('{{')) return text;
  const { parts } = pieces(text);
  if (parts.length === 1 && 'source' in parts[0]) return compileExpression(parts[0].source).evaluate(scope);
  return parts
    .map((part) => ('text' in part ? part.text : asText(compileExpression(part.source).evaluate(scope))))
    .join('');
}

/**
 * A template rendered against a scope:
 * - a string that is exactly `{{ expr }}` gives the expression's value with its own type (a number
 *   stays a number, an object stays an object, a missing value is `undefined`);
 * - any other string has each `{{ expr }}` replaced by the value as text (`undefined`/`null` → '',
 *   objects → JSON); text without placeholders is returned unchanged;
 * - plain objects and arrays are rendered recursively (keys are not templates);
 * - other values are returned as they are.
 * Throws on an invalid expression (validation should have caught it) or an evaluation error.
 */
export function renderTemplate(template: unknown, scope: ExpressionScope, depth = 0): unknown {
  if (typeof template === 'string') return renderString(template, scope);
  if (depth >= MAX_TEMPLATE_DEPTH) return template;
  if (Array.isArray(template)) return template.map((item) => renderTemplate(item, scope, depth + 1));
  if (isPlainObject(template))
    return Object.fromEntries(
      Object.entries(template).map(([key, value]) => [key, renderTemplate(value, scope, depth + 1)]),
    );
  return template;
}

/** One problem of a template: where (a dotted path below the template, '' for itself) and what. */
export interface TemplateProblem {
  path: string;
  error: string;
}

function stringProblems(text: string): string[] {
  if (!text.includes('{{')) return [];
  const { parts, unclosed } = pieces(text);
  const problems: string[] = [];
  for (const part of parts) {
    if (!('source' in part)) continue;
    const error = expressionError(part.source);
    if (error) problems.push(`{{${short(part.source)}}}: ${error}`);
  }
  if (unclosed) problems.push('"{{" without a closing "}}"');
  return problems;
}

function joinPath(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`;
  return path === '' ? key : `${path}.${key}`;
}

/** Every problem of every `{{…}}` in a template, recursively, each with its path. */
export function templateProblems(template: unknown, path = '', depth = 0): TemplateProblem[] {
  if (typeof template === 'string') return stringProblems(template).map((error) => ({ path, error }));
  if (depth >= MAX_TEMPLATE_DEPTH && (Array.isArray(template) || isPlainObject(template)))
    return [{ path, error: `nested more than ${MAX_TEMPLATE_DEPTH} levels deep` }];
  if (Array.isArray(template))
    return template.flatMap((item, i) => templateProblems(item, joinPath(path, i), depth + 1));
  if (isPlainObject(template))
    return Object.entries(template).flatMap(([key, value]) =>
      templateProblems(value, joinPath(path, key), depth + 1),
    );
  return [];
}

/** The syntax errors of every `{{…}}` inside a template (recursively), as readable messages. */
export function templateErrors(template: unknown): string[] {
  return templateProblems(template).map((p) => (p.path === '' ? p.error : `${p.path}: ${p.error}`));
}
