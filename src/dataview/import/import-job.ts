import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import { stringify } from 'csv-stringify';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  AppError,
  AuthorizationError,
  ConflictError,
  NotFoundError,
  ValidationError,
} from '../../common/errors/app-error';
import type { AppConfig } from '../../config/config.schema';
import { InjectConfig } from '../../config/inject-config.decorator';
import type { ClaimedJob, JobHandler, JobRun } from '../../jobs/job.types';
import { JobWorker } from '../../jobs/job-worker';
import type { FieldDef } from '../../registry/registry.types';
import { writableFieldNames } from '../../profile/policy/masking';
import type { MaskKind } from '../../profile/policy/policy.types';
import type { RecordContext } from '../../records/record-context';
import { RecordContextFactory } from '../../records/record-context.factory';
import { BulkRecords, type BulkRowInput, type BulkRowOutcome } from '../../records/use-cases/bulk-records';
import { ListRecords, ReadRecord } from '../../records/use-cases/read-records';
import { expectedToken, LAST_MODIFIED_KEY } from '../../records/concurrency-token';
import type { Row } from '../../records/records-read.repository';
import { assertCanPerform } from '../../profile/access/can-perform';
import { TenantLookupService } from '../../tenant/tenant-lookup.service';
import { isTenantActive } from '../../tenant/tenants.repository';
import { EXPORT_STORE, type ExportStore } from '../download/export-store';
import { type Cell, fileRows, type ImportFormat, unprefixed } from './import-file';

export const IMPORT_JOB_KIND = 'entity.import';
export const IMPORT_FEATURES = ['import'] as const;
/** Rows written per transaction when failed rows are skipped. */
const BATCH_ROWS = 500;
/** Errors kept in the job's answer. */
const MAX_ERRORS = 100;

export interface ImportJobInput {
  entityCode: string;
  fileId: string;
  format: ImportFormat;
  mode: 'create' | 'upsert';
  /** upsert: the unique field (or `id`) that finds the record a row updates. */
  key?: string;
  dryRun: boolean;
  onError: 'abort' | 'skip';
  mapping: Record<string, string | null>;
}

export interface ImportRowError {
  row: number;
  field: string | null;
  error: string;
}

export interface ImportResult {
  total: number;
  created: number;
  updated: number;
  skipped: number;
  failed: number;
  errors: ImportRowError[];
  ignoredColumns: string[];
  errorFileUrl?: string;
}

export function importJobInput(value: unknown): ImportJobInput {
  const v = (value ?? {}) as Partial<ImportJobInput>;
  if (typeof v.entityCode !== 'string' || typeof v.fileId !== 'string')
    throw new ValidationError('Invalid import job', [{ field: 'entityCode', error: 'is missing' }]);
  return {
    entityCode: v.entityCode,
    fileId: v.fileId,
    format: v.format === 'xlsx' ? 'xlsx' : 'csv',
    mode: v.mode === 'upsert' ? 'upsert' : 'create',
    ...(typeof v.key === 'string' ? { key: v.key } : {}),
    dryRun: v.dryRun === true,
    onError: v.onError === 'skip' ? 'skip' : 'abort',
    mapping: v.mapping ?? {},
  };
}

/** Case-blind, blind to spaces, dashes and underscores: "Customer Name" matches customer_name. */
function loose(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9]/g, '');
}

/** The field each column of the header feeds (null: ignored), by the mapping or by name. */
function columnsOf(
  header: Cell[],
  ctx: RecordContext,
  mapping: Record<string, string | null>,
): { targets: Array<FieldDef | null>; ignored: string[] } {
  const names = new Set(writableFieldNames(ctx.policy, ctx.entity.fields));
  const writable = ctx.entity.fields.filter((f) => names.has(f.name));
  const mapped = new Map(Object.entries(mapping).map(([k, v]) => [loose(k), v]));
  const ignored: string[] = [];
  const used = new Set<string>();
  const targets = header.map((h) => {
    const name = h === null ? '' : String(h).trim();
    const explicit = mapped.get(loose(name));
    const want = explicit === undefined ? name : explicit;
    const field = want
      ? writable.find((f) => (explicit ? f.name === want : loose(f.name) === loose(want)))
      : undefined;
    if (explicit && !field)
      throw new ValidationError('Validation failed', [
        { field: `mapping.${name}`, error: `names no writable field of the entity: ${explicit}` },
      ]);
    if (!field || used.has(field.name)) {
      if (name) ignored.push(name);
      return null;
    }
    used.add(field.name);
    return field;
  });
  if (targets.every((t) => t === null))
    throw new ValidationError('Validation failed', [
      { field: 'file', error: 'no column of the header names a writable field' },
    ]);
  return { targets, ignored };
}

/** What masking (D43) shows instead of a value, by kind: such a cell is never stored as data. */
const MASKED_SHAPES: Record<MaskKind, RegExp> = {
  hash: /^sha256:[0-9a-f]{16}$/,
  mask: /^\*+$/,
  redact: /^$/,
  partial: /^(\*+[^*]{0,4}|[^*]\*\*\*@.+)$/,
};

/** A cell as the field's value (undefined: left out, the field's default applies). */
function valueOf(field: FieldDef, cell: Cell, masked: MaskKind | undefined): unknown {
  if (cell === null) return undefined;
  if (cell instanceof Date) return cell.toISOString().slice(0, field.type === 'date' ? 10 : undefined);
  if (typeof cell !== 'string') return cell;
  const text = unprefixed(cell);
  if (text === '') return undefined;
  // D43: a masked field's cell as an export showed it is left out, never written as the value.
  if (masked && MASKED_SHAPES[masked].test(text)) return undefined;
  switch (field.type) {
    case 'integer':
    case 'numeric':
      return /^\s*-?\d+(\.\d+)?\s*$/.test(text) ? Number(text) : text;
    case 'boolean': {
      const t = text.trim().toLowerCase();
      if (['true', '1', 'yes'].includes(t)) return true;
      if (['false', '0', 'no'].includes(t)) return false;
      return text;
    }
    case 'json':
      try {
        return JSON.parse(text) as unknown;
      } catch {
        return text;
      }
    case 'text':
    case 'email':
    case 'date':
    case 'select':
      return text;
  }
}

/** upsert: the key must be `id` or a unique field the caller may write. */
export function upsertKey(ctx: RecordContext, key: string | undefined): string {
  if (key === 'id') return key;
  const field = ctx.entity.fields.find((f) => f.name === key);
  if (!field || !field.unique || field.hidden)
    throw new ValidationError('Validation failed', [
      { field: 'key', error: 'must be id or a unique field of the entity' },
    ]);
  return field.name;
}

/** The column of the header that holds the key (by the mapping or by name); -1 when none. */
function keyColumn(header: Cell[], key: string, mapping: Record<string, string | null>): number {
  const mapped = new Map(Object.entries(mapping).map(([k, v]) => [loose(k), v]));
  return header.findIndex((h) => {
    const name = h === null ? '' : String(h).trim();
    const explicit = mapped.get(loose(name));
    return explicit ? explicit === key : loose(name) === loose(key);
  });
}

function cellNumber(cell: Cell): number | undefined {
  if (typeof cell === 'number') return cell;
  if (typeof cell === 'string' && /^\s*\d+\s*$/.test(cell)) return Number(cell);
  return undefined;
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

interface Pending {
  row: number;
  cells: Cell[];
  body: Record<string, unknown>;
  /** upsert: the key's value in this row (undefined when the cell is empty). */
  key?: unknown;
}

/**
 * An import as a job (D53). The worker rebuilds the caller from the ids the job keeps, reads the
 * stored file twice as a stream — first to count its rows and check it (a bad file or too many
 * rows fails the job before anything is written), then to write — and sends the rows through the
 * bulk write path (the create use case's own checks, each row in a savepoint): `abort` writes the
 * file in one transaction (any failing row and nothing is written), `skip` in batches of 500 rows
 * whose failing rows are reported and left out. A dry run rolls every batch back.
 */
@Injectable()
export class ImportJob implements JobHandler, OnModuleInit {
  readonly kind = IMPORT_JOB_KIND;
  readonly concurrency = 1;
  readonly maxAttempts = 3;

  constructor(
    @InjectConfig() private readonly config: AppConfig,
    private readonly worker: JobWorker,
    private readonly tenants: TenantLookupService,
    private readonly contexts: RecordContextFactory,
    private readonly bulk: BulkRecords,
    private readonly lists: ListRecords,
    private readonly reads: ReadRecord,
    @Inject(EXPORT_STORE) private readonly store: ExportStore,
  ) {}

  onModuleInit(): void {
    this.worker.register(this);
  }

  async run(job: ClaimedJob, run: JobRun): Promise<ImportResult> {
    const input = importJobInput(job.input);
    // A claim after an earlier one (its instance stopped or shut down): batches of that run may have
    // committed, and a row is never written twice, so a writing import is not run again (a dry run is).
    const resumed = job.startedAt !== null && job.startedAt !== job.updatedAt;
    if (resumed && !input.dryRun)
      throw new ConflictError(
        'The import was interrupted (its instance stopped) and part of it may have been written; it is not run again. Check the records and import the remaining rows',
        null,
        'illegal_state',
      );
    const requestId = job.requestId ?? `job-${job.id}`;
    const tenant = await this.tenants.findById(job.tenantId);
    if (!tenant || !isTenantActive(tenant)) throw new AuthorizationError('Tenant is not active');
    if (tenant.features.import === false)
      throw new AuthorizationError('Feature import is disabled for this tenant', 'FEATURE_DISABLED');
    if (job.createdBy === null) throw new AuthorizationError('The import has no user to act as');
    const ctx = await this.contexts.fromIds({
      tenantId: job.tenantId,
      userId: job.createdBy,
      requestId,
      entityCode: input.entityCode,
    });

    const key = input.mode === 'upsert' ? upsertKey(ctx, input.key) : null;
    if (key) assertCanPerform('update', ctx);
    const total = await this.count(job, input);
    await run.progress(0, total);
    const result: ImportResult = {
      total,
      created: 0,
      updated: 0,
      skipped: 0,
      failed: 0,
      errors: [],
      ignoredColumns: [],
    };
    const failedRows: Array<{ cells: Cell[]; error: string }> = [];
    let header: Cell[] = [];
    let targets: Array<FieldDef | null> = [];
    let batch: Pending[] = [];
    let processed = 0;
    const flush = async (): Promise<void> => {
      if (batch.length === 0) return;
      const rows = batch;
      batch = [];
      const inputs: BulkRowInput[] = key
        ? await this.upsertRows(ctx, key, rows)
        : rows.map((r) => ({ operation: 'create', body: r.body }));
      const outcome = await this.bulk.execute(ctx, {
        operation: key ? 'update' : 'create',
        rows: inputs,
        cascade: false,
        allOrNone: input.onError === 'abort',
        dryRun: input.dryRun,
      });
      const updates = inputs.map((r) => r.operation === 'update');
      this.tally(
        result,
        rows,
        updates,
        outcome.rows,
        failedRows,
        input.onError === 'abort' && outcome.failed > 0,
      );
      processed += rows.length;
      await run.progress(processed, total);
    };
    for await (const line of await this.rows(job, input)) {
      if (line.row === 1) {
        header = line.cells;
        ({ targets, ignored: result.ignoredColumns } = columnsOf(header, ctx, input.mapping));
        continue;
      }
      const body: Record<string, unknown> = {};
      targets.forEach((field, i) => {
        const value = field
          ? valueOf(field, line.cells[i] ?? null, ctx.policy.masking[field.name])
          : undefined;
        if (field && value !== undefined) body[field.name] = value;
      });
      const pending: Pending = { row: line.row, cells: line.cells, body };
      if (key) {
        const at = keyColumn(header, key, input.mapping);
        const cell = at < 0 ? null : (line.cells[at] ?? null);
        pending.key = key === 'id' ? cellNumber(cell) : key in body ? body[key] : undefined;
      }
      batch.push(pending);
      if (input.onError === 'skip' && batch.length >= BATCH_ROWS) await flush();
    }
    await flush();
    if (failedRows.length > 0) result.errorFileUrl = await this.errorFile(ctx, job, header, failedRows);
    return result;
  }

  /**
   * upsert: each row's key finds the record it updates (with its current token) in the caller's
   * scope, or none and the row creates one. A row without a key value fails with that error.
   */
  private async upsertRows(ctx: RecordContext, key: string, rows: Pending[]): Promise<BulkRowInput[]> {
    const out: BulkRowInput[] = [];
    for (const r of rows) {
      // No key value: the row is a new record.
      if (r.key === undefined || r.key === null) {
        out.push({ operation: 'create', body: r.body });
        continue;
      }
      const found =
        key === 'id'
          ? await this.readOne(ctx, Number(r.key))
          : (
              await this.lists.execute(ctx, {
                filters: [{ field: key, operator: 'equals', value: r.key }],
                sort: [],
                page: { kind: 'offset', limit: 1, skip: 0 },
              })
            ).records[0];
      if (!found) out.push({ operation: 'create', body: r.body });
      else
        out.push({
          operation: 'update',
          id: Number(found.id),
          body: r.body,
          expected: expectedToken(found[LAST_MODIFIED_KEY], undefined),
        });
    }
    return out;
  }

  private async readOne(ctx: RecordContext, id: number): Promise<Row | undefined> {
    try {
      return await this.reads.execute(ctx, id);
    } catch (err) {
      if (err instanceof NotFoundError) return undefined;
      throw err;
    }
  }

  private async rows(job: ClaimedJob, input: ImportJobInput) {
    const file = await this.store.open(job.tenantId, input.fileId);
    if (!file)
      throw new ValidationError('The import file is no longer stored', [
        { field: 'file', error: 'has expired' },
      ]);
    return fileRows(input.format, file.body);
  }

  /** First pass: the data rows (a bad file fails here, before any write); beyond IMPORT_MAX_ROWS, 413. */
  private async count(job: ClaimedJob, input: ImportJobInput): Promise<number> {
    let n = 0;
    for await (const line of await this.rows(job, input)) {
      if (line.row === 1) continue;
      if (++n > this.config.imports.maxRows)
        throw new AppError(
          'PAYLOAD_TOO_LARGE',
          `The file has more than ${this.config.imports.maxRows} rows (IMPORT_MAX_ROWS)`,
        );
    }
    return n;
  }

  private tally(
    result: ImportResult,
    rows: Pending[],
    updates: boolean[],
    outcomes: BulkRowOutcome[],
    failedRows: Array<{ cells: Cell[]; error: string }>,
    rolledBack: boolean,
  ): void {
    outcomes.forEach((o, i) => {
      const row = rows[i];
      if (o.ok) {
        if (rolledBack) result.skipped++;
        else if (updates[i]) result.updated++;
        else result.created++;
        return;
      }
      result.failed++;
      const errors = errorsOf(row.row, o.error);
      for (const e of errors) if (result.errors.length < MAX_ERRORS) result.errors.push(e);
      failedRows.push({
        cells: row.cells,
        error: errors.map((e) => (e.field ? `${e.field}: ${e.error}` : e.error)).join('; '),
      });
    });
  }

  /** The failed rows as a CSV with an `error` column, in the export store (downloads route, D32). */
  private async errorFile(
    ctx: RecordContext,
    job: ClaimedJob,
    header: Cell[],
    failed: Array<{ cells: Cell[]; error: string }>,
  ): Promise<string> {
    const text = (c: Cell) => (c === null ? '' : c instanceof Date ? c.toISOString() : String(c));
    const id = await this.store.save(
      {
        tenantId: ctx.tenantId,
        filename: `${ctx.entity.code}-import-${job.id}-errors.csv`,
        contentType: 'text/csv; charset=utf-8',
        createdBy: job.createdBy ?? 0,
      },
      async (out) => {
        function* records(): Generator<string[]> {
          yield [...header.map(text), 'error'];
          for (const f of failed) yield [...f.cells.map(text), f.error];
        }
        await pipeline(Readable.from(records()), stringify({ record_delimiter: 'windows' }), out);
      },
    );
    return `/api/v1/downloads/${id}`;
  }
}
