import { Module } from '@nestjs/common';
import { HealthModule } from '../health/health.module';
import { JobsModule } from '../jobs/jobs.module';
import { RecordsModule } from '../records/records.module';
import { DeliveriesRepository } from './deliveries.repository';
import { EventsPurgeJob } from './events-purge.job';

/**
 * Events out (D54): the outbox's retention, webhooks as tenant configuration, their relay from the
 * outbox and their signed, retried delivery. The outbox itself is the records core's
 * (src/records/outbox): every write adds its events in its own transaction.
 */
@Module({
  imports: [RecordsModule, JobsModule, HealthModule],
  providers: [DeliveriesRepository, EventsPurgeJob],
  exports: [EventsPurgeJob],
})
export class WebhooksModule {}
