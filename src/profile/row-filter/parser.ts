import { describeToken, Keyword, SQL_WORDS, Token, tokenize } from './lexer';
import {
  ROW_FILTER_MAX_DEPTH,
  ROW_FILTER_MAX_LENGTH,
  ROW_FILTER_MAX_NODES,
  RowFilter,
  RowFilterError,
  RowFilterOperand,
} from './row-filter.types';

/** The row-filter parser (D23): tokens → a tree, within the depth and size limits. */
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
