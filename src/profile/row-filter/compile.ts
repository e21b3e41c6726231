import { RowFilter, RowFilterError, RowFilterOperand } from './row-filter.types';

export type UserAttributeValue = string | number | boolean | null;

export interface RowFilterContext {
  tenantId: string;
  user: Record<string, UserAttributeValue>;
}

export interface CompiledRowFilter {
  /** A condition for TypeORM's `where`/`andWhere`; every value is a named parameter. */
  sql: string;
  params: Record<string, unknown>;
}

const PARAM_PREFIX = /^[A-Za-z_][A-Za-z0-9_]*$/;

const SQL_OPERATOR: Record<string, string> = {
  '=': '=',
  '!=': '<>',
  '<': '<',
  '<=': '<=',
  '>': '>',
  '>=': '>=',
};

/**
 * Turns a parsed row filter into a dialect-neutral, parameterised condition (D23).
 *
 * - Columns come only from `columnOf` (the caller passes escaped `alias.column` strings, emitted as
 *   given); a field it does not know is a RowFilterError.
 * - Values, `@tenant_id` and `@user.<attr>` are named parameters `:{prefix}0`, `:{prefix}1`, …; IN
 *   lists are one array parameter `(:...{prefix}N)`, which TypeORM expands. Use a different prefix
 *   for each filter compiled into the same query.
 * - TRUE/FALSE (literal or user attribute) bind as 1/0: no boolean literals in SQL, and 1/0 compares
 *   correctly with BIT (SQL Server), TINYINT(1) (MySQL), INTEGER (SQLite) and, through parameter type
 *   inference, BOOLEAN (PostgreSQL).
 * - A user attribute missing from the context binds NULL. Any comparison with NULL is unknown, and
 *   NOT(unknown) stays unknown, so such a condition matches no row: a filter that depends on an
 *   attribute the user lacks fails closed. (`NOT IN` with a NULL element likewise matches nothing.)
 * - Comparing with a NULL literal is refused by the parser (use IS NULL / IS NOT NULL).
 * - LIKE is case-sensitive on PostgreSQL and usually case-insensitive elsewhere (collation).
 */
export function compileRowFilter(
  ast: RowFilter,
  ctx: RowFilterContext,
  columnOf: (field: string) => string | undefined,
  paramPrefix = 'rf',
): CompiledRowFilter {
  if (!PARAM_PREFIX.test(paramPrefix)) {
    throw new RowFilterError(`parameter prefix '${paramPrefix}' is not an identifier`);
  }
  const params: Record<string, unknown> = {};
  let counter = 0;

  const bind = (value: unknown): string => {
    const name = `${paramPrefix}${counter++}`;
    params[name] = value;
    return name;
  };

  const column = (field: string): string => {
    const col = columnOf(field);
    if (typeof col !== 'string' || col === '') {
      throw new RowFilterError(`unknown field '${field}'`);
    }
    return col;
  };

  const valueOf = (operand: RowFilterOperand): unknown => {
    switch (operand.kind) {
      case 'literal':
        return toParam(operand.value);
      case 'tenant':
        return ctx.tenantId;
      case 'user': {
        const value: unknown = Object.prototype.hasOwnProperty.call(ctx.user, operand.attr)
          ? ctx.user[operand.attr]
          : null;
        if (value !== null && value !== undefined && !isScalar(value)) {
          throw new RowFilterError(`@user.${operand.attr} is not a string, finite number or boolean`);
        }
        return toParam(value ?? null);
      }
    }
  };

  const compile = (node: RowFilter): string => {
    switch (node.type) {
      case 'and':
        return `(${node.operands.map(compile).join(' AND ')})`;
      case 'or':
        return `(${node.operands.map(compile).join(' OR ')})`;
      case 'not': {
        // The operand is always parenthesised: MySQL's HIGH_NOT_PRECEDENCE mode would otherwise
        // read `NOT a = 1` as `(NOT a) = 1`. AND/OR groups already carry their parentheses.
        const inner = compile(node.operand);
        const grouped = node.operand.type === 'and' || node.operand.type === 'or';
        return grouped ? `(NOT ${inner})` : `(NOT (${inner}))`;
      }
      case 'compare': {
        const col = column(node.field);
        if (node.value.kind === 'literal' && node.value.value === null) {
          throw new RowFilterError(
            `'${node.field} ${node.op} NULL' never matches; use IS NULL or IS NOT NULL`,
          );
        }
        return `${col} ${SQL_OPERATOR[node.op]} :${bind(valueOf(node.value))}`;
      }
      case 'in': {
        const col = column(node.field);
        if (node.values.length === 0) throw new RowFilterError(`empty IN list for '${node.field}'`);
        return `${col} ${node.negated ? 'NOT IN' : 'IN'} (:...${bind(node.values.map(valueOf))})`;
      }
      case 'isNull':
        return `${column(node.field)} ${node.negated ? 'IS NOT NULL' : 'IS NULL'}`;
      case 'like':
        return `${column(node.field)} ${node.negated ? 'NOT LIKE' : 'LIKE'} :${bind(node.pattern)}`;
    }
  };

  return { sql: compile(ast), params };
}

function isScalar(value: unknown): value is string | number | boolean {
  return (
    typeof value === 'string' ||
    (typeof value === 'number' && Number.isFinite(value)) ||
    typeof value === 'boolean'
  );
}

function toParam(value: UserAttributeValue): string | number | null {
  if (typeof value === 'boolean') return value ? 1 : 0;
  return value;
}
