import { randomBytes } from 'node:crypto';
import Redis from 'ioredis';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { LeasedLimiter } from '../../src/common/http/leased-limiter';
import { realRedisUrl } from '../support/test-database';

/**
 * The tenant limit spent in leases (issue 29) by two "instances" — each its own Redis connection
 * and its own leases — on the machine's real Redis: concurrent requests on both never get more
 * than the limit through, and at most n × (lease − 1) fewer, with a Redis consume per lease.
 */
describe('LeasedLimiter on Redis, two instances', () => {
  const prefix = `leased-${randomBytes(4).toString('hex')}`;
  const clients: Redis[] = [];

  afterAll(async () => {
    const keys = await clients[0].keys(`${prefix}*`);
    if (keys.length > 0) await clients[0].del(...keys);
    await Promise.all(clients.map((c) => c.quit()));
  });

  function instance(points: number): { limiter: LeasedLimiter; consumes: () => number } {
    const client = new Redis(realRedisUrl());
    clients.push(client);
    const redis = new RateLimiterRedis({ storeClient: client, keyPrefix: prefix, points, duration: 30 });
    let consumes = 0;
    const consume = redis.consume.bind(redis);
    redis.consume = (key: string | number, n?: number) => {
      consumes++;
      return consume(key, n);
    };
    return { limiter: new LeasedLimiter(redis, points), consumes: () => consumes };
  }

  it('should let at most the limit through across both, at most 2 × 9 short of it, with one consume per lease', async () => {
    const a = instance(1000);
    const b = instance(1000);
    const waves = await Promise.all(
      Array.from({ length: 30 }, async (_, wave) => {
        let allowed = 0;
        for (let i = 0; i < 40; i++) {
          const target = (wave + i) % 2 === 0 ? a : b;
          if ((await target.limiter.take('tenant-1')).allowed) allowed++;
        }
        return allowed;
      }),
    );
    const allowed = waves.reduce((x, y) => x + y, 0);
    expect(allowed).toBeLessThanOrEqual(1000);
    expect(allowed).toBeGreaterThanOrEqual(1000 - 2 * 9);
    // 1,200 requests, about 100 leases of 10: an order of magnitude fewer round trips.
    expect(a.consumes() + b.consumes()).toBeLessThan(130);
    // What Redis counted: every lease, none lost.
    const counted = Number(await clients[0].get(`${prefix}:tenant-1`));
    expect(counted).toBeGreaterThanOrEqual(1000);
  });
});
