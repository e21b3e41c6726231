/**
 * The row-filter grammar of D23: `prf_policy.rowFilters.where` is parsed here, once, when the profile
 * loads; `row-filter.compile.ts` turns the tree into a parameterised condition per request.
 *
 *   filter    := or
 *   or        := and ( OR and )*
 *   and       := unary ( AND unary )*
 *   unary     := NOT unary | '(' or ')' | predicate
 *   predicate := field ( cmp operand
 *                      | [NOT] IN '(' operand ( ',' operand )* ')'
 *                      | IS [NOT] NULL
 *                      | [NOT] LIKE string )
 *   cmp       := '=' | '!=' | '<>' | '<' | '<=' | '>' | '>='
 *   operand   := string | number | TRUE | FALSE | NULL | @tenant_id | @user.<attr>
 *
 * Keywords are case-insensitive. The left side of a predicate is always a field and the right side
 * never is, so `1=1`, function calls, subqueries, comments and statement separators cannot be
 * written; anything outside the grammar is a RowFilterError with the 0-based character position.
 */

export const ROW_FILTER_MAX_LENGTH = 2000;
export const ROW_FILTER_MAX_DEPTH = 20;
export const ROW_FILTER_MAX_NODES = 100;

export type LiteralValue = string | number | boolean | null;

export type RowFilterOperand =
  { kind: 'literal'; value: LiteralValue } | { kind: 'tenant' } | { kind: 'user'; attr: string };

/** `<>` is read as `!=`. */
export type ComparisonOperator = '=' | '!=' | '<' | '<=' | '>' | '>=';

export type RowFilter =
  | { type: 'and'; operands: RowFilter[] }
  | { type: 'or'; operands: RowFilter[] }
  | { type: 'not'; operand: RowFilter }
  | { type: 'compare'; field: string; op: ComparisonOperator; value: RowFilterOperand }
  | { type: 'in'; field: string; negated: boolean; values: RowFilterOperand[] }
  | { type: 'isNull'; field: string; negated: boolean }
  | { type: 'like'; field: string; negated: boolean; pattern: string };

export class RowFilterError extends Error {
  /** 0-based character offset in the filter text; null when the error is not tied to one. */
  readonly position: number | null;
  constructor(message: string, position: number | null = null) {
    super(
      position === null
        ? `Invalid row filter: ${message}`
        : `Invalid row filter at position ${position}: ${message}`,
    );
    this.name = 'RowFilterError';
    this.position = position;
  }
}

// ---------------------------------------------------------------------------------------------
// Tokenizer
// ---------------------------------------------------------------------------------------------

type Keyword = 'AND' | 'OR' | 'NOT' | 'IN' | 'IS' | 'NULL' | 'LIKE' | 'TRUE' | 'FALSE';
const KEYWORDS = new Set<string>(['AND', 'OR', 'NOT', 'IN', 'IS', 'NULL', 'LIKE', 'TRUE', 'FALSE']);

/** Words that would only appear in an attempt to write SQL; named in the error so it reads clearly. */
const SQL_WORDS = new Set<string>([
  'SELECT',
  'UNION',
  'FROM',
  'WHERE',
  'EXISTS',
  'INSERT',
  'UPDATE',
  'DELETE',
  'DROP',
  'ALTER',
  'CREATE',
  'EXEC',
  'EXECUTE',
  'CASE',
  'BETWEEN',
]);

type Token =
  | { t: 'ident'; text: string; pos: number }
  | { t: 'kw'; kw: Keyword; pos: number }
  | { t: 'string'; value: string; pos: number }
  | { t: 'number'; value: number; pos: number }
  | { t: 'var'; operand: RowFilterOperand; text: string; pos: number }
  | { t: 'op'; op: ComparisonOperator; pos: number }
  | { t: '(' | ')' | ','; pos: number }
  | { t: 'eof'; pos: number };

const IDENT_START = /[A-Za-z_]/;
const IDENT_PART = /[A-Za-z0-9_]/;
const DIGIT = /[0-9]/;

function readIdent(src: string, start: number): string {
  let end = start;
  while (end < src.length && IDENT_PART.test(src[end])) end++;
  return src.slice(start, end);
}

function tokenize(src: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i];
    const pos = i;
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      i++;
    } else if (c === '-' && src[i + 1] === '-') {
      throw new RowFilterError('comments (--) are not allowed', pos);
    } else if (c === '/' && src[i + 1] === '*') {
      throw new RowFilterError('comments (/* */) are not allowed', pos);
    } else if (c === ';') {
      throw new RowFilterError('semicolons are not allowed', pos);
    } else if (c === '(' || c === ')' || c === ',') {
      tokens.push({ t: c, pos });
      i++;
    } else if (c === '=') {
      if (src[i + 1] === '=') throw new RowFilterError("'==' is not an operator; use '='", pos);
      tokens.push({ t: 'op', op: '=', pos });
      i++;
    } else if (c === '!') {
      if (src[i + 1] !== '=') throw new RowFilterError("unexpected '!'", pos);
      tokens.push({ t: 'op', op: '!=', pos });
      i += 2;
    } else if (c === '<') {
      if (src[i + 1] === '=') {
        tokens.push({ t: 'op', op: '<=', pos });
        i += 2;
      } else if (src[i + 1] === '>') {
        tokens.push({ t: 'op', op: '!=', pos });
        i += 2;
      } else {
        tokens.push({ t: 'op', op: '<', pos });
        i++;
      }
    } else if (c === '>') {
      if (src[i + 1] === '=') {
        tokens.push({ t: 'op', op: '>=', pos });
        i += 2;
      } else {
        tokens.push({ t: 'op', op: '>', pos });
        i++;
      }
    } else if (c === "'") {
      let value = '';
      i++;
      for (;;) {
        if (i >= src.length) throw new RowFilterError('unterminated string literal', pos);
        if (src[i] === "'") {
          if (src[i + 1] === "'") {
            value += "'";
            i += 2;
            continue;
          }
          i++;
          break;
        }
        value += src[i];
        i++;
      }
      tokens.push({ t: 'string', value, pos });
    } else if (DIGIT.test(c) || (c === '-' && DIGIT.test(src[i + 1] ?? ''))) {
      let end = i + 1;
      while (end < src.length && DIGIT.test(src[end])) end++;
      if (src[end] === '.') {
        if (!DIGIT.test(src[end + 1] ?? '')) throw new RowFilterError('malformed number', pos);
        end++;
        while (end < src.length && DIGIT.test(src[end])) end++;
      }
      if (end < src.length && (IDENT_PART.test(src[end]) || src[end] === '.')) {
        throw new RowFilterError('malformed number', pos);
      }
      const text = src.slice(i, end);
      const value = Number(text);
      if (!Number.isFinite(value) || (!text.includes('.') && !Number.isSafeInteger(value))) {
        throw new RowFilterError(`number ${text} is out of range`, pos);
      }
      tokens.push({ t: 'number', value, pos });
      i = end;
    } else if (c === '@') {
      const variable = readVariable(src, pos);
      tokens.push(variable);
      i = pos + variable.text.length;
    } else if (IDENT_START.test(c)) {
      const text = readIdent(src, i);
      const upper = text.toUpperCase();
      if (KEYWORDS.has(upper)) tokens.push({ t: 'kw', kw: upper as Keyword, pos });
      else tokens.push({ t: 'ident', text, pos });
      i += text.length;
    } else {
      throw new RowFilterError(`unexpected character ${JSON.stringify(c)}`, pos);
    }
  }
  tokens.push({ t: 'eof', pos: src.length });
  return tokens;
}

function readVariable(src: string, pos: number): Extract<Token, { t: 'var' }> {
  const name = IDENT_START.test(src[pos + 1] ?? '') ? readIdent(src, pos + 1) : '';
  const lower = name.toLowerCase();
  if (lower === 'tenant_id') {
    return { t: 'var', operand: { kind: 'tenant' }, text: `@${name}`, pos };
  }
  if (lower === 'user') {
    const dot = pos + 1 + name.length;
    const attr = src[dot] === '.' && IDENT_START.test(src[dot + 1] ?? '') ? readIdent(src, dot + 1) : '';
    if (!attr) throw new RowFilterError('@user must be followed by .<attribute>', pos);
    if (src[dot + 1 + attr.length] === '.') {
      throw new RowFilterError(`@user.${attr} cannot have nested attributes`, pos);
    }
    return { t: 'var', operand: { kind: 'user', attr }, text: `@${name}.${attr}`, pos };
  }
  throw new RowFilterError(
    `unknown variable @${name}; only @tenant_id and @user.<attribute> are allowed`,
    pos,
  );
}

// ---------------------------------------------------------------------------------------------
// Parser
// ---------------------------------------------------------------------------------------------

function describeToken(token: Token): string {
  switch (token.t) {
    case 'ident':
      return `'${token.text}'`;
    case 'kw':
      return token.kw;
    case 'string':
      return 'a string';
    case 'number':
      return `number ${token.value}`;
    case 'var':
      return token.text;
    case 'op':
      return `'${token.op}'`;
    case '(':
    case ')':
    case ',':
      return `'${token.t}'`;
    case 'eof':
      return 'the end of the filter';
  }
}

class Parser {
  private index = 0;
  private nodes = 0;
  private depth = 0;

  constructor(private readonly tokens: Token[]) {}

  parse(): RowFilter {
    const result = this.parseOr();
    const rest = this.peek();
    if (rest.t !== 'eof') throw this.unexpected(rest, 'AND, OR or the end of the filter');
    return result;
  }

  private peek(offset = 0): Token {
    return this.tokens[Math.min(this.index + offset, this.tokens.length - 1)];
  }

  private next(): Token {
    const token = this.peek();
    if (token.t !== 'eof') this.index++;
    return token;
  }

  private isKeyword(token: Token, kw: Keyword): boolean {
    return token.t === 'kw' && token.kw === kw;
  }

  private count(token: Token, n = 1): void {
    this.nodes += n;
    if (this.nodes > ROW_FILTER_MAX_NODES) {
      throw new RowFilterError(`the filter has more than ${ROW_FILTER_MAX_NODES} nodes`, token.pos);
    }
  }

  private enter(token: Token): void {
    this.depth++;
    if (this.depth > ROW_FILTER_MAX_DEPTH) {
      throw new RowFilterError(`the filter is nested deeper than ${ROW_FILTER_MAX_DEPTH} levels`, token.pos);
    }
  }

  private unexpected(token: Token, expected: string): RowFilterError {
    if (token.t === 'ident' && SQL_WORDS.has(token.text.toUpperCase())) {
      return new RowFilterError(
        `SQL (${token.text.toUpperCase()}) is not allowed; expected ${expected}`,
        token.pos,
      );
    }
    return new RowFilterError(`expected ${expected} but found ${describeToken(token)}`, token.pos);
  }

  private parseOr(): RowFilter {
    return this.parseChain('OR', () => this.parseAnd());
  }

  private parseAnd(): RowFilter {
    return this.parseChain('AND', () => this.parseUnary());
  }

  /** AND and OR chains are n-ary (flattened), so a long chain does not count as nesting. */
  private parseChain(kw: 'AND' | 'OR', operand: () => RowFilter): RowFilter {
    const start = this.peek();
    const first = operand();
    if (!this.isKeyword(this.peek(), kw)) return first;
    this.count(start);
    const operands: RowFilter[] = [];
    // `(a AND b) AND c` and `a AND (b AND c)` are both the chain a, b, c.
    const add = (item: RowFilter): void => {
      if (kw === 'AND' && item.type === 'and') operands.push(...item.operands);
      else if (kw === 'OR' && item.type === 'or') operands.push(...item.operands);
      else operands.push(item);
    };
    add(first);
    while (this.isKeyword(this.peek(), kw)) {
      this.next();
      add(operand());
    }
    return kw === 'AND' ? { type: 'and', operands } : { type: 'or', operands };
  }

  private parseUnary(): RowFilter {
    const token = this.peek();
    if (this.isKeyword(token, 'NOT')) {
      this.next();
      this.enter(token);
      this.count(token);
      const operand = this.parseUnary();
      this.depth--;
      return { type: 'not', operand };
    }
    if (token.t === '(') {
      this.next();
      this.enter(token);
      const inner = this.parseOr();
      const close = this.next();
      if (close.t !== ')') throw this.unexpected(close, "')'");
      this.depth--;
      return inner;
    }
    return this.parsePredicate();
  }

  private parsePredicate(): RowFilter {
    const fieldToken = this.next();
    if (fieldToken.t !== 'ident') {
      if (fieldToken.t === 'var' || fieldToken.t === 'string' || fieldToken.t === 'number') {
        throw new RowFilterError(
          `a condition must start with a field name, found ${describeToken(fieldToken)}`,
          fieldToken.pos,
        );
      }
      throw this.unexpected(fieldToken, 'a field name');
    }
    const field = fieldToken.text;
    const after = this.peek();
    if (after.t === '(') {
      throw new RowFilterError(`function calls (${field}(…)) are not allowed`, fieldToken.pos);
    }
    if (SQL_WORDS.has(field.toUpperCase())) throw this.unexpected(fieldToken, 'a field name');
    this.count(fieldToken);

    const token = this.next();
    if (token.t === 'op') {
      const value = this.parseOperand('a literal or variable after ' + token.op);
      if (value.kind === 'literal' && value.value === null) {
        const hint =
          token.op === '=' ? 'IS NULL' : token.op === '!=' ? 'IS NOT NULL' : 'IS NULL / IS NOT NULL';
        throw new RowFilterError(
          `comparing with NULL using '${token.op}' never matches; use ${hint}`,
          token.pos,
        );
      }
      return { type: 'compare', field, op: token.op, value };
    }
    if (this.isKeyword(token, 'IS')) {
      let negated = false;
      if (this.isKeyword(this.peek(), 'NOT')) {
        this.next();
        negated = true;
      }
      const nullToken = this.next();
      if (!this.isKeyword(nullToken, 'NULL')) throw this.unexpected(nullToken, 'NULL after IS');
      return { type: 'isNull', field, negated };
    }
    let negated = false;
    let opToken: Token = token;
    if (this.isKeyword(token, 'NOT')) {
      negated = true;
      opToken = this.next();
    }
    if (this.isKeyword(opToken, 'IN')) return this.parseIn(field, negated);
    if (this.isKeyword(opToken, 'LIKE')) {
      const patternToken = this.next();
      if (patternToken.t !== 'string') throw this.unexpected(patternToken, 'a quoted pattern after LIKE');
      // `\` is an escape character in PostgreSQL and MySQL LIKE, `[` a character class in SQL Server:
      // refused so that one pattern means the same on every dialect.
      const special = /[\\[\]]/.exec(patternToken.value);
      if (special) {
        throw new RowFilterError(
          `LIKE patterns cannot contain '${special[0]}' (it differs between databases)`,
          patternToken.pos,
        );
      }
      this.count(patternToken);
      return { type: 'like', field, negated, pattern: patternToken.value };
    }
    throw this.unexpected(opToken, negated ? 'IN or LIKE after NOT' : 'a comparison, IN, IS or LIKE');
  }

  private parseIn(field: string, negated: boolean): RowFilter {
    const open = this.next();
    if (open.t !== '(') throw this.unexpected(open, "'(' after IN");
    const values: RowFilterOperand[] = [];
    for (;;) {
      const token = this.peek();
      const value = this.parseOperand('a literal or variable in the IN list');
      if (value.kind === 'literal' && value.value === null) {
        throw new RowFilterError('NULL in an IN list never matches; use IS NULL', token.pos);
      }
      values.push(value);
      const sep = this.next();
      if (sep.t === ')') break;
      if (sep.t !== ',') throw this.unexpected(sep, "',' or ')' in the IN list");
    }
    return { type: 'in', field, negated, values };
  }

  private parseOperand(expected: string): RowFilterOperand {
    const token = this.next();
    this.count(token);
    switch (token.t) {
      case 'string':
      case 'number':
        return { kind: 'literal', value: token.value };
      case 'var':
        return token.operand;
      case 'kw':
        if (token.kw === 'TRUE') return { kind: 'literal', value: true };
        if (token.kw === 'FALSE') return { kind: 'literal', value: false };
        if (token.kw === 'NULL') return { kind: 'literal', value: null };
        throw this.unexpected(token, expected);
      case 'ident':
        if (this.peek().t === '(') {
          throw new RowFilterError(`function calls (${token.text}(…)) are not allowed`, token.pos);
        }
        if (SQL_WORDS.has(token.text.toUpperCase())) throw this.unexpected(token, expected);
        throw new RowFilterError(
          `expected ${expected} but found the bare word '${token.text}' (quote strings with '…'; ` +
            'comparing two fields is not supported)',
          token.pos,
        );
      case 'op':
      case '(':
      case ')':
      case ',':
      case 'eof':
        throw this.unexpected(token, expected);
    }
  }
}

/** Parses `rowFilters.where`; throws RowFilterError for anything outside the grammar or the limits. */
export function parseRowFilter(source: string): RowFilter {
  if (typeof source !== 'string') throw new RowFilterError('the filter must be a string');
  if (source.length > ROW_FILTER_MAX_LENGTH) {
    throw new RowFilterError(`the filter is longer than ${ROW_FILTER_MAX_LENGTH} characters`);
  }
  if (source.trim() === '') throw new RowFilterError('the filter is empty');
  return new Parser(tokenize(source)).parse();
}

/** Every field the filter names (distinct, in order of appearance). */
export function rowFilterFields(filter: RowFilter): string[] {
  const out = new Set<string>();
  const walk = (node: RowFilter): void => {
    switch (node.type) {
      case 'and':
      case 'or':
        node.operands.forEach(walk);
        return;
      case 'not':
        walk(node.operand);
        return;
      case 'compare':
      case 'in':
      case 'isNull':
      case 'like':
        out.add(node.field);
        return;
    }
  };
  walk(filter);
  return [...out];
}

/**
 * The variables the filter uses, for cache keys (D27): a cached list is only valid for the same
 * tenant and the same values of these user attributes.
 */
export function rowFilterVariables(filter: RowFilter): { tenant: boolean; userAttrs: string[] } {
  let tenant = false;
  const attrs = new Set<string>();
  const visit = (operand: RowFilterOperand): void => {
    if (operand.kind === 'tenant') tenant = true;
    else if (operand.kind === 'user') attrs.add(operand.attr);
  };
  const walk = (node: RowFilter): void => {
    switch (node.type) {
      case 'and':
      case 'or':
        node.operands.forEach(walk);
        return;
      case 'not':
        walk(node.operand);
        return;
      case 'compare':
        visit(node.value);
        return;
      case 'in':
        node.values.forEach(visit);
        return;
      case 'isNull':
      case 'like':
        return;
    }
  };
  walk(filter);
  return { tenant, userAttrs: [...attrs].sort() };
}
