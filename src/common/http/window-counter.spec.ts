import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';
import { WindowCounter } from './window-counter';

describe(WindowCounter.name, () => {
  it('should allow `points` per window per key, then refuse with the rest of the window, then start again', () => {
    let now = 10_000;
    const counter = new WindowCounter(3, 1000, () => now);
    expect([1, 2, 3].map(() => counter.consume('a'))).toEqual([
      { allowed: true, remaining: 2, msBeforeNext: 1000 },
      { allowed: true, remaining: 1, msBeforeNext: 1000 },
      { allowed: true, remaining: 0, msBeforeNext: 1000 },
    ]);
    now += 400;
    expect(counter.consume('a')).toEqual({ allowed: false, remaining: 0, msBeforeNext: 600 });
    expect(counter.consume('b')).toEqual({ allowed: true, remaining: 2, msBeforeNext: 1000 });
    now += 600;
    expect(counter.consume('a')).toEqual({ allowed: true, remaining: 2, msBeforeNext: 1000 });
  });

  it('should decide as RateLimiterMemory does, point for point', async () => {
    const counter = new WindowCounter(5, 60_000);
    const limiter = new RateLimiterMemory({ points: 5, duration: 60 });
    for (let i = 0; i < 8; i++) {
      const ours = counter.consume('k');
      const theirs = await limiter.consume('k').then(
        (r) => ({ allowed: true, remaining: r.remainingPoints }),
        (r: RateLimiterRes) => ({ allowed: false, remaining: r.remainingPoints }),
      );
      expect({ allowed: ours.allowed, remaining: ours.remaining }).toEqual(theirs);
    }
  });

  it('should stay bounded under a flood of keys, ended windows first', () => {
    let now = 0;
    const counter = new WindowCounter(1, 1000, () => now, 100);
    for (let i = 0; i < 100; i++) counter.consume(`old-${i}`);
    now += 1000;
    counter.consume('new');
    expect(counter.size).toBe(1);
    for (let i = 0; i < 250; i++) counter.consume(`flood-${i}`);
    expect(counter.size).toBeLessThanOrEqual(100);
  });
});
