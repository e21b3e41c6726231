import { Module } from '@nestjs/common';
import { HealthModule } from '../health/health.module';
import { JobsModule } from '../jobs/jobs.module';
import { ProfileModule } from '../profile/profile.module';
import { RecordsModule } from '../records/records.module';
import { RegistryModule } from '../registry/registry.module';
import { DeliveriesRepository } from './deliveries.repository';
import { DeliveriesService } from './deliveries.service';
import { EventsPurgeJob } from './events-purge.job';
import { WebhookPayloads } from './webhook-payloads';
import { WebhookTelemetry } from './webhook-telemetry';
import { WebhookWorker } from './webhook-worker';
import { WebhooksController } from './webhooks.controller';
import { WebhooksRepository } from './webhooks.repository';
import { WebhooksService } from './webhooks.service';

/**
 * Events out (D54): the outbox's retention, webhooks as tenant configuration, their relay from the
 * outbox and their signed, retried delivery. The outbox itself is the records core's
 * (src/records/outbox): every write adds its events in its own transaction.
 */
@Module({
  imports: [RecordsModule, JobsModule, HealthModule, ProfileModule, RegistryModule],
  controllers: [WebhooksController],
  providers: [
    DeliveriesRepository,
    DeliveriesService,
    EventsPurgeJob,
    WebhookPayloads,
    WebhookTelemetry,
    WebhookWorker,
    WebhooksRepository,
    WebhooksService,
  ],
  exports: [EventsPurgeJob, WebhookWorker],
})
export class WebhooksModule {}
