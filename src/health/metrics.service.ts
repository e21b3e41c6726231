import { Injectable } from '@nestjs/common';
import { collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import { CacheService } from '../cache/cache.service';
import { MemoryCacheStore } from '../cache/memory-cache.store';
import { DatabaseService } from '../database/database.service';
import { ProbeChecks } from './probe-checks';
import { ReadinessService } from './readiness.service';
import { RequestMetrics } from './request-metrics';

/** Prometheus metrics (prom-client) on a registry of this app's own, so several apps can share a process. */
@Injectable()
export class MetricsService {
  readonly registry = new Registry();
  private readonly requests: RequestMetrics;

  constructor(
    database: DatabaseService,
    cache: CacheService,
    readiness: ReadinessService,
    checks: ProbeChecks,
  ) {
    collectDefaultMetrics({ register: this.registry });
    const registers = [this.registry];
    this.requests = new RequestMetrics(
      this.registry,
      [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    );
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

  /** One request: its count and its duration (RequestMetrics: no label hashing per request). */
  observe(method: string, route: string, statusCode: number, seconds: number): void {
    this.requests.observe(method, route, statusCode, seconds);
  }
}
