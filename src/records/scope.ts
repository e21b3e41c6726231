import type { DataSource } from 'typeorm';
import { isSystemAdmin } from '../profile/access/permissions';
import type { AuthUser } from '../common/request-context';
import type { EntityPolicy, TenantMode } from '../profile/policy/policy.model';
import { compileRowFilter, RowFilter } from '../profile/row-filter';
import type { EntityInfo } from '../registry/registry.types';
import type { ScopeContext } from './record-context';
import {
  deletedPredicate,
  livePredicate,
  tenantPredicate,
  type ScopeCondition,
} from '../database/scope/tenant-rows';

/**
 * The one place that builds the tenant, soft-delete and row-filter predicates (D47, ARCHITECTURE):
 * every statement on tenant data — reads, counts, keyset pages, updates, deletes, cascades,
 * dependents, uniqueness and reference checks, locks — starts from `scopePredicates`. Identifiers
 * come only from the registry; values only as named parameters.
 */

export const ALIAS = 'e';

/** `e.<column>`, escaped for the dialect. */
export function col(ds: DataSource, column: string): string {
  return `${ALIAS}.${ds.driver.escape(column)}`;
}

export type { ScopeCondition };

/** Whose rows a statement may touch. */
export interface ScopeRule {
  tenantId: string;
  /** STRICT: the tenant's rows; OPTIONAL: and system-wide (NULL) rows; PERMISSIVE: no tenant clause. */
  mode: TenantMode;
  /** The profile's row filter and the user whose attributes it reads; none for integrity checks. */
  rowFilter?: { filter: RowFilter; user: AuthUser };
  /**
   * Soft-deleted rows (D56): `include` reads them with the live ones (a record's history),
   * `only` reaches deleted rows alone (an undelete). Live rows only when absent.
   */
  deleted?: 'include' | 'only';
}

/**
 * The tenant mode reads use. STRICT: own rows only. OPTIONAL: own rows and system-wide (NULL) rows.
 * PERMISSIVE: no tenant clause, and only for system-maintained entities; a tenant-maintained entity
 * is treated as OPTIONAL, so a profile can never open one tenant's rows to another.
 */
export function readTenantMode(entity: EntityInfo, policy: EntityPolicy): TenantMode {
  return policy.tenantMode === 'PERMISSIVE' && entity.maintainedBy !== 'system'
    ? 'OPTIONAL'
    : policy.tenantMode;
}

/**
 * The tenant mode writes (update, delete) use: the caller's own rows only. A system admin may also
 * reach system-wide (tenant NULL) rows when the policy is not STRICT (D21); no write ever reaches
 * another tenant's rows, whatever the policy says.
 */
export function writeTenantMode(entity: EntityInfo, policy: EntityPolicy, user: AuthUser): TenantMode {
  return isSystemAdmin(user.permissions) && readTenantMode(entity, policy) !== 'STRICT'
    ? 'OPTIONAL'
    : 'STRICT';
}

/** Reads of the caller: the read tenant mode and the profile's row filter. */
export function readScope(ctx: ScopeContext, entity: EntityInfo, policy: EntityPolicy): ScopeRule {
  return {
    tenantId: ctx.tenantId,
    mode: readTenantMode(entity, policy),
    rowFilter: policy.rowFilter ? { filter: policy.rowFilter, user: ctx.user } : undefined,
  };
}

/** Writes of the caller: its own rows (D21), through the profile's row filter. */
export function writeScope(ctx: ScopeContext, entity: EntityInfo, policy: EntityPolicy): ScopeRule {
  return { ...readScope(ctx, entity, policy), mode: writeTenantMode(entity, policy, ctx.user) };
}

/**
 * The tenant's own live rows, without a row filter: what uniqueness, references and dependents
 * (D25) are checked against, and what a cascade reaches. Never another tenant's or system-wide rows.
 */
export function tenantScope(tenantId: string): ScopeRule {
  return { tenantId, mode: 'STRICT' };
}

/** Variables a row filter may use as @user.<attr> (D23). */
function userAttributes(user: AuthUser): Record<string, string | number | boolean | null> {
  return {
    id: user.userId,
    user_id: user.userId,
    email: user.email,
    role_id: user.roleId,
    tenant_id: user.tenantId,
  };
}

/**
 * The predicates of a scope — tenant, soft delete, row filter — with columns written by `column`,
 * so that SELECTs (aliased) and UPDATEs (unaliased) share one definition. Each is a top-level AND
 * term of the statement it goes into.
 */
export function scopePredicates(
  entity: EntityInfo,
  rule: ScopeRule,
  column: (name: string) => string,
): ScopeCondition[] {
  const out: ScopeCondition[] = [];
  out.push(tenantPredicate(column(entity.columns.tenant), rule.mode, rule.tenantId));
  if (rule.deleted === 'only') out.push(deletedPredicate(column(entity.columns.isDeleted)));
  else if (rule.deleted !== 'include') out.push(livePredicate(column(entity.columns.isDeleted)));
  if (rule.rowFilter) {
    const byName = new Map(entity.fields.map((f) => [f.name, f]));
    const compiled = compileRowFilter(
      rule.rowFilter.filter,
      { tenantId: rule.tenantId, user: userAttributes(rule.rowFilter.user) },
      (field) => {
        const f = byName.get(field);
        return f ? column(f.column) : undefined;
      },
      '__rf',
    );
    out.push({ sql: `(${compiled.sql})`, params: compiled.params });
  }
  return out;
}
