import type { DataSource, InsertQueryBuilder, ObjectLiteral, QueryRunner, UpdateQueryBuilder } from 'typeorm';
import { dialectOf } from '../../database/dialect';
import { insertedKeyOf, returningOf } from '../../database/dialect/returning';
import type { EntityInfo } from '../../registry/registry.types';
import { ScopeRule, scopePredicates } from '../scope';

/** The statements of entity writes, built from registry identifiers; every value is a parameter. */

/**
 * INSERT INTO <table> (<columns>) VALUES (…). Columns are registry identifiers (the caller maps field
 * names); values are parameters. The new key comes back per dialect (dialect/returning.ts).
 */
export function insertRow(
  ds: DataSource,
  entity: EntityInfo,
  row: Record<string, unknown>,
  queryRunner?: QueryRunner,
): InsertQueryBuilder<ObjectLiteral> {
  // Without entity metadata the builder takes values in the order of the column list.
  const qb = ds.createQueryBuilder(queryRunner).insert().into(entity.table, Object.keys(row)).values(row);
  const returning = returningOf(dialectOf(ds.driver.options.type), entity.primaryKeyColumn, (c) =>
    ds.driver.escape(c),
  );
  if (returning) qb.returning(returning);
  return qb;
}

/** The key of the row `insertRow` inserted, from the driver's raw result. */
export function insertedId(ds: DataSource, raw: unknown): number {
  return insertedKeyOf(dialectOf(ds.driver.options.type), raw);
}

/**
 * UPDATE <table> SET … WHERE <pk> = :id AND <scope predicates> [AND <last_modified> = :expected]:
 * the scope of `scoped()` on an unaliased UPDATE. With `lastModified`, the update is a
 * compare-and-set: 0 affected rows means the row changed (or went) since it was read (D24).
 */
export function scopedUpdate(
  ds: DataSource,
  entity: EntityInfo,
  rule: ScopeRule,
  id: number,
  set: Record<string, unknown>,
  options: { queryRunner?: QueryRunner; lastModified?: { value: unknown } } = {},
): UpdateQueryBuilder<ObjectLiteral> {
  const esc = (c: string): string => ds.driver.escape(c);
  const qb = ds
    .createQueryBuilder(options.queryRunner)
    .update(entity.table)
    .set(set)
    .where(`${esc(entity.primaryKeyColumn)} = :__id`, { __id: id });
  for (const c of scopePredicates(entity, rule, esc)) qb.andWhere(c.sql, c.params);
  if (options.lastModified) {
    const lm = esc(entity.columns.lastModified);
    if (options.lastModified.value === null || options.lastModified.value === undefined)
      qb.andWhere(`${lm} IS NULL`);
    else
      qb.andWhere(`${lm} = :__expectedLastModified`, { __expectedLastModified: options.lastModified.value });
  }
  return qb;
}
