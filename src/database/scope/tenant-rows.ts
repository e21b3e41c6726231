import type { DataSource, QueryRunner, SelectQueryBuilder } from 'typeorm';
import { tenantNumber } from '../raw-values';

/**
 * The one place that writes the predicates of tenant rows (D47, docs/architecture.md): whose rows
 * (the tenant column), live ones (the soft-delete column) and active ones (the status column).
 * Entity rows compose them with the profile's row filter (records/scope.ts); configuration rows —
 * registry, profiles, dataviews, pages, navigation, value sets, workflows, connections, webhooks —
 * with `configRows` below. Identifiers come only from code or registry metadata, values only as
 * named parameters.
 */

/** STRICT: the tenant's own rows; OPTIONAL: and system-wide (NULL) rows; PERMISSIVE: no clause. */
export type TenantMode = 'STRICT' | 'OPTIONAL' | 'PERMISSIVE';

/** One condition: SQL with named parameters only. */
export interface ScopeCondition {
  sql: string;
  params: Record<string, unknown>;
}

/** A tenant id as the number the tenant columns hold; anything else is a programming error. */
export function tenantNumberOf(tenantId: string | number): number {
  const n = tenantNumber(String(tenantId));
  if (n <= 0) throw new Error('A scope needs a tenant id');
  return n;
}

/** Whose rows: `column` (already escaped or aliased) for the tenant under `mode`. */
export function tenantPredicate(
  column: string,
  mode: TenantMode,
  tenantId: string | number,
  param = '__tenantId',
): ScopeCondition {
  const id = tenantNumberOf(tenantId);
  if (mode === 'STRICT') return { sql: `${column} = :${param}`, params: { [param]: id } };
  if (mode === 'OPTIONAL')
    return { sql: `(${column} = :${param} OR ${column} IS NULL)`, params: { [param]: id } };
  return { sql: '1 = 1', params: {} };
}

/** Live rows: the soft-delete flag false or NULL (spec §2.1). */
export function livePredicate(column: string, param = '__notDeleted'): ScopeCondition {
  return { sql: `(${column} = :${param} OR ${column} IS NULL)`, params: { [param]: 0 } };
}

/** Soft-deleted rows (D56's undelete): the flag set. */
export function deletedPredicate(column: string, param = '__deleted'): ScopeCondition {
  return { sql: `${column} = :${param}`, params: { [param]: 1 } };
}

/** Active rows: status 1, a NULL status counting as active (spec §4.3 rules 4-5). */
export function activePredicate(column: string): ScopeCondition {
  return { sql: `COALESCE(${column}, 1) = 1`, params: {} };
}

/**
 * The tenant id no tenant has: configuration read "as tenant 0" is the system-wide rows only (what
 * every tenant shares, e.g. the entities the OpenAPI document describes). Entity rows refuse it.
 */
export const SYSTEM_ONLY = '0';

/** A configuration table of spec §2.1: its name and column prefix (`obj`, `prf`, `dvc`…). */
export interface ConfigTable {
  table: string;
  prefix: string;
}

export interface ConfigRowsOptions {
  /** Also inactive rows (status 0 or -1): listings that show a row's status. Default false. */
  includeInactive?: boolean;
  /** The transaction to read in (a write checking a value set), else the pool. */
  queryRunner?: QueryRunner;
}

/** Whose configuration rows: a tenant's and the system's, the system's only, or every tenant's. */
type ConfigOwners = { tenantId: string | number } | 'system' | 'every-tenant';

function ownedConfigRows(
  ds: DataSource,
  source: ConfigTable,
  alias: string,
  owners: ConfigOwners,
  options: ConfigRowsOptions,
): SelectQueryBuilder<Record<string, unknown>> {
  const p = `${alias}.${source.prefix}`;
  const tenant =
    owners === 'system'
      ? { sql: `${p}_tenant_id IS NULL`, params: {} }
      : owners === 'every-tenant'
        ? { sql: '1 = 1', params: {} }
        : tenantPredicate(`${p}_tenant_id`, 'OPTIONAL', owners.tenantId, '__cfgTenantId');
  const live = livePredicate(`${p}_is_deleted`, '__cfgNotDeleted');
  const qb = ds
    .createQueryBuilder(options.queryRunner)
    .from(source.table, alias)
    .where(tenant.sql, tenant.params)
    .andWhere(live.sql, live.params);
  if (!options.includeInactive) qb.andWhere(activePredicate(`${p}_status`).sql);
  return qb;
}

/**
 * The configuration rows a tenant may use (D20): its own and the system-wide ones — never another
 * tenant's — live, and active unless asked otherwise. Every configuration repository starts its
 * SELECT here; the caller adds its own conditions with `andWhere` and its order (tenant rows over
 * system rows, or the system row first where a payload is merged).
 */
export function configRows(
  ds: DataSource,
  source: ConfigTable,
  alias: string,
  tenantId: string | number,
  options: ConfigRowsOptions = {},
): SelectQueryBuilder<Record<string, unknown>> {
  const owners = String(tenantId) === SYSTEM_ONLY ? 'system' : { tenantId };
  return ownedConfigRows(ds, source, alias, owners, options);
}

/** The system-wide configuration rows only (tenant NULL), live and active: what every tenant shares. */
export function systemConfigRows(
  ds: DataSource,
  source: ConfigTable,
  alias: string,
  options: ConfigRowsOptions = {},
): SelectQueryBuilder<Record<string, unknown>> {
  return ownedConfigRows(ds, source, alias, 'system', options);
}

/**
 * Every tenant's configuration rows, live and active: for the start-up work that serves all tenants
 * at once (the profile catalog, opening the external connections), never for a request's answer.
 */
export function everyTenantConfigRows(
  ds: DataSource,
  source: ConfigTable,
  alias: string,
  options: ConfigRowsOptions = {},
): SelectQueryBuilder<Record<string, unknown>> {
  return ownedConfigRows(ds, source, alias, 'every-tenant', options);
}

/** ORDER BY expression: the tenant's own rows before the system-wide ones. */
export function tenantRowsFirst(alias: string, prefix: string): string {
  return `CASE WHEN ${alias}.${prefix}_tenant_id IS NULL THEN 1 ELSE 0 END`;
}

/** ORDER BY expression: the system-wide row before the tenant's (a payload merged, tenant wins). */
export function systemRowsFirst(alias: string, prefix: string): string {
  return `CASE WHEN ${alias}.${prefix}_tenant_id IS NULL THEN 0 ELSE 1 END`;
}
