import { ComparisonOperator, RowFilterError, RowFilterOperand } from './row-filter.types';

/** The row-filter tokenizer (D23): characters → tokens with their positions. */
// ---------------------------------------------------------------------------------------------
// Tokenizer
// ---------------------------------------------------------------------------------------------

export type Keyword = 'AND' | 'OR' | 'NOT' | 'IN' | 'IS' | 'NULL' | 'LIKE' | 'TRUE' | 'FALSE';
const KEYWORDS = new Set<string>(['AND', 'OR', 'NOT', 'IN', 'IS', 'NULL', 'LIKE', 'TRUE', 'FALSE']);

/** Words that would only appear in an attempt to write SQL; named in the error so it reads clearly. */
export const SQL_WORDS = new Set<string>([
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

export type Token =
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

export function tokenize(src: string): Token[] {
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

export function describeToken(token: Token): string {
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
