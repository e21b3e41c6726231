import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import { AppError, AuthorizationError, NotFoundError, ValidationError } from '../../common/errors/app-error';
import type { AppConfig } from '../../config/config.schema';
import { InjectConfig } from '../../config/inject-config.decorator';
import type { ClaimedJob, JobHandler, JobRun } from '../../jobs/job.types';
import { JobWorker } from '../../jobs/job-worker';
import type { RecordContext } from '../../records/record-context';
import { RecordContextFactory } from '../../records/record-context.factory';
import { BulkRecords, type BulkRowInput } from '../../records/use-cases/bulk-records';
import { ListRecords, ReadRecord } from '../../records/use-cases/read-records';
import { expectedToken, LAST_MODIFIED_KEY } from '../../records/concurrency-token';
import { coerce } from '../../records/query/coerce';
import { MAX_IN_VALUES } from '../../records/query/conditions';
import { uniqueKey } from '../../records/use-cases/write-values';
import type { Row } from '../../records/records-read.repository';
import { assertCanPerform } from '../../profile/access/can-perform';
import { TenantLookupService } from '../../tenant/tenant-lookup.service';
import { isTenantActive } from '../../tenant/tenants.repository';
import { EXPORT_STORE, type ExportStore } from '../download/export-store';
import { type BatchCounts, type BatchReport, ImportBatchesRepository } from './import-batches.repository';
import { type FileRow, fileRows } from './import-file';
import { JsonLinesSpill } from '../../common/spill/json-lines-spill';
import {
  BATCH_ROWS,
  IMPORT_JOB_KIND,
  type ImportJobInput,
  importJobInput,
  type ImportResult,
} from './import-input';
import { type PendingRow, RowReader, upsertKey } from './import-rows';
import { summarize, writeErrorFile } from './import-report';

/**
 * An import as a job (D53). The worker rebuilds the caller from the ids the job keeps, reads the
 * stored file twice as a stream — first to count its rows and check it (a bad file or too many
 * rows fails the job before anything is written), then to write — and sends the rows through the
 * bulk write path (the create use case's own checks): `abort` writes the file in one transaction
 * (any failing row and nothing is written), `skip` in batches of 500 rows whose failing rows are
 * reported and left out. A dry run rolls every batch back.
 *
 * Each committed batch (the one transaction of `abort` is batch 1) writes its idempotency record
 * (app_import_batches: its counts, errors and failed rows) in its own transaction. A job claimed
 * again after its worker died (D49 leases) skips the batches recorded and writes the others, so no
 * row is written twice; the answer's counts, errors and error file come from the records.
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
    private readonly batches: ImportBatchesRepository,
    @Inject(EXPORT_STORE) private readonly store: ExportStore,
  ) {}

  onModuleInit(): void {
    this.worker.register(this);
  }

  async run(job: ClaimedJob, run: JobRun): Promise<ImportResult> {
    const input = importJobInput(job.input);
    const ctx = await this.context(job, input);
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
    const reader = new RowReader(ctx, input.mapping, key);
    // The failed rows of work that commits no record (an abort rolled back, a dry run), on disk
    // until the error file is written: a file of bad rows is never held in memory.
    const unrecorded = new JsonLinesSpill<BatchReport>('import-report-');
    try {
      const batches = batchesOf(reader, await this.rows(job, input));
      const job$: ImportRun = { ctx, job, input, key, total, run, unrecorded, processed: 0 };
      const counts =
        input.onError === 'abort'
          ? await this.writeAtOnce(job$, batches)
          : await this.writeInBatches(job$, batches);
      for (const c of counts)
        for (const k of ['created', 'updated', 'skipped', 'failed'] as const) result[k] += c[k];
      result.ignoredColumns = reader.ignored;
      if (result.failed > 0) {
        const reports =
          unrecorded.count > 0 ? flatten(unrecorded.read(1)) : this.batches.reports(job.tenantId, job.id);
        result.errorFileUrl = await writeErrorFile(
          this.store,
          {
            tenantId: ctx.tenantId,
            filename: `${ctx.entity.code}-import-${job.publicId ?? job.id}-errors.csv`,
            createdBy: job.createdBy ?? 0,
          },
          ctx,
          reader,
          reports,
          result.errors,
        );
      }
      return result;
    } finally {
      await unrecorded.dispose();
    }
  }

  /**
   * onError=skip: a transaction and an idempotency record per batch of BATCH_ROWS rows; the batches
   * an earlier claim of this job committed are read, not written (none for a dry run).
   */
  private async writeInBatches(r: ImportRun, batches: AsyncIterable<PendingRow[]>): Promise<BatchCounts[]> {
    const recorded = r.input.dryRun
      ? new Map<number, BatchCounts>()
      : await this.batches.committed(r.job.tenantId, r.job.id);
    const out: BatchCounts[] = [];
    let number = 0;
    for await (const rows of batches) {
      number++;
      out.push(recorded.get(number) ?? (await this.writeBatch(r, number, rows)));
      await this.advance(r, rows.length);
    }
    return out;
  }

  /**
   * onError=abort: the whole file in one transaction, fed to it a batch at a time (bulk session:
   * memory holds one batch, not the file); any failed row rolls everything back. Its idempotency
   * record is batch 1, committed with the rows: a claim after a commit writes nothing again.
   */
  private async writeAtOnce(r: ImportRun, batches: AsyncIterable<PendingRow[]>): Promise<BatchCounts[]> {
    const done = r.input.dryRun ? undefined : (await this.batches.committed(r.job.tenantId, r.job.id)).get(1);
    if (done) {
      for await (const rows of batches) await this.advance(r, rows.length);
      return [done];
    }
    const counts: BatchCounts = { batch: 1, rows: 0, created: 0, updated: 0, skipped: 0, failed: 0 };
    let committed: boolean;
    try {
      committed = await this.bulk.session(
        r.ctx,
        {
          operation: r.key ? 'update' : 'create',
          cascade: false,
          allOrNone: true,
          dryRun: r.input.dryRun,
          beforeCommit: async (tx) => {
            // Still this job's, its tenant still active (an erase meanwhile rolls it all back).
            await r.run.hold(tx.config);
            await this.batches.record(
              tx.config,
              r.ctx.tenantId,
              r.job.id,
              counts,
              { errors: [], failed: [] },
              Date.now(),
            );
          },
        },
        async (write) => {
          for await (const rows of batches) {
            const inputs = await this.inputsOf(r, rows);
            const outcomes = await write(inputs);
            const updates = inputs.map((i) => i.operation === 'update');
            const { counts: c, report } = summarize(1, rows, updates, outcomes, false);
            addCounts(counts, c);
            if (c.failed > 0) await r.unrecorded.add([report]);
            await this.advance(r, rows.length);
          }
        },
      );
    } catch (err) {
      const other = (await this.batches.committed(r.job.tenantId, r.job.id)).get(1);
      if (other) return [other];
      throw err;
    }
    // A dry run counts what would have been written; a rolled-back abort counts its good rows skipped.
    if (!committed && !r.input.dryRun) {
      counts.skipped += counts.created + counts.updated;
      counts.created = 0;
      counts.updated = 0;
    }
    return [counts];
  }

  private async advance(r: ImportRun, rows: number): Promise<void> {
    r.processed += rows;
    await r.run.progress(r.processed, r.total);
  }

  /** A batch's rows as the bulk write takes them: creates, or (upsert) updates of the records found. */
  private async inputsOf(r: ImportRun, rows: PendingRow[]): Promise<BulkRowInput[]> {
    return r.key
      ? this.upsertRows(r.ctx, r.key, rows)
      : rows.map((row) => ({ operation: 'create', body: row.body }));
  }

  /** The caller the job acts as, rebuilt from its ids (tenant active, feature on, user set). */
  private async context(job: ClaimedJob, input: ImportJobInput): Promise<RecordContext> {
    const tenant = await this.tenants.findById(job.tenantId);
    if (!tenant || !isTenantActive(tenant)) throw new AuthorizationError('Tenant is not active');
    if (tenant.features.import === false)
      throw new AuthorizationError('Feature import is disabled for this tenant', 'FEATURE_DISABLED');
    if (job.createdBy === null) throw new AuthorizationError('The import has no user to act as');
    return this.contexts.fromIds({
      tenantId: job.tenantId,
      userId: job.createdBy,
      requestId: job.requestId ?? `job-${job.id}`,
      entityCode: input.entityCode,
    });
  }

  /**
   * onError=skip: one batch through the bulk write path; when it commits, its idempotency record
   * commits with it. A batch another claim of the job committed meanwhile (its lease ran out while it
   * wrote) fails on the record's unique index: that claim's record stands.
   */
  private async writeBatch(r: ImportRun, number: number, rows: PendingRow[]): Promise<BatchCounts> {
    const inputs = await this.inputsOf(r, rows);
    const updates = inputs.map((i) => i.operation === 'update');
    let outcome;
    try {
      outcome = await this.bulk.execute(r.ctx, {
        operation: r.key ? 'update' : 'create',
        rows: inputs,
        cascade: false,
        allOrNone: false,
        dryRun: r.input.dryRun,
        beforeCommit: async (tx, outcomes) => {
          // Per batch: still this job's, its tenant still active (an erase stops it here).
          await r.run.hold(tx.config);
          const { counts, report } = summarize(number, rows, updates, outcomes, false);
          await this.batches.record(tx.config, r.ctx.tenantId, r.job.id, counts, report, Date.now());
        },
      });
    } catch (err) {
      const other = (await this.batches.committed(r.job.tenantId, r.job.id)).get(number);
      if (other) return other;
      throw err;
    }
    const { counts, report } = summarize(number, rows, updates, outcome.rows, false);
    if (!outcome.committed && counts.failed > 0) await r.unrecorded.add([report]);
    return counts;
  }

  /**
   * upsert: each row's key finds the record it updates (with its current token) in the caller's
   * scope, or none and the row creates one. Unique field keys are looked up MAX_IN_VALUES at a time
   * (one `in` query each, the list use case's scope and checks); ids, and a key field the caller
   * sees masked, one row at a time. A value the field cannot hold finds nothing (the row's create
   * then reports it).
   */
  private async upsertRows(ctx: RecordContext, key: string, rows: PendingRow[]): Promise<BulkRowInput[]> {
    const found = await this.findByKey(ctx, key, rows);
    return rows.map((r) => {
      const hit = r.key === undefined || r.key === null ? undefined : found.get(r);
      if (!hit) return { operation: 'create', body: r.body };
      return {
        operation: 'update',
        id: Number(hit.id),
        body: r.body,
        expected: expectedToken(hit[LAST_MODIFIED_KEY], undefined),
      };
    });
  }

  private async findByKey(
    ctx: RecordContext,
    key: string,
    rows: PendingRow[],
  ): Promise<Map<PendingRow, Row>> {
    const out = new Map<PendingRow, Row>();
    const keyed = rows.filter((r) => r.key !== undefined && r.key !== null);
    const field = ctx.entity.fields.find((f) => f.name === key);
    if (!field || ctx.policy.masking[field.name]) {
      for (const r of keyed) {
        const hit = field ? await this.listOne(ctx, key, r.key) : await this.readOne(ctx, Number(r.key));
        if (hit) out.set(r, hit);
      }
      return out;
    }
    // The values the field can hold, by their unique form (e-mail addresses compare case-blind).
    const byValue = new Map<string, PendingRow[]>();
    const valueOf = new Map<string, unknown>();
    for (const r of keyed) {
      const c = coerce(field, r.key);
      if (c.error || c.value === null || c.value === undefined) continue;
      const k = uniqueKey(field, c.value);
      byValue.set(k, [...(byValue.get(k) ?? []), r]);
      valueOf.set(k, c.value);
    }
    const values = [...byValue.keys()];
    for (let i = 0; i < values.length; i += MAX_IN_VALUES) {
      const slice = values.slice(i, i + MAX_IN_VALUES);
      const page = await this.lists.execute(ctx, {
        filters: [{ field: key, operator: 'in', value: slice.map((k) => valueOf.get(k)) }],
        sort: [],
        page: { kind: 'offset', limit: slice.length, skip: 0 },
      });
      for (const record of page.records)
        for (const r of byValue.get(uniqueKey(field, record[key])) ?? []) out.set(r, record);
    }
    return out;
  }

  private async listOne(ctx: RecordContext, key: string, value: unknown): Promise<Row | undefined> {
    const page = await this.lists.execute(ctx, {
      filters: [{ field: key, operator: 'equals', value }],
      sort: [],
      page: { kind: 'offset', limit: 1, skip: 0 },
    });
    return page.records[0];
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
    return fileRows(input.format, file.body, this.config.imports);
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
}

/** What one run of an import job carries from step to step. */
interface ImportRun {
  ctx: RecordContext;
  job: ClaimedJob;
  input: ImportJobInput;
  key: string | null;
  total: number;
  run: JobRun;
  unrecorded: JsonLinesSpill<BatchReport>;
  processed: number;
}

/** The file's data rows, BATCH_ROWS at a time. */
async function* batchesOf(reader: RowReader, lines: AsyncIterable<FileRow>): AsyncGenerator<PendingRow[]> {
  let batch: PendingRow[] = [];
  for await (const line of lines) {
    const row = reader.read(line);
    if (!row) continue;
    batch.push(row);
    if (batch.length >= BATCH_ROWS) {
      yield batch;
      batch = [];
    }
  }
  if (batch.length > 0) yield batch;
}

async function* flatten<T>(chunks: AsyncIterable<T[]>): AsyncGenerator<T> {
  for await (const chunk of chunks) yield* chunk;
}

function addCounts(into: BatchCounts, c: BatchCounts): void {
  into.rows += c.rows;
  into.created += c.created;
  into.updated += c.updated;
  into.skipped += c.skipped;
  into.failed += c.failed;
}
