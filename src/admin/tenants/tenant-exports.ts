import { Injectable } from '@nestjs/common';
import { NotFoundError } from '../../common/errors/app-error';
import type { Actor } from '../../common/request-context';
import { publicIdOf } from '../../jobs/job-access';
import { JobsService } from '../../jobs/jobs.service';
import type { TenantExportJobDto, TenantExportStartedDto } from './tenant-lifecycle.api-docs';
import { TENANT_EXPORT_KIND, type TenantExportResult } from './tenant-export.job';
import { TenantRecords } from './tenant-records';

/** The tenant export routes' side (D58): queue the job, read it back. The job is tenant-export.job.ts. */
@Injectable()
export class TenantExports {
  constructor(
    private readonly records: TenantRecords,
    private readonly jobQueue: JobsService,
  ) {}

  /** Queues the tenant export (D58): a job of the administrator's own tenant. */
  async startExport(actor: Actor, id: string): Promise<TenantExportStartedDto> {
    const tenant = await this.records.tenant(id);
    const job = await this.jobQueue.enqueue({
      tenantId: actor.tenantId,
      kind: TENANT_EXPORT_KIND,
      createdBy: actor.user.userId,
      requestId: actor.requestId,
      input: { targetTenantId: tenant.id },
    });
    const jobId = publicIdOf(job);
    await this.records.audit(actor, 'tenant.exported', tenant.id, null, { code: tenant.code, jobId });
    return { jobId, status: job.status };
  }

  /**
   * The export job known as `jobId`, when it is one of the administrator's tenant, the caller holds
   * admin:system (job-access.ts) and it exports tenant `id`; else 404.
   */
  async exportJob(actor: Actor, id: string, jobId: string): Promise<TenantExportJobDto> {
    const job = await this.jobQueue.getVisible(
      actor.tenantId,
      jobId,
      TENANT_EXPORT_KIND,
      actor.user,
      'system',
    );
    const input = job.input as { targetTenantId?: string } | null;
    if (String(input?.targetTenantId) !== id) throw new NotFoundError('Job not found');
    const result = (job.status === 'COMPLETED' ? job.result : null) as TenantExportResult | null;
    return {
      jobId: publicIdOf(job),
      tenantId: id,
      status: job.status,
      processed: job.processed,
      ...(result ? { filename: result.filename, downloadUrl: result.downloadUrl, files: result.files } : {}),
      ...(job.status === 'FAILED' && job.error
        ? { error: { code: job.error.code, message: job.error.message } }
        : {}),
    };
  }
}
