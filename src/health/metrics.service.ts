import { Injectable } from '@nestjs/common';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { CacheService } from '../cache/cache.service';
import { MemoryCacheStore } from '../cache/memory-cache.store';
import { DatabaseService } from '../database/database.service';
import { ProbeChecks } from './probe-checks';
import { ReadinessService } from './readiness.service';

/** Prometheus metrics (prom-client) on a registry of this app's own, so several apps can share a process. */
@Injectable()
export class MetricsService {
  readonly registry = new Registry();
  private readonly requests: Counter<'method' | 'route' | 'status_code'>;
  private readonly latency: Histogram<'method' | 'route' | 'status_code'>;

  constructor(
    database: DatabaseService,
    cache: CacheService,
    readiness: ReadinessService,
    checks: ProbeChecks,
  ) {
    collectDefaultMetrics({ register: this.registry });
    const registers = [this.registry];
    this.requests = new Counter({
      name: 'http_requests_total',
      help: 'HTTP requests by route template, method and status',
      labelNames: ['method', 'route', 'status_code'],
      registers,
    });
    this.latency = new Histogram({
      name: 'http_request_duration_seconds',
      help: 'HTTP request latency by route template, method and status',
      labelNames: ['method', 'route', 'status_code'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    });
    new Gauge({
      name: 'db_pool_connections',
      help: 'Configuration database pool connections by state',
      labelNames: ['state'],
      registers,
      collect() {
        const stats = database.poolStats();
        if (!stats) return;
        this.set({ state: 'total' }, stats.total);
        this.set({ state: 'idle' }, stats.idle);
        this.set({ state: 'waiting' }, stats.waiting);
      },
    });
    new Gauge({
      name: 'cache_up',
      help: '1 when the cache answers PING',
      labelNames: ['kind'],
      registers,
      async collect() {
        // The probes' PING (at most one a second), so scraping cannot flood the cache either.
        const { ok } = await checks.cache();
        this.set({ kind: cache.kind }, ok ? 1 : 0);
      },
    });
    new Gauge({
      name: 'cache_memory_keys',
      help: 'Keys held by the in-process cache (0 with Redis)',
      registers,
      collect() {
        this.set(cache.store instanceof MemoryCacheStore ? cache.store.size : 0);
      },
    });
    new Gauge({
      name: 'service_readiness',
      help: 'Start-up readiness flags (spec §3.3)',
      labelNames: ['flag'],
      registers,
      collect() {
        for (const [flag, value] of Object.entries(readiness.snapshot())) this.set({ flag }, value ? 1 : 0);
      },
    });
  }

  /**
   * One request: its count and its duration. The label children are looked up once per (method,
   * route, status) and kept, rather than prom-client hashing the labels object twice per request.
   * Routes are the patterns (`/api/v1/:entity_code`) and `unmatched`, so the set is bounded.
   */
  observe(method: string, route: string, statusCode: number, seconds: number): void {
    const key = `${method} ${statusCode} ${route}`;
    let series = this.series.get(key);
    if (!series) {
      const labels = { method, route, status_code: String(statusCode) };
      series = { requests: this.requests.labels(labels), latency: this.latency.labels(labels) };
      this.series.set(key, series);
    }
    series.requests.inc();
    series.latency.observe(seconds);
  }

  private readonly series = new Map<
    string,
    { requests: { inc(): void }; latency: { observe(value: number): void } }
  >();
}
