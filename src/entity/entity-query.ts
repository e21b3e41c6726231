import type { DataSource, SelectQueryBuilder } from 'typeorm';
import { FieldError, ValidationError } from '../common/errors/app-error';
import type { AuthUser } from '../common/request-context';
import type { EntityPolicy } from '../profile/policy/policy.model';
import { compileRowFilter } from '../profile/policy/row-filter.compile';
import type { EntityInfo, FieldDef } from '../registry/registry.types';

/**
 * The one place that builds SQL for entity data (ARCHITECTURE). Identifiers come only from the
 * registry (EntityInfo), values only as parameters, and every query starts from `scoped()`, which
 * adds the tenant condition the policy demands, the soft-delete filter and the row filter.
 */
export interface QueryContext {
  tenantId: string;
  user: AuthUser;
}

export const ALIAS = 'e';

export function col(ds: DataSource, column: string): string {
  return `${ALIAS}.${ds.driver.escape(column)}`;
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

/** SELECT … FROM <table> e WHERE <tenant> AND <not deleted> AND <row filter>. */
export function scoped(
  ds: DataSource,
  entity: EntityInfo,
  policy: EntityPolicy,
  ctx: QueryContext,
): SelectQueryBuilder<Record<string, unknown>> {
  const qb: SelectQueryBuilder<Record<string, unknown>> = ds.createQueryBuilder().from(entity.table, ALIAS);
  const tenantCol = col(ds, entity.columns.tenant);
  const tenantId = Number(ctx.tenantId);
  // STRICT: own rows only. OPTIONAL: own rows and system-wide (NULL) rows. PERMISSIVE: no tenant
  // clause, and only for system-maintained entities; a tenant-maintained entity is treated as
  // OPTIONAL, so a profile can never open one tenant's rows to another.
  const mode =
    policy.tenantMode === 'PERMISSIVE' && entity.maintainedBy !== 'system' ? 'OPTIONAL' : policy.tenantMode;
  if (mode === 'STRICT') qb.where(`${tenantCol} = :__tenantId`, { __tenantId: tenantId });
  else if (mode === 'OPTIONAL')
    qb.where(`(${tenantCol} = :__tenantId OR ${tenantCol} IS NULL)`, { __tenantId: tenantId });
  else qb.where('1 = 1');
  const deleted = col(ds, entity.columns.isDeleted);
  qb.andWhere(`(${deleted} = :__notDeleted OR ${deleted} IS NULL)`, { __notDeleted: 0 });
  if (policy.rowFilter) {
    const byName = new Map(entity.fields.map((f) => [f.name, f]));
    const compiled = compileRowFilter(
      policy.rowFilter,
      { tenantId: ctx.tenantId, user: userAttributes(ctx.user) },
      (field) => {
        const f = byName.get(field);
        return f ? col(ds, f.column) : undefined;
      },
      '__rf',
    );
    qb.andWhere(`(${compiled.sql})`, compiled.params);
  }
  return qb;
}

/** Selects the given fields under their API names. */
export function selectFields(
  ds: DataSource,
  qb: SelectQueryBuilder<Record<string, unknown>>,
  fields: FieldDef[],
): void {
  qb.select(col(ds, fields[0].column), fields[0].name);
  for (const f of fields.slice(1)) qb.addSelect(col(ds, f.column), f.name);
}

/** A request value coerced to the field's type, or a field error (never concatenated into SQL). */
export function coerce(field: FieldDef, raw: unknown): { value?: unknown; error?: string } {
  if (raw === null) return { value: null };
  const s =
    typeof raw === 'string'
      ? raw
      : typeof raw === 'number' || typeof raw === 'boolean'
        ? String(raw)
        : undefined;
  if (s === undefined) return { error: 'must be a scalar value' };
  switch (field.type) {
    case 'integer':
      return /^-?\d{1,15}$/.test(s) ? { value: Number(s) } : { error: 'must be an integer' };
    case 'numeric':
      return s.trim() !== '' && Number.isFinite(Number(s))
        ? { value: Number(s) }
        : { error: 'must be a number' };
    case 'boolean':
      return ['true', '1'].includes(s)
        ? { value: 1 }
        : ['false', '0'].includes(s)
          ? { value: 0 }
          : { error: 'must be true or false' };
    case 'date':
      return /^\d{4}-\d{2}-\d{2}$/.test(s) && !Number.isNaN(Date.parse(s))
        ? { value: s }
        : { error: 'must be a date (YYYY-MM-DD)' };
    case 'json':
      return { error: 'cannot be filtered on' };
    case 'text':
    case 'email':
    case 'select':
      return s.length <= 1000 ? { value: s } : { error: 'is too long' };
  }
}

export interface ListQuery {
  filters: Record<string, unknown>;
  limit: number;
  skip: number;
  sortBy?: string;
  sortOrder: 'asc' | 'desc';
}

/**
 * Adds `filters[field]=value` equality conditions and the sort. Only fields the policy lets the
 * caller see unmasked may be filtered or sorted on (no oracle on hidden data).
 */
export function applyListQuery(
  ds: DataSource,
  qb: SelectQueryBuilder<Record<string, unknown>>,
  entity: EntityInfo,
  filterable: Set<string>,
  query: ListQuery,
): void {
  const errors: FieldError[] = [];
  let i = 0;
  for (const [name, raw] of Object.entries(query.filters)) {
    const field = entity.fields.find((f) => f.name === name);
    if (!field || !filterable.has(name)) {
      errors.push({ field: `filters[${name}]`, error: 'unknown or not filterable field' });
      continue;
    }
    const c = coerce(field, raw);
    if (c.error) {
      errors.push({ field: `filters[${name}]`, error: c.error });
      continue;
    }
    const param = `__f${i++}`;
    if (c.value === null) qb.andWhere(`${col(ds, field.column)} IS NULL`);
    else qb.andWhere(`${col(ds, field.column)} = :${param}`, { [param]: c.value });
  }
  let sortColumn = col(ds, entity.primaryKeyColumn);
  if (query.sortBy !== undefined) {
    const field = entity.fields.find((f) => f.name === query.sortBy);
    if (!field || !filterable.has(field.name))
      errors.push({ field: 'sortBy', error: 'unknown or not sortable field' });
    else sortColumn = col(ds, field.column);
  }
  if (errors.length > 0) throw new ValidationError('Invalid query', errors);
  const direction = query.sortOrder === 'desc' ? 'DESC' : 'ASC';
  qb.orderBy(sortColumn, direction);
  // A stable order for paging: ties broken by the primary key.
  if (sortColumn !== col(ds, entity.primaryKeyColumn))
    qb.addOrderBy(col(ds, entity.primaryKeyColumn), direction);
}
