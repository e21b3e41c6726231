import type {
  DataSource,
  InsertQueryBuilder,
  ObjectLiteral,
  QueryRunner,
  SelectQueryBuilder,
  UpdateQueryBuilder,
} from 'typeorm';
import { isSystemAdmin } from '../auth/permissions';
import { AppError, FieldError, ValidationError } from '../common/errors/app-error';
import type { AuthUser } from '../common/request-context';
import type { EntityPolicy, TenantMode } from '../profile/policy/policy.model';
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

/** One condition of a scope: SQL with named parameters only. */
export interface ScopeCondition {
  sql: string;
  params: Record<string, unknown>;
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

/**
 * The conditions `scoped()` adds — tenant, soft delete, row filter — with columns written by
 * `column`, so that SELECTs (aliased) and UPDATEs (unaliased) share one definition of the scope.
 */
export function scopeConditions(
  entity: EntityInfo,
  policy: EntityPolicy,
  ctx: QueryContext,
  column: (name: string) => string,
  mode: TenantMode = readTenantMode(entity, policy),
): ScopeCondition[] {
  const out: ScopeCondition[] = [];
  const tenantCol = column(entity.columns.tenant);
  const tenantId = Number(ctx.tenantId);
  if (mode === 'STRICT') out.push({ sql: `${tenantCol} = :__tenantId`, params: { __tenantId: tenantId } });
  else if (mode === 'OPTIONAL')
    out.push({
      sql: `(${tenantCol} = :__tenantId OR ${tenantCol} IS NULL)`,
      params: { __tenantId: tenantId },
    });
  else out.push({ sql: '1 = 1', params: {} });
  const deleted = column(entity.columns.isDeleted);
  out.push({ sql: `(${deleted} = :__notDeleted OR ${deleted} IS NULL)`, params: { __notDeleted: 0 } });
  if (policy.rowFilter) {
    const byName = new Map(entity.fields.map((f) => [f.name, f]));
    const compiled = compileRowFilter(
      policy.rowFilter,
      { tenantId: ctx.tenantId, user: userAttributes(ctx.user) },
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

/**
 * What an entity's reads select FROM (D22): its table or view; for a FUNCTION object the result of
 * calling that table-valued function without arguments, as a derived table, so the tenant, soft
 * delete and row-filter conditions apply to its rows like to a table's. PostgreSQL
 * (set-returning functions) and SQL Server (table-valued functions) have them; MariaDB/MySQL and
 * SQLite do not, and a FUNCTION entity there answers 501.
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

export interface ScopeOptions {
  /** Run on this query runner (a transaction's). */
  queryRunner?: QueryRunner;
  /** Tenant mode to apply instead of the read mode (writes: `writeTenantMode`). */
  tenantMode?: TenantMode;
}

/** SELECT … FROM <table> e WHERE <tenant> AND <not deleted> AND <row filter>. */
export function scoped(
  ds: DataSource,
  entity: EntityInfo,
  policy: EntityPolicy,
  ctx: QueryContext,
  options: ScopeOptions = {},
): SelectQueryBuilder<Record<string, unknown>> {
  const qb: SelectQueryBuilder<Record<string, unknown>> = ds
    .createQueryBuilder(options.queryRunner)
    .from(sourceOf(ds, entity), ALIAS);
  const conditions = scopeConditions(entity, policy, ctx, (c) => col(ds, c), options.tenantMode);
  conditions.forEach((c, i) => (i === 0 ? qb.where(c.sql, c.params) : qb.andWhere(c.sql, c.params)));
  return qb;
}

/**
 * Live rows of the caller's own tenant, without the row filter: what uniqueness, references and
 * dependents (D25) are checked against. Never reaches another tenant's or system-wide rows.
 */
export function tenantLiveRows(
  ds: DataSource,
  entity: EntityInfo,
  tenantId: string,
  queryRunner?: QueryRunner,
): SelectQueryBuilder<Record<string, unknown>> {
  const qb: SelectQueryBuilder<Record<string, unknown>> = ds
    .createQueryBuilder(queryRunner)
    .from(sourceOf(ds, entity), ALIAS);
  qb.where(`${col(ds, entity.columns.tenant)} = :__tenantId`, { __tenantId: Number(tenantId) });
  const deleted = col(ds, entity.columns.isDeleted);
  qb.andWhere(`(${deleted} = :__notDeleted OR ${deleted} IS NULL)`, { __notDeleted: 0 });
  return qb;
}

/**
 * INSERT INTO <table> (<columns>) VALUES (…). Columns are registry identifiers (the caller maps field
 * names); values are parameters. PostgreSQL and SQL Server return the new key with RETURNING/OUTPUT.
 */
export function insertRow(
  ds: DataSource,
  entity: EntityInfo,
  row: Record<string, unknown>,
  queryRunner?: QueryRunner,
): InsertQueryBuilder<ObjectLiteral> {
  // Without entity metadata the builder takes values in the order of the column list.
  const qb = ds.createQueryBuilder(queryRunner).insert().into(entity.table, Object.keys(row)).values(row);
  const type = ds.driver.options.type;
  if (type === 'postgres') qb.returning(entity.primaryKeyColumn);
  // T-SQL's OUTPUT clause must name the pseudo-table: a bare column is invalid on SQL Server.
  else if (type === 'mssql') qb.returning(`INSERTED.${ds.driver.escape(entity.primaryKeyColumn)}`);
  return qb;
}

/** The key of the row `insertRow` inserted, from the driver's raw result. */
export function insertedId(ds: DataSource, raw: unknown): number {
  const type = ds.driver.options.type;
  let value: unknown = raw;
  if (Array.isArray(raw)) value = (raw[0] as Record<string, unknown> | undefined) ?? undefined;
  if (value && typeof value === 'object') {
    const r = value as Record<string, unknown>;
    value = type === 'mysql' || type === 'mariadb' ? r.insertId : Object.values(r)[0];
  }
  const id = Number(typeof value === 'bigint' ? value.toString() : value);
  if (!Number.isSafeInteger(id)) throw new Error('The database did not return the new key');
  return id;
}

/**
 * UPDATE <table> SET … WHERE <pk> = :id AND <tenant> AND <not deleted> AND <row filter>
 * [AND <last_modified> = :expected]: the scope of `scoped()` (in the write tenant mode) on an
 * unaliased UPDATE. With `lastModified`, the update is a compare-and-set: 0 affected rows means the
 * row changed (or went) since it was read (D24).
 */
export function scopedUpdate(
  ds: DataSource,
  entity: EntityInfo,
  policy: EntityPolicy,
  ctx: QueryContext,
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
  const mode = writeTenantMode(entity, policy, ctx.user);
  for (const c of scopeConditions(entity, policy, ctx, esc, mode)) qb.andWhere(c.sql, c.params);
  if (options.lastModified) {
    const lm = esc(entity.columns.lastModified);
    if (options.lastModified.value === null || options.lastModified.value === undefined)
      qb.andWhere(`${lm} IS NULL`);
    else
      qb.andWhere(`${lm} = :__expectedLastModified`, { __expectedLastModified: options.lastModified.value });
  }
  return qb;
}

/**
 * UPDATE <table> SET … WHERE <pk> = :id AND <tenant> = :tenantId AND <not deleted>: a row of the
 * caller's own tenant reached by a cascade (D25), where the dependent entity's profile is not loaded.
 */
export function tenantRowUpdate(
  ds: DataSource,
  entity: EntityInfo,
  tenantId: string,
  id: number,
  set: Record<string, unknown>,
  queryRunner?: QueryRunner,
): UpdateQueryBuilder<ObjectLiteral> {
  const esc = (c: string): string => ds.driver.escape(c);
  const deleted = esc(entity.columns.isDeleted);
  return ds
    .createQueryBuilder(queryRunner)
    .update(entity.table)
    .set(set)
    .where(`${esc(entity.primaryKeyColumn)} = :__id`, { __id: id })
    .andWhere(`${esc(entity.columns.tenant)} = :__tenantId`, { __tenantId: Number(tenantId) })
    .andWhere(`(${deleted} = :__notDeleted OR ${deleted} IS NULL)`, { __notDeleted: 0 });
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
