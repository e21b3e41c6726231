import type { RowFilter, RowFilterOperand } from './row-filter.types';

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
