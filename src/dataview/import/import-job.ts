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
import type { Row } from '../../records/records-read.repository';
import { assertCanPerform } from '../../profile/access/can-perform';
import { TenantLookupService } from '../../tenant/tenant-lookup.service';
import { isTenantActive } from '../../tenant/tenants.repository';
import { EXPORT_STORE, type ExportStore } from '../download/export-store';
import { type BatchCounts, type BatchReport, ImportBatchesRepository } from './import-batches.repository';
import { fileRows } from './import-file';
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
    // The batches an earlier claim of this job committed (none for a dry run, which commits nothing).
    const recorded = input.dryRun
      ? new Map<number, BatchCounts>()
      : await this.batches.committed(job.tenantId, job.id);
    const result: ImportResult = {
      total,
      created: 0,
      updated: 0,
      skipped: 0,
      failed: 0,
      errors: [],
      ignoredColumns: [],
    };
    // Reports of batches that commit no record (abort that failed, dry run): kept as they come.
    const unrecorded: BatchReport[] = [];
    const add = (c: BatchCounts) => {
      result.created += c.created;
      result.updated += c.updated;
      result.skipped += c.skipped;
      result.failed += c.failed;
    };
    const reader = new RowReader(ctx, input.mapping, key);
    const size = input.onError === 'skip' ? BATCH_ROWS : Infinity;
    let batch: PendingRow[] = [];
    let number = 0;
    let processed = 0;
    const flush = async (): Promise<void> => {
      if (batch.length === 0) return;
      const rows = batch;
      batch = [];
      number++;
      const done = recorded.get(number) ?? (await this.write(ctx, job, input, key, number, rows, unrecorded));
      add(done);
      processed += rows.length;
      await run.progress(processed, total);
    };
    for await (const line of await this.rows(job, input)) {
      const row = reader.read(line);
      if (!row) continue;
      batch.push(row);
      if (batch.length >= size) await flush();
    }
    await flush();
    result.ignoredColumns = reader.ignored;
    if (result.failed > 0) {
      const reports =
        unrecorded.length > 0 ? fromArray(unrecorded) : this.batches.reports(job.tenantId, job.id);
      result.errorFileUrl = await writeErrorFile(
        this.store,
        {
          tenantId: ctx.tenantId,
          filename: `${ctx.entity.code}-import-${job.id}-errors.csv`,
          createdBy: job.createdBy ?? 0,
        },
        reader.header,
        reports,
        result.errors,
      );
    }
    return result;
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
   * One batch through the bulk write path; when it commits, its idempotency record commits with it.
   * A batch another claim of the job committed meanwhile (its lease ran out while it wrote) fails on
   * the record's unique index: that claim's record stands.
   */
  private async write(
    ctx: RecordContext,
    job: ClaimedJob,
    input: ImportJobInput,
    key: string | null,
    number: number,
    rows: PendingRow[],
    unrecorded: BatchReport[],
  ): Promise<BatchCounts> {
    const inputs: BulkRowInput[] = key
      ? await this.upsertRows(ctx, key, rows)
      : rows.map((r) => ({ operation: 'create', body: r.body }));
    const updates = inputs.map((r) => r.operation === 'update');
    let outcome;
    try {
      outcome = await this.bulk.execute(ctx, {
        operation: key ? 'update' : 'create',
        rows: inputs,
        cascade: false,
        allOrNone: input.onError === 'abort',
        dryRun: input.dryRun,
        beforeCommit: async (tx, outcomes) => {
          const { counts, report } = summarize(number, rows, updates, outcomes, false);
          await this.batches.record(tx.config, ctx.tenantId, job.id, counts, report, Date.now());
        },
      });
    } catch (err) {
      const other = (await this.batches.committed(job.tenantId, job.id)).get(number);
      if (other) return other;
      throw err;
    }
    // A dry run counts what would have been written; a rolled-back abort counts its good rows skipped.
    const rolledBack = !outcome.committed && !input.dryRun;
    const { counts, report } = summarize(number, rows, updates, outcome.rows, rolledBack);
    if (!outcome.committed && counts.failed > 0) unrecorded.push(report);
    return counts;
  }

  /**
   * upsert: each row's key finds the record it updates (with its current token) in the caller's
   * scope, or none and the row creates one. A row without a key value fails with that error.
   */
  private async upsertRows(ctx: RecordContext, key: string, rows: PendingRow[]): Promise<BulkRowInput[]> {
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
}

async function* fromArray<T>(items: T[]): AsyncGenerator<T> {
  for (const item of items) yield item;
}
