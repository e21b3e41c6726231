import { stringify } from 'csv-stringify';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { AppError } from '../../common/errors/app-error';
import type { BulkRowOutcome } from '../../records/use-cases/bulk-records';
import type { ExportStore } from '../download/export-store';
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

/**
 * The failed rows as a CSV with an `error` column, in the export store (downloads route, D32),
 * written as the reports come (batch by batch); collects the first MAX_ERRORS errors on the way.
 */
export async function writeErrorFile(
  store: ExportStore,
  meta: { tenantId: string; filename: string; createdBy: number },
  header: Cell[],
  reports: AsyncIterable<BatchReport>,
  errors: ImportRowError[],
): Promise<string> {
  async function* records(): AsyncGenerator<string[]> {
    yield [...header.map(cellText), 'error'];
    for await (const report of reports) {
      for (const e of report.errors) if (errors.length < MAX_ERRORS) errors.push(e);
      for (const f of report.failed) yield [...f.cells, f.error];
    }
  }
  const id = await store.save({ ...meta, contentType: 'text/csv; charset=utf-8' }, async (out) => {
    await pipeline(Readable.from(records()), stringify({ record_delimiter: 'windows' }), out);
  });
  return `/api/v1/downloads/${id}`;
}
