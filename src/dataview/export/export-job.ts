import { Injectable, OnModuleInit } from '@nestjs/common';
import { hasPermission } from '../../profile/access/permissions';
import { AuthorizationError, ValidationError } from '../../common/errors/app-error';
import type { TenantContext } from '../../common/request-context';
import type { AppConfig } from '../../config/config.schema';
import { InjectConfig } from '../../config/inject-config.decorator';
import type { ClaimedJob, JobHandler, JobRun } from '../../jobs/job.types';
import { JobWorker } from '../../jobs/job-worker';
import { RecordContextFactory } from '../../records/record-context.factory';
import { TenantLookupService } from '../../tenant/tenant-lookup.service';
import { isTenantActive } from '../../tenant/tenants.repository';
import { ExportAnswer, ExportDataview } from './export-dataview';
import { parseExportRequest } from './export-request';

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
    const row = await this.tenants.findById(job.tenantId);
    if (!row || !isTenantActive(row)) throw new AuthorizationError('Tenant is not active');
    if (row.features.export === false)
      throw new AuthorizationError('Feature export is disabled for this tenant', 'FEATURE_DISABLED');
    const tenant: TenantContext = { id: row.id, code: row.code, name: row.name, features: row.features };
    if (job.createdBy === null) throw new AuthorizationError('The export has no user to act as');
    const user = await this.contexts.actingUser({ tenantId: job.tenantId, userId: job.createdBy, requestId });
    if (!hasPermission(user.permissions, 'export:dataview'))
      throw new AuthorizationError('Missing permission export:dataview');
    const prepared = await this.exporter.prepare(
      tenant,
      user,
      requestId,
      input.dataviewCode,
      parseExportRequest(input.body),
    );
    return this.exporter.produce(prepared, {
      signal: run.signal,
      onProgress: (processed, total) => run.progress(processed, total),
    });
  }
}
