import { Injectable } from '@nestjs/common';
import { Counter, Gauge, Histogram } from 'prom-client';
import { MetricsService } from '../health/metrics.service';
import { DeliveriesRepository } from './deliveries.repository';
import { DELIVERY_STATUSES } from './webhook.types';

export type DeliveryOutcome = 'delivered' | 'retry' | 'dead' | 'refused' | 'lost';

/** Metrics of D54: deliveries by outcome, commit-to-delivery lag, attempt latency. */
@Injectable()
export class WebhookTelemetry {
  private readonly deliveries: Counter<'outcome'>;
  private readonly lag: Histogram<string>;
  private readonly attempt: Histogram<'outcome'>;
  private readonly relayed: Counter<string>;

  constructor(metrics: MetricsService, deliveries: DeliveriesRepository) {
    const registers = [metrics.registry];
    this.deliveries = new Counter({
      name: 'webhook_deliveries_total',
      help: 'Webhook delivery attempts by outcome (delivered, retry, dead, refused by the SSRF rules, lost lease)',
      labelNames: ['outcome'],
      registers,
    });
    this.lag = new Histogram({
      name: 'webhook_delivery_lag_seconds',
      help: "Time from an event's commit to its successful delivery",
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 7200],
      registers,
    });
    this.attempt = new Histogram({
      name: 'webhook_attempt_duration_seconds',
      help: 'Duration of one delivery attempt (the POST) by outcome',
      labelNames: ['outcome'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    new Gauge({
      name: 'webhook_deliveries',
      help: 'Webhook deliveries in the database by status (PENDING, DELIVERING, DELIVERED, DEAD)',
      labelNames: ['status'],
      registers,
      async collect() {
        try {
          const counts = await deliveries.countByStatus();
          for (const status of DELIVERY_STATUSES) this.set({ status }, counts[status] ?? 0);
        } catch {
          // The database is away: the scrape still answers, without this gauge's values.
        }
      },
    });
    this.relayed = new Counter({
      name: 'webhook_relayed_events_total',
      help: 'Deliveries created by the relay from outbox events',
      registers,
    });
  }

  outcome(outcome: DeliveryOutcome, attemptMs: number, lagMs?: number): void {
    this.deliveries.inc({ outcome });
    this.attempt.observe({ outcome }, attemptMs / 1000);
    if (lagMs !== undefined) this.lag.observe(lagMs / 1000);
  }

  relay(n: number): void {
    if (n > 0) this.relayed.inc(n);
  }
}
