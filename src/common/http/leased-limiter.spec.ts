import { RateLimiterMemory, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { LeasedLimiter, leaseSize, type LeaseVerdict } from './leased-limiter';

/** A real shared count (rate-limiter-flexible's own memory limiter), its consumes counted. */
function sharedCount(points: number, duration = 10) {
  const limiter = new RateLimiterMemory({ points, duration, keyPrefix: `leased-${Math.random()}` });
  let consumes = 0;
  const consume = limiter.consume.bind(limiter);
  limiter.consume = (key: string | number, n?: number) => {
    consumes++;
    return consume(key, n);
  };
  return { limiter, consumes: () => consumes };
}

async function takeAll(l: LeasedLimiter, key: string, n: number): Promise<LeaseVerdict[]> {
  const out: LeaseVerdict[] = [];
  for (let i = 0; i < n; i++) out.push(await l.take(key));
  return out;
}

describe('LeasedLimiter (issue 29: the shared limit spent a lease at a time)', () => {
  it('should lease 1 % of the limit, between 1 and 20 points', () => {
    expect([1, 5, 199, 200, 1000, 2000, 100_000_000].map(leaseSize)).toEqual([1, 1, 1, 2, 10, 20, 20]);
  });

  it('should allow exactly the limit on one instance, with one shared consume per lease, and answer leased points without a promise', async () => {
    const shared = sharedCount(1000);
    const l = new LeasedLimiter(shared.limiter, 1000);
    const first = l.take('t1');
    expect(first).toBeInstanceOf(Promise);
    await first;
    const second = l.take('t1');
    expect(second).not.toBeInstanceOf(Promise);
    expect(second).toMatchObject({ allowed: true, remaining: 998 });
    const rest = await takeAll(l, 't1', 1100);
    expect(rest.filter((v) => v.allowed)).toHaveLength(998);
    expect(rest[rest.length - 1]).toMatchObject({ allowed: false, remaining: 0 });
    expect(rest[rest.length - 1].msBeforeNext).toBeGreaterThan(0);
    // 100 leases of 10; the last one left the shared count at 0, so the refusals after it are
    // answered in memory until the window ends.
    expect(shared.consumes()).toBe(100);
    // Keys are counted apart.
    expect(await l.take('t2')).toMatchObject({ allowed: true });
  });

  it('should never let two instances sharing the count exceed the limit, and refuse at most n × (lease − 1) early', async () => {
    const shared = sharedCount(1000);
    const a = new LeasedLimiter(shared.limiter, 1000);
    const b = new LeasedLimiter(shared.limiter, 1000);
    let allowed = 0;
    for (let i = 0; i < 1500; i++) if ((await (i % 3 === 0 ? a : b).take('t')).allowed) allowed++;
    expect(allowed).toBeLessThanOrEqual(1000);
    expect(allowed).toBeGreaterThanOrEqual(1000 - 2 * 9);
  });

  it('should grant what was left before a lease that went over the limit', async () => {
    const shared = sharedCount(1000);
    // Another instance spent 995 points.
    await shared.limiter.consume('t', 995);
    const l = new LeasedLimiter(shared.limiter, 1000);
    const verdicts = await takeAll(l, 't', 8);
    expect(verdicts.map((v) => v.allowed)).toEqual([true, true, true, true, true, false, false, false]);
  });

  it('should be exact for small limits (a lease of one point: every take is a shared consume)', async () => {
    const shared = sharedCount(5);
    const a = new LeasedLimiter(shared.limiter, 5);
    const b = new LeasedLimiter(shared.limiter, 5);
    const v = [...(await takeAll(a, 'k', 3)), ...(await takeAll(b, 'k', 3))];
    expect(v.map((x) => x.allowed)).toEqual([true, true, true, true, true, false]);
    // Five consumes; the sixth take knows from the fifth's answer that nothing is left.
    expect(shared.consumes()).toBe(5);
  });

  it('should let concurrent first takes of a key wait for one lease instead of taking one each', async () => {
    const shared = sharedCount(1000);
    const l = new LeasedLimiter(shared.limiter, 1000);
    const verdicts = await Promise.all(Array.from({ length: 10 }, () => Promise.resolve(l.take('t'))));
    expect(verdicts.every((v) => v.allowed)).toBe(true);
    expect(shared.consumes()).toBe(1);
  });

  it('should give a point back, and start a new lease when the window ends', async () => {
    let now = 1_000_000;
    const shared = sharedCount(1000, 1);
    const l = new LeasedLimiter(shared.limiter, 1000, () => now);
    await l.take('t');
    const before = (l.take('t') as LeaseVerdict).remaining;
    l.giveBack('t');
    expect((l.take('t') as LeaseVerdict).remaining).toBe(before);
    now += 5_000;
    expect(l.take('t')).toBeInstanceOf(Promise);
  });

  it('should let the request through when the store fails without a refusal', async () => {
    const failing = {
      consume: () => Promise.reject(new Error('store down')),
    } as unknown as RateLimiterAbstract;
    const l = new LeasedLimiter(failing, 1000);
    expect(await l.take('t')).toMatchObject({ allowed: true });
    // A refusal is a refusal.
    const refusing = {
      // rate-limiter-flexible rejects a refused consume with its RateLimiterRes, not an Error.
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors
      consume: () => Promise.reject(new RateLimiterRes(0, 4000, 1020, false)),
    } as unknown as RateLimiterAbstract;
    expect(await new LeasedLimiter(refusing, 1000).take('t')).toMatchObject({ allowed: false, msBeforeNext: 4000 });
  });
});
