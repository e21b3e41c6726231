import { stringify } from 'csv-stringify';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { AppError } from '../../common/errors/app-error';
import { applyProjection, visibleFields } from '../../profile/policy/masking';
import type { RecordContext } from '../../records/record-context';
import type { BulkRowOutcome } from '../../records/use-cases/bulk-records';
import type { FieldDef } from '../../registry/registry.types';
import type { ExportStore, StoredExportMeta } from '../download/export-store';
import { QUOTED_MATCH } from '../export/csv.renderer';
import { neutralized, numberOf, textOf } from '../export/export-model';
import type { BatchCounts, BatchReport } from './import-batches.repository';
import type { Cell } from './import-file';
import { type ImportRowError, MAX_ERRORS } from './import-input';
import type { PendingRow } from './import-rows';

/** A cell as the error file writes it. */
export function cellText(c: Cell): string {
  return c === null ? '' : c instanceof Date ? c.toISOString() : String(c);
}

function errorsOf(row: number, error: AppError): ImportRowError[] {
  const details = Array.isArray(error.details)
    ? (error.details as Array<{ field?: unknown; error?: unknown }>)
    : [];
  const listed = details
    .filter((d) => typeof d?.error === 'string')
    .map((d) => ({ row, field: typeof d.field === 'string' ? d.field : null, error: String(d.error) }));
  return listed.length > 0 ? listed : [{ row, field: null, error: error.message }];
}

/**
 * A batch's outcome as counts and a report (its first errors and its failed rows): `rolledBack`
 * when an all-or-none batch was undone, its good rows then count as skipped.
 */
export function summarize(
  batch: number,
  rows: PendingRow[],
  updates: boolean[],
  outcomes: BulkRowOutcome[],
  rolledBack: boolean,
): { counts: BatchCounts; report: BatchReport } {
  const counts: BatchCounts = { batch, rows: rows.length, created: 0, updated: 0, skipped: 0, failed: 0 };
  const report: BatchReport = { errors: [], failed: [] };
  outcomes.forEach((o, i) => {
    const row = rows[i];
    if (o.ok) {
      if (rolledBack) counts.skipped++;
      else if (updates[i]) counts.updated++;
      else counts.created++;
      return;
    }
    counts.failed++;
    const errors = errorsOf(row.row, o.error);
    for (const e of errors) if (report.errors.length < MAX_ERRORS) report.errors.push(e);
    report.failed.push({
      cells: row.cells.map(cellText),
      error: errors.map((e) => (e.field ? `${e.field}: ${e.error}` : e.error)).join('; '),
    });
  });
  return { counts, report };
}

/** A column of the error file: the file's column `index`, which fed `field`. */
interface ErrorColumn {
  index: number;
  header: string;
  field: FieldDef;
}

/**
 * The columns the error file keeps (issue 34): those that fed a field the importing user may see
 * (D43: not hidden, not projected out). A column that named no field, or a field the user may not
 * see (`internal_notes` under a profile that excludes it), is left out: the file holds only what
 * its creator may read.
 */
function errorColumns(
  ctx: RecordContext,
  header: Cell[],
  fields: ReadonlyArray<FieldDef | null>,
): ErrorColumn[] {
  const visible = new Set(visibleFields(ctx.policy, ctx.entity.fields));
  const out: ErrorColumn[] = [];
  fields.forEach((field, index) => {
    if (field && visible.has(field.name)) out.push({ index, header: cellText(header[index] ?? null), field });
  });
  return out;
}

/** A shaped value as the file writes it: a number of a numeric field untouched, text neutralized (D48). */
function fileCell(field: FieldDef, value: unknown): string {
  if (value === null || value === undefined) return '';
  const text = textOf(value);
  if ((field.type === 'integer' || field.type === 'numeric') && numberOf(text) !== undefined) return text;
  return neutralized(text);
}

/**
 * A failed row as its creator may see it: the cells of the kept columns through the records core's
 * shaper (applyProjection: masked fields masked, the others as written), then D48's formula prefix.
 */
function shapedRow(ctx: RecordContext, columns: ErrorColumn[], cells: string[]): string[] {
  const record: Record<string, unknown> = {};
  for (const c of columns) {
    const cell = cells[c.index] ?? '';
    record[c.field.name] = cell === '' ? null : cell;
  }
  const shaped = applyProjection(record, ctx.policy, ctx.entity.fields);
  return columns.map((c) => fileCell(c.field, shaped[c.field.name]));
}

/** The file's columns and the field each one fed (null: ignored), as the job's RowReader read them. */
export interface ErrorFileSource {
  header: Cell[];
  columns: ReadonlyArray<FieldDef | null>;
}

/**
 * The failed rows as a CSV with an `error` column, in the export store (downloads route, D32),
 * written as the reports come (batch by batch); collects the first MAX_ERRORS errors on the way.
 * The rows are shaped by the importing user's profile (issue 34: the file is that user's, and job
 * administrators may download it) and their text cells neutralized as an export's (D48).
 */
export async function writeErrorFile(
  store: ExportStore,
  meta: Omit<StoredExportMeta, 'expiresAt' | 'kind' | 'contentType'>,
  ctx: RecordContext,
  source: ErrorFileSource,
  reports: AsyncIterable<BatchReport>,
  errors: ImportRowError[],
): Promise<string> {
  const columns = errorColumns(ctx, source.header, source.columns);
  async function* records(): AsyncGenerator<string[]> {
    yield [...columns.map((c) => neutralized(c.header)), 'error'];
    for await (const report of reports) {
      for (const e of report.errors) if (errors.length < MAX_ERRORS) errors.push(e);
      for (const f of report.failed) yield [...shapedRow(ctx, columns, f.cells), neutralized(f.error)];
    }
  }
  const contentType = 'text/csv; charset=utf-8';
  const id = await store.save({ ...meta, kind: 'import-errors', contentType }, async (out) => {
    await pipeline(
      Readable.from(records()),
      stringify({ record_delimiter: 'windows', quoted_match: QUOTED_MATCH }),
      out,
    );
  });
  return `/api/v1/downloads/${id}`;
}
