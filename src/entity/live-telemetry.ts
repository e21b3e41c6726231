import { Injectable } from '@nestjs/common';
import { Counter, Gauge, Histogram } from 'prom-client';
import { MetricsService } from '../health/metrics.service';

/**
 * Metrics of D55: open streams, what waits for their clients, streams dropped for falling behind,
 * events sent, and the lag from a write to its event on the wire.
 */
@Injectable()
export class LiveTelemetry {
  /** Read at each scrape: the streams open on this instance (LiveChangesService sets it). */
  openStreams: () => number = () => 0;
  /** Read at each scrape: bytes queued in this process for the open streams' clients. */
  bufferedBytes: () => number = () => 0;
  private readonly sent: Counter<'event'>;
  private readonly drops: Counter<string>;
  private readonly lag: Histogram<string>;

  constructor(metrics: MetricsService) {
    const registers = [metrics.registry];
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const self = this;
    new Gauge({
      name: 'live_streams_open',
      help: 'Live change streams (Server-Sent Events, D55) open on this instance',
      registers,
      collect() {
        this.set(self.openStreams());
      },
    });
    new Gauge({
      name: 'live_stream_buffered_bytes',
      help: 'Bytes written to the open live change streams of this instance that their clients have not taken yet',
      registers,
      collect() {
        this.set(self.bufferedBytes());
      },
    });
    this.drops = new Counter({
      name: 'live_streams_dropped_total',
      help: 'Live change streams dropped because their client fell more than SSE_MAX_BUFFER_BYTES behind',
      registers,
    });
    this.sent = new Counter({
      name: 'live_events_sent_total',
      help: 'Events written to live change streams (one per stream), by event (created, updated, deleted, reset)',
      labelNames: ['event'],
      registers,
    });
    this.lag = new Histogram({
      name: 'live_event_lag_seconds',
      help: "Time from a write (the event's occurrence, in its transaction) to its event written to the streams",
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
  }

  /** `n` streams were sent one `event`. */
  sentTo(event: string, n: number): void {
    if (n > 0) this.sent.inc({ event }, n);
  }

  /** A stream was dropped: its client did not take what it was sent. */
  dropped(): void {
    this.drops.inc();
  }

  /** An event that occurred at `occurredAtMs` reached its streams now. */
  delivered(occurredAtMs: number, nowMs = Date.now()): void {
    if (Number.isFinite(occurredAtMs)) this.lag.observe(Math.max(0, nowMs - occurredAtMs) / 1000);
  }
}
