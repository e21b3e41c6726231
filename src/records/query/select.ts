import type { DataSource, QueryRunner, SelectQueryBuilder } from 'typeorm';
import { AppError } from '../../common/errors/app-error';
import type { EntityInfo } from '../../registry/registry.types';
import { ALIAS, col, ScopeRule, scopePredicates } from '../scope';

/**
 * What an entity's reads select FROM (D22): its table or view; for a FUNCTION object the result of
 * calling that table-valued function without arguments, as a derived table, so the scope applies to
 * its rows like to a table's. PostgreSQL (set-returning functions) and SQL Server (table-valued
 * functions) have them; MariaDB/MySQL and SQLite do not, and a FUNCTION entity there answers 501.
 */
export function sourceOf(ds: DataSource, entity: EntityInfo): string {
  if (entity.type !== 'FUNCTION') return entity.table;
  const dialect = ds.driver.options.type;
  if (dialect !== 'postgres' && dialect !== 'mssql')
    throw new AppError(
      'NOT_IMPLEMENTED',
      `${entity.code} is a FUNCTION object, which ${dialect} cannot serve`,
    );
  const name = entity.table
    .split('.')
    .map((part) => ds.driver.escape(part))
    .join('.');
  return `(SELECT * FROM ${name}())`;
}

/** SELECT … FROM <source> e WHERE <scope predicates>, on the transaction's runner when given. */
export function scoped(
  ds: DataSource,
  entity: EntityInfo,
  rule: ScopeRule,
  queryRunner?: QueryRunner,
): SelectQueryBuilder<Record<string, unknown>> {
  const qb: SelectQueryBuilder<Record<string, unknown>> = ds
    .createQueryBuilder(queryRunner)
    .from(sourceOf(ds, entity), ALIAS);
  const conditions = scopePredicates(entity, rule, (c) => col(ds, c));
  conditions.forEach((c, i) => (i === 0 ? qb.where(c.sql, c.params) : qb.andWhere(c.sql, c.params)));
  return qb;
}
