import type { DataSource, SelectQueryBuilder } from 'typeorm';
import type { FieldError } from '../../common/errors/app-error';
import type { EntityInfo, FieldDef } from '../../registry/registry.types';
import { col } from '../scope';
import { wellFormedProblem } from '../../common/validation/text-rules';
import { coerce } from './coerce';
import { isSearchable, operatorAllowed } from './operators';
import type { FilterCondition, RecordQuery } from './record-query';

/** Most values an `in` / `not_in` list may hold. */
export const MAX_IN_VALUES = 100;

/** LIKE pattern text with `!`, `%`, `_` and `[` (SQL Server) escaped by `!`. */
function likeEscape(text: string): string {
  return text.replace(/[!%_[]/g, (c) => `!${c}`);
}

interface Built {
  sql: string;
  params: Record<string, unknown>;
}

/**
 * One condition as SQL with named parameters, or a problem. Values are coerced to the field's type
 * (never concatenated); e-mail and the LIKE operators compare case-blind on every dialect;
 * `not_equals` and `not_in` keep rows whose value is NULL (a grid hiding "cancelled" still shows
 * orders without a status).
 */
function buildCondition(
  ds: DataSource,
  field: FieldDef,
  c: FilterCondition,
  param: string,
): Built | { error: string } {
  if (!operatorAllowed(c.operator, field.type))
    return { error: `operator ${c.operator} does not apply to a ${field.type} field` };
  const column = col(ds, field.column);
  const caseBlind = field.type === 'email';
  const one = (raw: unknown): { value?: unknown; error?: string } => {
    const r = coerce(field, raw);
    if (r.error || r.value === null) return r;
    return caseBlind && typeof r.value === 'string' ? { value: r.value.toLowerCase() } : r;
  };
  const target = caseBlind ? `LOWER(${column})` : column;
  switch (c.operator) {
    case 'is_null':
      return { sql: `${column} IS NULL`, params: {} };
    case 'is_not_null':
      return { sql: `${column} IS NOT NULL`, params: {} };
    case 'equals':
    case 'not_equals': {
      const v = one(c.value);
      if (v.error) return { error: v.error };
      if (v.value === null)
        return { sql: `${column} IS ${c.operator === 'equals' ? '' : 'NOT '}NULL`, params: {} };
      return c.operator === 'equals'
        ? { sql: `${target} = :${param}`, params: { [param]: v.value } }
        : { sql: `(${target} <> :${param} OR ${column} IS NULL)`, params: { [param]: v.value } };
    }
    case 'in':
    case 'not_in': {
      if (!Array.isArray(c.value) || c.value.length === 0 || c.value.length > MAX_IN_VALUES)
        return { error: `must be a list of 1 to ${MAX_IN_VALUES} values` };
      const values: unknown[] = [];
      for (const raw of c.value as unknown[]) {
        const v = one(raw);
        if (v.error || v.value === null) return { error: v.error ?? 'must not contain null' };
        values.push(v.value);
      }
      return c.operator === 'in'
        ? { sql: `${target} IN (:...${param})`, params: { [param]: values } }
        : { sql: `(${target} NOT IN (:...${param}) OR ${column} IS NULL)`, params: { [param]: values } };
    }
    case 'contains':
    case 'starts_with':
    case 'ends_with': {
      const v = one(c.value);
      if (v.error || typeof v.value !== 'string' || v.value === '')
        return { error: v.error ?? 'must be a non-empty text' };
      const text = likeEscape(v.value.toLowerCase());
      const pattern =
        c.operator === 'contains' ? `%${text}%` : c.operator === 'starts_with' ? `${text}%` : `%${text}`;
      return { sql: `LOWER(${column}) LIKE :${param} ESCAPE '!'`, params: { [param]: pattern } };
    }
    case 'greater_than':
    case 'less_than': {
      const v = one(c.value);
      if (v.error || v.value === null) return { error: v.error ?? 'must not be null' };
      return {
        sql: `${column} ${c.operator === 'greater_than' ? '>' : '<'} :${param}`,
        params: { [param]: v.value },
      };
    }
    case 'between': {
      if (!Array.isArray(c.value) || c.value.length !== 2) return { error: 'must be a list [from, to]' };
      const [from, to] = (c.value as unknown[]).map(one);
      if (from.error || to.error || from.value === null || to.value === null)
        return { error: from.error ?? to.error ?? 'must not contain null' };
      return {
        sql: `${column} BETWEEN :${param}a AND :${param}b`,
        params: { [`${param}a`]: from.value, [`${param}b`]: to.value },
      };
    }
  }
}

/**
 * Adds the query's filters and search to `qb` (after the scope, so the scope stays the leading AND
 * terms). Only fields in `filterable` may be filtered on: a hidden or masked field would be an oracle
 * on the value the policy keeps from the caller. Every problem is collected as `{field, error}`.
 */
export function applyConditions(
  ds: DataSource,
  qb: SelectQueryBuilder<Record<string, unknown>>,
  entity: EntityInfo,
  filterable: ReadonlySet<string>,
  query: Pick<RecordQuery, 'filters' | 'search'>,
  errors: FieldError[],
): void {
  let i = 0;
  for (const c of query.filters) {
    const label = c.label ?? c.field;
    const field = entity.fields.find((f) => f.name === c.field);
    if (!field || !filterable.has(c.field)) {
      errors.push({ field: label, error: 'unknown or not filterable field' });
      continue;
    }
    const built = buildCondition(ds, field, c, `__f${i++}`);
    if ('error' in built) errors.push({ field: label, error: built.error });
    else qb.andWhere(built.sql, built.params);
  }
  if (query.search && query.search.text !== '') {
    const fields = query.search.fields
      .filter((name) => filterable.has(name))
      .map((name) => entity.fields.find((f) => f.name === name && isSearchable(f.type)))
      .filter((f): f is FieldDef => f !== undefined);
    if (fields.length === 0) {
      errors.push({ field: 'search', error: 'no searchable field' });
      return;
    }
    const problem = wellFormedProblem(query.search.text);
    if (problem || query.search.text.length > 200) {
      errors.push({ field: 'search', error: problem ?? 'is too long' });
      return;
    }
    const pattern = `%${likeEscape(query.search.text.toLowerCase())}%`;
    const ors = fields.map((f) => `LOWER(${col(ds, f.column)}) LIKE :__search ESCAPE '!'`);
    qb.andWhere(`(${ors.join(' OR ')})`, { __search: pattern });
  }
}
