import { Injectable, OnModuleInit } from '@nestjs/common';
import { AuthorizationError, ValidationError } from '../../common/errors/app-error';
import type { AppConfig } from '../../config/config.schema';
import { InjectConfig } from '../../config/inject-config.decorator';
import type { ClaimedJob, JobHandler, JobRun } from '../../jobs/job.types';
import { JobWorker } from '../../jobs/job-worker';
import { RecordContextFactory } from '../../records/record-context.factory';
import { TenantLookupService } from '../../tenant/tenant-lookup.service';
import { isTenantActive } from '../../tenant/tenants.repository';
import { ExportAnswer, ExportDataview } from './export-dataview';
import { parseExportRequest } from './export-request';

/** The tenant features an export needs (D10), checked by the route's guard and by the job. */
export const EXPORT_FEATURES = ['dataviews', 'export'] as const;

export const EXPORT_JOB_KIND = 'dataview.export';

/** What an export job keeps: the dataview and the request's body, checked again when it runs. */
export interface ExportJobInput {
  dataviewCode: string;
  body: unknown;
}

export function exportJobInput(value: unknown): ExportJobInput {
  const v = (value ?? {}) as Partial<ExportJobInput>;
  if (typeof v.dataviewCode !== 'string')
    throw new ValidationError('Invalid export job', [{ field: 'dataviewCode', error: 'is missing' }]);
  return { dataviewCode: v.dataviewCode, body: v.body };
}

/**
 * The export as a job (issue 21 #1). The worker rebuilds the caller from the ids the job keeps —
 * the tenant as it is now (active, with its features), the user as the database has it now
 * (active, with the role's `export:dataview`), the request id for the logs — and runs the same use
 * case as before: prepare (the same checks, scope, profile, masking and row filter) and produce.
 * A job whose user lost the right meanwhile fails with that 403.
 */
@Injectable()
export class ExportJob implements JobHandler, OnModuleInit {
  readonly kind = EXPORT_JOB_KIND;
  /** One export per render thread: a claimed export never waits for a thread. */
  readonly concurrency: number;
  readonly maxAttempts = 3;

  constructor(
    @InjectConfig() config: AppConfig,
    private readonly worker: JobWorker,
    private readonly tenants: TenantLookupService,
    private readonly contexts: RecordContextFactory,
    private readonly exporter: ExportDataview,
  ) {
    this.concurrency = config.exports.renderThreads;
  }

  onModuleInit(): void {
    this.worker.register(this);
  }

  async run(job: ClaimedJob, run: JobRun): Promise<ExportAnswer> {
    const input = exportJobInput(job.input);
    const requestId = job.requestId ?? `job-${job.id}`;
    // The route's guards ran when the job was queued; the tenant and its features are checked again
    // as they are now, and prepare takes the access decision again as the user is now.
    const row = await this.tenants.findById(job.tenantId);
    if (!row || !isTenantActive(row)) throw new AuthorizationError('Tenant is not active');
    const disabled = EXPORT_FEATURES.find((f) => row.features[f] === false);
    if (disabled)
      throw new AuthorizationError(`Feature ${disabled} is disabled for this tenant`, 'FEATURE_DISABLED');
    if (job.createdBy === null) throw new AuthorizationError('The export has no user to act as');
    const actor = await this.contexts.actorFromIds({
      tenantId: job.tenantId,
      userId: job.createdBy,
      requestId,
    });
    const prepared = await this.exporter.prepare(actor, input.dataviewCode, parseExportRequest(input.body));
    return this.exporter.produce(prepared, {
      signal: run.signal,
      onProgress: (processed, total) => run.progress(processed, total),
    });
  }
}
