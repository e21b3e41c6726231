import type { DataSource, SelectQueryBuilder } from 'typeorm';
import type { FieldError } from '../../common/errors/app-error';
import type { EntityInfo, FieldDef } from '../../registry/registry.types';
import { col } from '../scope';
import { coerce } from './coerce';
import type { KeysetPosition, PageRequest, SortKey } from './record-query';

export interface OrderKey {
  field: FieldDef;
  direction: 'ASC' | 'DESC';
}

/** The sort keys before the primary key, and the primary key's direction. */
export interface OrderPlan {
  keys: OrderKey[];
  keyDirection: 'ASC' | 'DESC';
}

/**
 * The sort of a query, always ending with the primary key so that pages are stable (ties broken
 * by the key, in the direction of the last sort key). Only `sortable` fields may be sorted on.
 */
export function orderPlan(
  entity: EntityInfo,
  sortable: ReadonlySet<string>,
  sort: readonly SortKey[],
  keyDirection: 'asc' | 'desc' | undefined,
  errors: FieldError[],
  label = 'sortBy',
): OrderPlan {
  const keys: OrderKey[] = [];
  let byKey: 'ASC' | 'DESC' | undefined;
  for (const s of sort) {
    const field = entity.fields.find((f) => f.name === s.field);
    if (!field || !sortable.has(s.field)) {
      errors.push({ field: label, error: 'unknown or not sortable field' });
      continue;
    }
    const direction = s.direction === 'desc' ? 'DESC' : 'ASC';
    // Sorting by the key ends the sort: the key is unique.
    if (field.column === entity.primaryKeyColumn) {
      byKey = direction;
      break;
    }
    keys.push({ field, direction });
  }
  const fallback = keyDirection === undefined ? undefined : keyDirection === 'desc' ? 'DESC' : 'ASC';
  return {
    keys,
    keyDirection: byKey ?? (keys.length > 0 ? keys[keys.length - 1].direction : (fallback ?? 'ASC')),
  };
}

/** The key field (the registry field on the primary key column), or a synthetic one. */
function keyField(entity: EntityInfo): FieldDef {
  return (
    entity.fields.find((f) => f.column === entity.primaryKeyColumn) ?? {
      name: '__id',
      column: entity.primaryKeyColumn,
      type: 'integer',
      required: false,
      unique: true,
      readOnly: true,
      hidden: false,
    }
  );
}

/**
 * ORDER BY the keys and the primary key; for keyset pages NULLs sort last in every direction on
 * every dialect (`CASE WHEN k IS NULL …` first), so that "after this row" has one meaning, and the
 * rows after `page.after` are selected with a lexicographic comparison on (keys…, id).
 */
export function applyOrder(
  ds: DataSource,
  qb: SelectQueryBuilder<Record<string, unknown>>,
  entity: EntityInfo,
  plan: OrderPlan,
  page: PageRequest,
  errors: FieldError[],
): void {
  const { keys, keyDirection: pkDirection } = plan;
  const pk = col(ds, entity.primaryKeyColumn);
  const keyset = page.kind === 'keyset';
  let first = true;
  const add = (expr: string, dir: 'ASC' | 'DESC') => {
    if (first) qb.orderBy(expr, dir);
    else qb.addOrderBy(expr, dir);
    first = false;
  };
  for (const k of keys) {
    const c = col(ds, k.field.column);
    if (keyset) add(`CASE WHEN ${c} IS NULL THEN 1 ELSE 0 END`, 'ASC');
    add(c, k.direction);
  }
  add(pk, pkDirection);
  if (page.kind === 'keyset' && page.after)
    keysetAfter(ds, qb, entity, keys, pkDirection, page.after, errors);
}

function keysetAfter(
  ds: DataSource,
  qb: SelectQueryBuilder<Record<string, unknown>>,
  entity: EntityInfo,
  keys: readonly OrderKey[],
  pkDirection: 'ASC' | 'DESC',
  after: KeysetPosition,
  errors: FieldError[],
): void {
  if (after.values.length !== keys.length || !Number.isSafeInteger(after.id)) {
    errors.push({ field: 'cursor', error: 'does not fit this sort' });
    return;
  }
  const params: Record<string, unknown> = {};
  const values: unknown[] = [];
  for (const [i, k] of keys.entries()) {
    const v = after.values[i] === null ? { value: null } : coerce(k.field, after.values[i]);
    if (v.error) {
      errors.push({ field: 'cursor', error: 'does not fit this sort' });
      return;
    }
    values.push(v.value);
  }
  const eq = (i: number): string => {
    const c = col(ds, keys[i].field.column);
    if (values[i] === null) return `${c} IS NULL`;
    params[`__k${i}`] = values[i];
    return `${c} = :__k${i}`;
  };
  const later = (i: number): string | undefined => {
    if (values[i] === null) return undefined; // NULLs are last: nothing after one but equal NULLs
    const c = col(ds, keys[i].field.column);
    params[`__k${i}`] = values[i];
    return `(${c} ${keys[i].direction === 'ASC' ? '>' : '<'} :__k${i} OR ${c} IS NULL)`;
  };
  const branches: string[] = [];
  for (let i = 0; i < keys.length; i++) {
    const step = later(i);
    if (step) branches.push([...Array.from({ length: i }, (_, j) => eq(j)), step].join(' AND '));
  }
  params.__kid = after.id;
  const pkAfter = `${col(ds, entity.primaryKeyColumn)} ${pkDirection === 'ASC' ? '>' : '<'} :__kid`;
  branches.push([...keys.map((_, j) => eq(j)), pkAfter].join(' AND '));
  qb.andWhere(`(${branches.map((b) => `(${b})`).join(' OR ')})`, params);
}

/** The position of a row (its key values as read, and its id) for the next keyset page. */
export function positionOf(
  keys: readonly OrderKey[],
  row: Record<string, unknown>,
  id: number,
): KeysetPosition {
  return { values: keys.map((k) => row[k.field.name] ?? null), id };
}

export { keyField };
