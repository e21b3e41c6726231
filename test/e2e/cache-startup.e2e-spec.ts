import { Logger } from '@nestjs/common';
import { ReadinessService } from '../../src/health/readiness.service';
import { startTestApp, TestApp } from '../support/test-app';
import { realRedisUrl } from '../support/test-database';

/**
 * Start-up on the machine's real Redis (on every set-up): the cache store begins connecting when it is built, and
 * the first PING of the start-up loop waits for that connection instead of failing on it, so a
 * healthy start logs no "Cache not reachable" warning (spec §3.3).
 */
describe('Start-up on Redis', () => {
  let t: TestApp | undefined;
  let warn: jest.SpyInstance;
  let log: jest.SpyInstance;

  beforeAll(async () => {
    warn = jest.spyOn(Logger.prototype, 'warn');
    log = jest.spyOn(Logger.prototype, 'log');
    t = await startTestApp({ label: 'cache_startup', env: { CACHE_URL: realRedisUrl() } });
  });

  afterAll(async () => {
    warn.mockRestore();
    log.mockRestore();
    await t?.close();
  });

  it('should answer the first PING and log no warning', () => {
    expect(t!.config.cache.url).toBeDefined();
    expect(warn.mock.calls).toEqual([]);
    expect(log.mock.calls.map((c: unknown[]) => c[0])).toContain('Cache (redis) answered PING on attempt 1');
    expect(t!.app.get(ReadinessService).ready).toBe(true);
  });
});
