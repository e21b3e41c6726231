import { Inject, Injectable } from '@nestjs/common';
import { ValidationError } from '../../common/errors/app-error';
import type { Actor } from '../../common/request-context';
import { RecordContextFactory } from '../../records/record-context.factory';
import type { Row } from '../../records/records-read.repository';
import { AggregateRecords } from '../../records/use-cases/aggregate-records';
import { PageRecords } from '../../records/use-cases/read-records';
import type { EntityInfo } from '../../registry/registry.types';
import { DataviewConfigService } from '../config/dataview-config.service';
import { EXPORT_STORE, type ExportStore } from '../download/export-store';
import { gridConfigOf } from '../grid/grid-config';
import { kindOf, planGrid } from '../grid/grid-query';
import type { RecordContext } from '../../records/record-context';
import type { GridPlan } from '../grid/grid-query';
import { CellKind, ExportColumn, exportFilename, ExportInput, ExportMeta } from './export-model';
import type { ExportRequest } from './export-request';
import { RENDERERS } from './renderers';
import { EXPORT_RENDER_POOL, type RenderPool } from './render-pool';
import { renderInThread } from './render-session';

/** Spec §4.4 rule 8: an export holds at most this many rows (and at most the dataview's maxRows). */
export const MAX_EXPORT_ROWS = 10_000;
/** Rows per keyset batch (D48). */
export const EXPORT_BATCH_SIZE = 1_000;

export interface ExportAnswer {
  filename: string;
  downloadUrl: string;
}

/** An export checked and planned for its caller, ready to run (now, or later in a job). */
export interface PreparedExport {
  request: ExportRequest;
  ctx: RecordContext;
  plan: GridPlan;
  columns: ExportColumn[];
  limit: number;
  meta: ExportMeta;
  filename: string;
}

/** What the caller of `produce` hears while it runs. */
export interface ProduceOptions {
  /** Aborts the export (cancel, a lost lease, shutdown): nothing is kept. */
  signal: AbortSignal;
  /** Rows read so far, after each batch, and the rows the file will hold. */
  onProgress?: (processed: number, total: number) => void | Promise<void>;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function cellKind(entity: EntityInfo, fieldCode: string): CellKind {
  const field = entity.fields.find((f) => f.name === fieldCode);
  if (!field) return 'text';
  const kind = kindOf(field.type);
  return kind === 'numeric' ? 'number' : kind === 'date' || kind === 'boolean' ? kind : 'text';
}

/**
 * The export columns (spec §2.9.1): the visible columns with a fieldCode the caller may see, in
 * columnOrder (then configuration order), headed by columnName.
 */
export function exportColumns(
  config: Record<string, unknown>,
  entity: EntityInfo,
  rowFields: readonly string[],
): ExportColumn[] {
  const seen = new Set(rowFields);
  const raw = Array.isArray(config.columns) ? (config.columns as unknown[]) : [];
  return raw
    .map((c, index) => ({ c, index }))
    .filter(
      (x): x is { c: Record<string, unknown>; index: number } =>
        isObject(x.c) &&
        typeof x.c.fieldCode === 'string' &&
        x.c.isVisible !== false &&
        seen.has(x.c.fieldCode),
    )
    .sort((a, b) => {
      const oa = typeof a.c.columnOrder === 'number' ? a.c.columnOrder : Number.MAX_SAFE_INTEGER;
      const ob = typeof b.c.columnOrder === 'number' ? b.c.columnOrder : Number.MAX_SAFE_INTEGER;
      return oa - ob || a.index - b.index;
    })
    .map(({ c }) => {
      const fieldCode = c.fieldCode as string;
      const width = typeof c.columnWidth === 'number' && c.columnWidth > 0 ? c.columnWidth : null;
      return {
        fieldCode,
        header: typeof c.columnName === 'string' && c.columnName !== '' ? c.columnName : fieldCode,
        widthPx: width,
        kind: cellKind(entity, fieldCode),
      };
    });
}

/**
 * POST /api/v1/dataviews/{code}/export (spec §4.4 rule 8, D32, D48): the dataview's rows under the
 * request's filters, sort and search — planned exactly as the data route plans them — read through
 * the records core in keyset batches (so with the same scope, row filter, projection and masking),
 * at most min(source.maxRows, 10,000), rendered as CSV, XLSX or PDF into the export store.
 *
 * In two steps (issue 21 #1): `prepare` checks and plans the export for its caller (the route
 * runs it, so a bad request is refused at once; the export job runs it again, as the user is
 * now); `produce` reads the rows on the main thread and renders them in a render thread.
 */
@Injectable()
export class ExportDataview {
  constructor(
    private readonly configs: DataviewConfigService,
    private readonly contexts: RecordContextFactory,
    private readonly pages: PageRecords,
    private readonly aggregates: AggregateRecords,
    @Inject(EXPORT_STORE) private readonly store: ExportStore,
    @Inject(EXPORT_RENDER_POOL) private readonly pool: RenderPool,
  ) {}

  async prepare(actor: Actor, code: string, request: ExportRequest): Promise<PreparedExport> {
    const def = await this.configs.get(actor.tenantId, code);
    const settings = isObject(def.config.export) ? def.config.export : {};
    if (settings.enableExport !== true)
      throw new ValidationError('Invalid export request', [
        { field: 'format', error: 'export is disabled for this dataview' },
      ]);
    const formats = Array.isArray(settings.exportFormats) ? (settings.exportFormats as unknown[]) : [];
    if (!formats.includes(request.format))
      throw new ValidationError('Invalid export request', [
        {
          field: 'format',
          error: `this dataview exports ${formats.filter((f) => typeof f === 'string').join(', ') || 'nothing'}`,
        },
      ]);

    // The one access decision: read, and export as the role's `export:dataview` grants it.
    const ctx = await this.contexts.forSource(actor, def.sourceEntity, 'export');
    const grid = gridConfigOf(def.config);
    const plan = planGrid(grid, ctx.entity, ctx.policy, request.grid);
    const now = new Date();
    const meta: ExportMeta = {
      dataviewCode: def.code,
      dataviewName:
        typeof def.config.dataviewName === 'string' ? def.config.dataviewName : (def.description ?? def.code),
      filters: plan.query.filters.map((f) => ({
        fieldCode: f.field,
        operator: f.operator,
        ...(f.value === undefined ? {} : { value: f.value }),
      })),
      sort: plan.query.sort.map((s) => ({ fieldCode: s.field, direction: s.direction })),
      search: plan.query.search?.text ?? null,
      exportedBy: actor.user.email,
      exportedAt: now,
    };
    return {
      request,
      ctx,
      plan,
      columns: exportColumns(def.config, ctx.entity, plan.rowFields),
      limit: Math.min(grid.maxRows, MAX_EXPORT_ROWS),
      meta,
      filename: exportFilename(
        typeof settings.exportFilename === 'string' ? settings.exportFilename : undefined,
        def.code,
        now,
        RENDERERS[request.format].extension,
      ),
    };
  }

  /** Reads, renders (in a render thread) and stores the export; its download URL. */
  async produce(prepared: PreparedExport, options: ProduceOptions): Promise<ExportAnswer> {
    const { ctx, plan, limit, request } = prepared;
    const { signal, onProgress } = options;
    const total = Math.min(
      limit,
      (await this.aggregates.totals(ctx, plan.query, [], plan.permissions)).count,
    );
    await onProgress?.(0, total);
    const pages = this.pages;
    async function* batches(): AsyncGenerator<Row[]> {
      let left = limit;
      let read = 0;
      const size = Math.min(EXPORT_BATCH_SIZE, limit);
      for await (const batch of pages.stream(ctx, plan.query, size, plan.permissions)) {
        signal.throwIfAborted();
        const rows = batch.length > left ? batch.slice(0, left) : batch;
        read += rows.length;
        await onProgress?.(read, Math.max(total, read));
        yield rows;
        left -= batch.length;
        if (left <= 0) return;
      }
    }
    const input: ExportInput = {
      columns: prepared.columns,
      batches: batches(),
      meta: prepared.meta,
      written: { rows: 0 },
      ...(plan.aggregates.length > 0
        ? {
            aggregates: async () =>
              (await this.aggregates.totals(ctx, plan.query, plan.aggregates, plan.permissions)).aggregates,
          }
        : {}),
    };
    const renderer = RENDERERS[request.format];
    const id = await this.store.save(
      {
        tenantId: ctx.tenantId,
        filename: prepared.filename,
        contentType: renderer.contentType,
        createdBy: ctx.user.userId,
        kind: 'export',
      },
      (out) => renderInThread(this.pool, request.format, input, out, signal),
    );
    return { filename: prepared.filename, downloadUrl: `/api/v1/downloads/${id}` };
  }
}
