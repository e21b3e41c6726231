import { Injectable } from '@nestjs/common';
import { FieldError, ValidationError } from '../../common/errors/app-error';
import type { Actor } from '../../common/request-context';
import type { KeysetPosition } from '../../records/query/record-query';
import type { RecordContext } from '../../records/record-context';
import { RecordContextFactory } from '../../records/record-context.factory';
import type { Row } from '../../records/records-read.repository';
import { AggregateRecords, RecordGroup } from '../../records/use-cases/aggregate-records';
import { ListRecords, PageRecords } from '../../records/use-cases/read-records';
import { DataviewConfigService, DataviewDefinition } from '../config/dataview-config.service';
import { DataviewCursors, invalidCursor, queryHash } from './cursor';
import { gridConfigOf } from './grid-config';
import { GridPlan, gridRow, planGrid } from './grid-query';
import type { GridRequest } from './grid-request';

/** Most groups one answer holds; a grouping with more is refused (400) rather than cut short. */
export const MAX_GROUPS = 1000;

export interface OffsetPagination {
  page: number;
  pageSize: number;
  total: number;
}

export interface CursorPagination {
  pageSize: number;
  nextCursor: string | null;
}

/** What `GET /api/v1/dataviews/{code}/data` answers: `data`, and what goes beside it (D16). */
export interface GridAnswer {
  /** Rows ({key field, column fields, lastModified}), or the groups of a groupBy. */
  data: Row[] | RecordGroup[];
  extras: {
    pagination?: OffsetPagination | CursorPagination;
    /** The columns' aggregates over the whole filtered set, by fieldCode. */
    aggregates?: Record<string, unknown>;
  };
}

/**
 * The data of a dataview (spec §4.4 rules 1-7, D30, D31), built only on the records core: the
 * dataview's configuration and the request become a RecordQuery and QueryPermissions (grid-query),
 * read with a RecordContext of the source entity — its registry entry and profile as the profile
 * loader resolves them for the caller's tenant — so tenant scope, row filter, projection and
 * masking apply exactly as on entity reads. Offset pages go through ListRecords (with its D27
 * cache, dropped by writes), keyset pages through PageRecords, aggregates and groups through
 * AggregateRecords.
 */
@Injectable()
export class ReadDataviewData {
  constructor(
    private readonly configs: DataviewConfigService,
    private readonly contexts: RecordContextFactory,
    private readonly lists: ListRecords,
    private readonly pages: PageRecords,
    private readonly aggregates: AggregateRecords,
    private readonly cursors: DataviewCursors,
  ) {}

  async execute(actor: Actor, code: string, request: GridRequest): Promise<GridAnswer> {
    const def = await this.configs.get(actor.tenantId, code);
    const ctx = await this.contexts.forSource(actor, def.sourceEntity);
    const grid = gridConfigOf(def.config);
    const plan = planGrid(grid, ctx.entity, ctx.policy, request);
    const totals =
      plan.aggregates.length > 0
        ? this.aggregates.totals(ctx, plan.query, plan.aggregates, plan.permissions)
        : Promise.resolve(undefined);

    if (plan.groupBy !== undefined) {
      const [result, all] = await Promise.all([
        this.aggregates.groups(
          ctx,
          plan.query,
          { field: plan.groupBy, label: 'groupBy' },
          plan.aggregates,
          MAX_GROUPS,
          plan.permissions,
        ),
        totals,
      ]);
      if (result.more)
        throw new ValidationError('Invalid query', [
          { field: 'groupBy', error: `makes more than ${MAX_GROUPS} groups; filter first` },
        ]);
      return { data: result.groups, extras: all ? { aggregates: all.aggregates } : {} };
    }

    const [rows, all] = await Promise.all([
      plan.pagination === 'cursor'
        ? this.keysetPage(ctx, def, plan, request.cursor)
        : this.offsetPage(ctx, plan),
      totals,
    ]);
    return {
      data: rows.data,
      extras: { pagination: rows.pagination, ...(all ? { aggregates: all.aggregates } : {}) },
    };
  }

  /** Rule 4: offset = page * pageSize; the total counts the whole filtered set. */
  private async offsetPage(
    ctx: RecordContext,
    plan: GridPlan,
  ): Promise<{ data: Row[]; pagination: OffsetPagination }> {
    // The plan already holds the query to the dataview's narrower permissions; ListRecords checks
    // it again against the profile's (visible, unmasked fields), a superset.
    const result = await this.lists.execute(ctx, {
      ...plan.query,
      page: { kind: 'offset', limit: plan.pageSize, skip: plan.page * plan.pageSize },
    });
    return {
      data: result.records.map((r) => gridRow(r, plan.rowFields)),
      pagination: { page: plan.page, pageSize: plan.pageSize, total: result.total },
    };
  }

  /**
   * D31: keyset pages on (sort keys, primary key), so no row is skipped or repeated when rows are
   * inserted or deleted between pages. A full page is followed by a one-row look-ahead, so that the
   * last page answers `nextCursor: null` even when it is exactly full.
   */
  private async keysetPage(
    ctx: RecordContext,
    def: DataviewDefinition,
    plan: GridPlan,
    cursor: string | undefined,
  ): Promise<{ data: Row[]; pagination: CursorPagination }> {
    const scope = {
      dataview: def.code,
      tenantId: ctx.tenantId,
      queryHash: queryHash([
        def.id,
        def.version,
        def.sourceEntity,
        plan.query.filters.map((f) => [f.field, f.operator, f.value ?? null]),
        plan.query.sort,
        plan.query.search ?? null,
      ]),
    };
    const after = cursor === undefined ? undefined : this.cursors.decode(cursor, scope);
    const page = (limit: number, from: KeysetPosition | undefined) =>
      this.pages
        .page(ctx, { ...plan.query, page: { kind: 'keyset', limit, after: from } }, plan.permissions)
        .catch((err: unknown) => {
          // A signed position that no longer fits the sort (it cannot, unless the registry changed).
          const details = err instanceof ValidationError ? (err.details as FieldError[] | null) : null;
          if (Array.isArray(details) && details.length > 0 && details.every((d) => d.field === 'cursor'))
            throw invalidCursor();
          throw err;
        });
    const current = await page(plan.pageSize, after);
    let next = current.next;
    if (next && (await page(1, next)).records.length === 0) next = null;
    return {
      data: current.records.map((r) => gridRow(r, plan.rowFields)),
      pagination: { pageSize: plan.pageSize, nextCursor: next ? this.cursors.encode(next, scope) : null },
    };
  }
}
