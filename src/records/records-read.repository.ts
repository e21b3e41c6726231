import { LRUCache } from 'lru-cache';
import { Injectable } from '@nestjs/common';
import type { DataSource, SelectQueryBuilder } from 'typeorm';
import { FieldError, ValidationError } from '../common/errors/app-error';
import { ConnectionsService } from '../database/connections/connections.service';
import { dialectOf } from '../database/dialect';
import type { EntityInfo, FieldDef } from '../registry/registry.types';
import { tokenOf } from './concurrency-token';
import { applyConditions } from './query/conditions';
import { applyOrder, OrderKey, OrderPlan, orderPlan } from './query/ordering';
import type { QueryPermissions, RecordQuery } from './query/record-query';
import type { RecordContext } from './record-context';
import { scoped } from './query/select';
import { col, readScope, scopePredicates } from './scope';

export type Row = Record<string, unknown>;

/** A row as read: the selected fields by name (driver values), its key and its concurrency token. */
export interface ReadRow {
  fields: Row;
  id: number;
  lastModified: string | null;
}

const LM = '__lm';
const ID = '__id';
/** Distinct scopes × field lists of one entity kept at most (profiles and row filters are few). */
const MAX_STATEMENTS_PER_ENTITY = 64;

/** A page of rows and, when asked, the number of rows the query matches. */
export interface RowPage {
  rows: ReadRow[];
  total?: number;
  /** The sort keys in effect (for keyset positions). */
  keys: OrderKey[];
}

/**
 * Reads of registered entities (spec §4.3 read rules, D20-D27). Every statement starts from the
 * scope builder in the caller's read scope; filters, search and sort are added after it.
 */
@Injectable()
export class RecordsReadRepository {
  constructor(private readonly connections: ConnectionsService) {}

  /** D3: the entity's connection (the configuration database for null / 'default'). */
  dataSourceFor(entity: EntityInfo, tenantId: string): DataSource {
    return this.connections.dataSourceFor(entity.connectionCode, tenantId);
  }

  /** The scoped, filtered query (no order, no select) and its sort keys; 400 on a bad query. */
  private filtered(
    ctx: RecordContext,
    ds: DataSource,
    permissions: QueryPermissions,
    query: RecordQuery,
  ): { qb: SelectQueryBuilder<Row>; plan: OrderPlan } {
    const errors: FieldError[] = [];
    const qb = scoped(ds, ctx.entity, readScope(ctx, ctx.entity, ctx.policy));
    applyConditions(ds, qb, ctx.entity, permissions.filterable, query, errors);
    const plan = orderPlan(ctx.entity, permissions.sortable, query.sort, query.keyDirection, errors);
    if (errors.length > 0) throw new ValidationError('Invalid query', errors);
    return { qb, plan };
  }

  /** One page (offset, keyset or all) of `fields`, with the total when `withTotal`. */
  async page(
    ctx: RecordContext,
    fields: FieldDef[],
    permissions: QueryPermissions,
    query: RecordQuery,
    withTotal: boolean,
  ): Promise<RowPage> {
    const ds = this.dataSourceFor(ctx.entity, ctx.tenantId);
    const { qb, plan } = this.filtered(ctx, ds, permissions, query);
    const countQb = withTotal ? qb.clone().select('COUNT(*)', 'total') : undefined;
    const errors: FieldError[] = [];
    applyOrder(ds, qb, ctx.entity, plan, query.page, errors);
    if (errors.length > 0) throw new ValidationError('Invalid query', errors);
    this.select(ds, qb, ctx.entity, fields);
    const driverType = ds.driver.options.type;
    const page = query.page;
    const boundPage = page.kind === 'offset' && dialectOf(driverType) === 'sqlite' ? page : undefined;
    if (page.kind === 'offset' && !boundPage) qb.offset(page.skip).limit(page.limit);
    else if (page.kind === 'keyset') qb.limit(page.limit);
    const [rows, count] = await Promise.all([
      boundPage ? this.boundOffsetPage(ds, qb, boundPage.limit, boundPage.skip) : qb.getRawMany<Row>(),
      countQb ? countQb.getRawOne<{ total: unknown }>() : Promise.resolve(undefined),
    ]);
    return {
      rows: rows.map((r) => readRow(r, fields, driverType)),
      total: countQb ? Number(count?.total ?? 0) : undefined,
      keys: plan.keys,
    };
  }

  /**
   * SQLite: an offset page with LIMIT and OFFSET bound as parameters. The query builder writes
   * them into the text, so every (limit, skip) pair is a new statement to prepare, and the
   * driver's statement cache (100, first in first out) is flushed by a grid being paged through
   * (issue 29: preparing was a sixth of an uncached list's own work). Bound, one statement per
   * (filters, sort) shape is prepared once. The other drivers prepare nothing across queries.
   */
  private async boundOffsetPage(
    ds: DataSource,
    qb: SelectQueryBuilder<Row>,
    limit: number,
    skip: number,
  ): Promise<Row[]> {
    const [sql, params] = qb.getQueryAndParameters();
    return ds.query<Row[]>(`${sql} LIMIT ? OFFSET ?`, [...(params as unknown[]), limit, skip]);
  }

  /** How many rows the query matches (its filters; sort and page ignored). */
  async count(ctx: RecordContext, permissions: QueryPermissions, query: RecordQuery): Promise<number> {
    const ds = this.dataSourceFor(ctx.entity, ctx.tenantId);
    const { qb } = this.filtered(ctx, ds, permissions, query);
    const row = await qb.select('COUNT(*)', 'total').getRawOne<{ total: unknown }>();
    return Number(row?.total ?? 0);
  }

  /**
   * One record by key in the caller's read scope. The statement's text depends only on the data
   * source, the entity, the scope's predicates and the fields, so it is built by the query builder
   * once and kept (issue 14: building it was about a tenth of an uncached GET); every request still
   * builds its scope (`scopePredicates`, the one place), whose SQL is part of the key and whose
   * values are bound as parameters as the query builder would bind them.
   */
  async findById(ctx: RecordContext, fields: FieldDef[], id: number): Promise<ReadRow | undefined> {
    const ds = this.dataSourceFor(ctx.entity, ctx.tenantId);
    const rule = readScope(ctx, ctx.entity, ctx.policy);
    const conditions = scopePredicates(ctx.entity, rule, (c) => col(ds, c));
    const key = `${conditions.map((c) => c.sql).join(' AND ')}|${fields.map((f) => `${f.name}=${f.column}`).join(',')}`;
    const statements = this.byIdStatements(ds, ctx.entity);
    let sql = statements.get(key);
    if (sql === undefined) {
      const qb = scoped(ds, ctx.entity, rule).andWhere(`${col(ds, ctx.entity.primaryKeyColumn)} = :__id`, {
        __id: id,
      });
      this.select(ds, qb, ctx.entity, fields);
      sql = qb.getQuery();
      statements.set(key, sql);
    }
    const params: Record<string, unknown> = { __id: id };
    for (const c of conditions) Object.assign(params, c.params);
    const [text, bound] = ds.driver.escapeQueryWithParameters(sql, params);
    const rows = await ds.query<Row[]>(text, bound);
    const raw = rows[0];
    return raw ? readRow(raw, fields, ds.driver.options.type) : undefined;
  }

  /**
   * Whether a record exists for the caller's history (D56): in its read scope and row filter, live
   * or soft-deleted; undefined when the caller cannot see it (or it never existed).
   */
  async findForHistory(ctx: RecordContext, id: number): Promise<{ deleted: boolean } | undefined> {
    const ds = this.dataSourceFor(ctx.entity, ctx.tenantId);
    const rule = { ...readScope(ctx, ctx.entity, ctx.policy), deleted: 'include' as const };
    const raw = await scoped(ds, ctx.entity, rule)
      .andWhere(`${col(ds, ctx.entity.primaryKeyColumn)} = :__id`, { __id: id })
      .select(col(ds, ctx.entity.columns.isDeleted), 'deleted')
      .getRawOne<{ deleted: unknown }>();
    if (!raw) return undefined;
    return { deleted: raw.deleted === true || Number(raw.deleted) === 1 };
  }

  /** The by-key statements of an entity on a data source (dropped with the entity on a reload). */
  private byIdStatements(ds: DataSource, entity: EntityInfo): LRUCache<string, string> {
    let perSource = this.statements.get(entity);
    if (!perSource) {
      perSource = new WeakMap();
      this.statements.set(entity, perSource);
    }
    let statements = perSource.get(ds);
    if (!statements) {
      statements = new LRUCache({ max: MAX_STATEMENTS_PER_ENTITY });
      perSource.set(ds, statements);
    }
    return statements;
  }

  private readonly statements = new WeakMap<EntityInfo, WeakMap<DataSource, LRUCache<string, string>>>();

  /** The fields under their API names, the concurrency token and the key. */
  private select(ds: DataSource, qb: SelectQueryBuilder<Row>, entity: EntityInfo, fields: FieldDef[]): void {
    qb.select(col(ds, fields[0].column), fields[0].name);
    for (const f of fields.slice(1)) qb.addSelect(col(ds, f.column), f.name);
    qb.addSelect(col(ds, entity.columns.lastModified), LM);
    qb.addSelect(col(ds, entity.primaryKeyColumn), ID);
  }
}

function readRow(raw: Row, fields: FieldDef[], driverType: string): ReadRow {
  const out: Row = {};
  for (const f of fields) out[f.name] = raw[f.name];
  return { fields: out, id: Number(raw[ID]), lastModified: tokenOf(raw[LM], driverType) };
}
