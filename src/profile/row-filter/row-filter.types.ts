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
