import { Injectable } from '@nestjs/common';
import type { QueryRunner } from 'typeorm';
import { DatabaseService } from '../../database/database.service';
import { toDbTimestamp } from '../../database/dialect';
import { tenantNumber } from '../../database/raw-values';
import type { ImportRowError } from './import-input';

/** A failed row as the error file shows it: its cells as text and why it failed. */
export interface FailedRow {
  cells: string[];
  error: string;
}

/** What a committed batch reports besides its counts: its row errors and failed rows. */
export interface BatchReport {
  errors: ImportRowError[];
  failed: FailedRow[];
}

export interface BatchCounts {
  batch: number;
  rows: number;
  created: number;
  updated: number;
  skipped: number;
  failed: number;
}

const TABLE = 'app_import_batches';

function jsonOf(value: unknown): unknown {
  if (Buffer.isBuffer(value)) return JSON.parse(value.toString('utf8')) as unknown;
  if (typeof value === 'string') return JSON.parse(value) as unknown;
  return value;
}

/**
 * The idempotency records of import jobs (D53, table app_import_batches): one per committed batch,
 * inserted in the batch's own transaction (on the configuration database, with the write's audit
 * and events). Every statement names the tenant.
 */
@Injectable()
export class ImportBatchesRepository {
  constructor(private readonly database: DatabaseService) {}

  /** The batch's record, in its transaction; a second record of one batch violates the unique index. */
  async record(
    qr: QueryRunner,
    tenantId: string,
    jobId: number,
    counts: BatchCounts,
    report: BatchReport,
    now: number,
  ): Promise<void> {
    await this.database.dataSource
      .createQueryBuilder(qr)
      .insert()
      .into(TABLE, [
        'imb_tenant_id',
        'imb_job_id',
        'imb_batch',
        'imb_rows',
        'imb_created',
        'imb_updated',
        'imb_skipped',
        'imb_failed',
        'imb_report',
        'imb_created_at',
      ])
      .values({
        imb_tenant_id: tenantNumber(tenantId),
        imb_job_id: jobId,
        imb_batch: counts.batch,
        imb_rows: counts.rows,
        imb_created: counts.created,
        imb_updated: counts.updated,
        imb_skipped: counts.skipped,
        imb_failed: counts.failed,
        imb_report: report.errors.length + report.failed.length > 0 ? JSON.stringify(report) : null,
        imb_created_at: toDbTimestamp(now),
      })
      .execute();
  }

  /** The batches of a job already committed, by number. */
  async committed(tenantId: string, jobId: number): Promise<Map<number, BatchCounts>> {
    const raws = await this.database.dataSource
      .createQueryBuilder()
      .select([
        'b.imb_batch AS batch',
        'b.imb_rows AS rows_',
        'b.imb_created AS created',
        'b.imb_updated AS updated',
        'b.imb_skipped AS skipped',
        'b.imb_failed AS failed',
      ])
      .from(TABLE, 'b')
      .where('b.imb_tenant_id = :tenant AND b.imb_job_id = :job', {
        tenant: tenantNumber(tenantId),
        job: jobId,
      })
      .getRawMany<Record<string, unknown>>();
    return new Map(
      raws.map((r) => [
        Number(r.batch),
        {
          batch: Number(r.batch),
          rows: Number(r.rows_),
          created: Number(r.created),
          updated: Number(r.updated),
          skipped: Number(r.skipped),
          failed: Number(r.failed),
        },
      ]),
    );
  }

  /** The reports of a job's committed batches that have failed rows, one batch at a time, in order. */
  async *reports(tenantId: string, jobId: number): AsyncGenerator<BatchReport> {
    const where = 'b.imb_tenant_id = :tenant AND b.imb_job_id = :job AND b.imb_failed > 0';
    const params = { tenant: tenantNumber(tenantId), job: jobId };
    const batches = await this.database.dataSource
      .createQueryBuilder()
      .select('b.imb_batch', 'batch')
      .from(TABLE, 'b')
      .where(where, params)
      .orderBy('b.imb_batch', 'ASC')
      .getRawMany<{ batch: unknown }>();
    for (const { batch } of batches) {
      const raw = await this.database.dataSource
        .createQueryBuilder()
        .select('b.imb_report', 'report')
        .from(TABLE, 'b')
        .where(`${where} AND b.imb_batch = :batch`, { ...params, batch: Number(batch) })
        .getRawOne<{ report: unknown }>();
      const report = raw?.report == null ? null : (jsonOf(raw.report) as BatchReport);
      if (report) yield report;
    }
  }
}
