import { Injectable, Logger } from '@nestjs/common';
import { Counter, Gauge, Histogram } from 'prom-client';
import { MetricsService } from '../health/metrics.service';
import { QueueRepository } from './queue/queue.repository';

/** The structured log events of issue 12 #7 (spec §6: `workflow.started` and the others). */
export type WorkflowEvent =
  | 'workflow.started'
  | 'workflow.paused'
  | 'workflow.resumed'
  | 'workflow.cancelled'
  | 'workflow.completed'
  | 'workflow.failed'
  | 'workflow.approved'
  | 'workflow.rejected';

export interface WorkflowEventFields {
  tenantId: string;
  userId: number | null;
  instanceId: number;
  workflowCode: string;
  [key: string]: unknown;
}

/**
 * Workflow events as structured log lines (with tenantId, userId and the instance id; the
 * async-local scope adds requestId) and the metrics: queue depth by status, step latency, step
 * outcomes and retries, by step type.
 */
@Injectable()
export class WorkflowTelemetry {
  private readonly logger = new Logger('Workflow');
  private readonly latency: Histogram<'type' | 'outcome'>;
  private readonly steps: Counter<'type' | 'outcome'>;
  private readonly retries: Counter<'type'>;

  constructor(metrics: MetricsService, queue: QueueRepository) {
    const registers = [metrics.registry];
    this.latency = new Histogram({
      name: 'workflow_step_duration_seconds',
      help: 'Workflow step latency (claim to commit) by step type and outcome',
      labelNames: ['type', 'outcome'],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.steps = new Counter({
      name: 'workflow_steps_total',
      help: 'Workflow steps run, by step type and outcome (completed, waiting, retry, failed, aborted)',
      labelNames: ['type', 'outcome'],
      registers,
    });
    this.retries = new Counter({
      name: 'workflow_step_retries_total',
      help: 'Workflow step retries scheduled, by step type',
      labelNames: ['type'],
      registers,
    });
    new Gauge({
      name: 'workflow_queue_depth',
      help: 'Rows in wft_queue by status (ready, leased, held)',
      labelNames: ['status'],
      registers,
      async collect() {
        try {
          const depth = await queue.depth();
          for (const [status, n] of Object.entries(depth)) this.set({ status }, n);
        } catch {
          // The database is down: the gauge keeps its last values; /health/db says why.
        }
      },
    });
  }

  event(event: WorkflowEvent, fields: WorkflowEventFields): void {
    if (event === 'workflow.failed') this.logger.warn({ event, ...fields }, event);
    else this.logger.log({ event, ...fields }, event);
  }

  step(type: string, outcome: string, seconds: number): void {
    this.steps.inc({ type, outcome });
    this.latency.observe({ type, outcome }, seconds);
  }

  retry(type: string): void {
    this.retries.inc({ type });
  }
}
