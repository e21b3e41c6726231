import { Module } from '@nestjs/common';
import { HealthModule } from '../health/health.module';
import { TenantModule } from '../tenant/tenant.module';
import { AuditRetentionJob } from './audit-retention.job';
import { RecordsModule } from '../records/records.module';
import { JobHolds } from './job-holds';
import { JobTransactions } from './job-transactions';
import { JobWatch } from './job-watch';
import { JobWorker } from './job-worker';
import { JobsRepository } from './jobs.repository';
import { JobsService } from './jobs.service';
import { TenantJobs } from './tenant-jobs';

/**
 * The background-job machine (ARCHITECTURE `jobs`): app_jobs, claims with leases (D49), progress,
 * cancellation, a worker that survives restarts, and a pool of worker threads (threads/) for work
 * that must stay off the event loop. Feature modules register their kinds with JobWorker and
 * queue, read and cancel jobs through JobsService. DatabaseModule is global.
 */
@Module({
  imports: [RecordsModule, HealthModule, TenantModule],
  providers: [
    JobsRepository,
    JobHolds,
    JobTransactions,
    JobWatch,
    JobWorker,
    JobsService,
    TenantJobs,
    AuditRetentionJob,
  ],
  exports: [JobsService, JobWorker, TenantJobs, AuditRetentionJob],
})
export class JobsModule {}
