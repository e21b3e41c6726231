import type { CacheService } from '../cache/cache.service';
import type { DatabaseService } from '../database/database.service';
import { MetricsService } from './metrics.service';
import type { ProbeChecks } from './probe-checks';
import type { ReadinessService } from './readiness.service';

/** The service with stand-ins for what only its gauges read. */
function metricsService(): MetricsService {
  return new MetricsService(
    { poolStats: () => undefined } as unknown as DatabaseService,
    { store: {}, kind: 'memory' } as unknown as CacheService,
    { snapshot: () => ({}) } as unknown as ReadinessService,
    { cache: async () => ({ ok: true }), database: async () => ({ ok: true }) } as unknown as ProbeChecks,
  );
}

describe(MetricsService.name, () => {
  it('should count and time every request under its own method, route and status', async () => {
    const metrics = metricsService();
    metrics.observe('GET', '/api/v1/:entity_code', 200, 0.002);
    metrics.observe('GET', '/api/v1/:entity_code', 200, 0.004);
    metrics.observe('GET', '/api/v1/:entity_code', 404, 0.001);
    metrics.observe('POST', '/api/v1/:entity_code', 200, 0.003);
    const requests = await metrics.registry.getSingleMetric('http_requests_total')!.get();
    const count = (method: string, status: string) =>
      requests.values.find((v) => v.labels.method === method && v.labels.status_code === status)?.value;
    expect(count('GET', '200')).toBe(2);
    expect(count('GET', '404')).toBe(1);
    expect(count('POST', '200')).toBe(1);
    const text = await metrics.registry.metrics();
    expect(text).toMatch(
      /http_request_duration_seconds_count\{[^}]*method="GET"[^}]*status_code="200"[^}]*\} 2/,
    );
    expect(text).toMatch(
      /http_request_duration_seconds_sum\{[^}]*method="GET"[^}]*status_code="200"[^}]*\} 0\.006/,
    );
  });

  it('should export cumulative buckets (le inclusive), +Inf, sum and count as prom-client does, and reset', async () => {
    const metrics = metricsService();
    for (const s of [0.001, 0.0011, 0.004, 0.3, 7]) metrics.observe('GET', '/healthz', 200, s);
    const text = await metrics.registry.metrics();
    const bucket = (le: string) => {
      const line = text
        .split('\n')
        .find((l) => l.startsWith('http_request_duration_seconds_bucket{') && l.includes(`le="${le}"`));
      return Number(line?.split(' ').pop());
    };
    expect([
      bucket('0.001'),
      bucket('0.0025'),
      bucket('0.005'),
      bucket('0.25'),
      bucket('0.5'),
      bucket('5'),
      bucket('+Inf'),
    ]).toEqual([1, 2, 3, 3, 4, 4, 5]);
    expect(text).toMatch(
      /http_request_duration_seconds_count\{method="GET",route="\/healthz",status_code="200"\} 5/,
    );
    expect(text).toMatch(/# TYPE http_request_duration_seconds histogram/);
    expect(text).toMatch(/# TYPE http_requests_total counter/);
    expect(text).toMatch(/http_requests_total\{method="GET",route="\/healthz",status_code="200"\} 5/);
    metrics.registry.resetMetrics();
    expect(await metrics.registry.metrics()).not.toMatch(/route="\/healthz"/);
  });
});
