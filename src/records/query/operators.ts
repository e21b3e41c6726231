import type { FieldType } from '../../registry/registry.types';
import type { FilterOperator } from './record-query';

/** The column kinds of spec §2.9.1 that filters are checked against. */
export type ColumnKind = 'text' | 'numeric' | 'date' | 'boolean' | 'select';

/**
 * A field's column kind. The registry's type decides (a column configured as `link` over an e-mail
 * field is text; one configured as `numeric` over a text field is text): the values are the
 * registry's, and a filter must fit them. JSON fields have no kind and take no filter.
 */
export function kindOf(type: FieldType): ColumnKind | undefined {
  switch (type) {
    case 'text':
    case 'email':
      return 'text';
    case 'integer':
    case 'numeric':
      return 'numeric';
    case 'date':
      return 'date';
    case 'boolean':
      return 'boolean';
    case 'select':
      return 'select';
    case 'json':
      return undefined;
  }
}

const EVERY_KIND: readonly FilterOperator[] = [
  'equals',
  'not_equals',
  'in',
  'not_in',
  'is_null',
  'is_not_null',
];

/**
 * The one operator table (spec §2.9.1, D30), for entity filters and dataview filters alike:
 * equals, not_equals, in, not_in, is_null and is_not_null on every kind; contains, starts_with and
 * ends_with on text (a select holds codes of a value set, matched whole); greater_than, less_than
 * and between on numbers and dates.
 */
export const OPERATORS_BY_KIND: Readonly<Record<ColumnKind, readonly FilterOperator[]>> = {
  text: [...EVERY_KIND, 'contains', 'starts_with', 'ends_with'],
  numeric: [...EVERY_KIND, 'greater_than', 'less_than', 'between'],
  date: [...EVERY_KIND, 'greater_than', 'less_than', 'between'],
  boolean: EVERY_KIND,
  select: EVERY_KIND,
};

export function operatorFits(operator: FilterOperator, kind: ColumnKind): boolean {
  return OPERATORS_BY_KIND[kind].includes(operator);
}

/** Whether a field of `type` takes `operator` (a JSON field takes none). */
export function operatorAllowed(operator: FilterOperator, type: FieldType): boolean {
  const kind = kindOf(type);
  return kind !== undefined && operatorFits(operator, kind);
}

/** A case-blind search (a grid's search box) looks into text and select values (spec §2.9.1 `searchable`). */
export function isSearchable(type: FieldType): boolean {
  const kind = kindOf(type);
  return kind === 'text' || kind === 'select';
}
