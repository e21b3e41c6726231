import { retryDelayMs } from './backoff';
import type { RetryPolicy } from './workflow-schema';

const policy: RetryPolicy = { maxAttempts: 5, backoffMs: 500, backoffMultiplier: 2, maxBackoffMs: 60_000 };

describe('retryDelayMs', () => {
  it.each([
    [1, 500],
    [2, 1_000],
    [3, 2_000],
    [4, 4_000],
    [8, 60_000],
  ])('after attempt %i waits at most %i ms (random = 1)', (attempt, full) => {
    expect(retryDelayMs(policy, attempt, () => 1)).toBe(full);
  });

  it('should keep half of the wait fixed and add a random half (equal jitter)', () => {
    expect(retryDelayMs(policy, 3, () => 0)).toBe(1_000);
    expect(retryDelayMs(policy, 3, () => 0.5)).toBe(1_500);
    expect(retryDelayMs(policy, 3, () => 0.999)).toBe(1_999);
  });

  it('should stay within [base/2, base] with the real random source', () => {
    for (let i = 0; i < 100; i++) {
      const wait = retryDelayMs(policy, 2);
      expect(wait).toBeGreaterThanOrEqual(500);
      expect(wait).toBeLessThanOrEqual(1_000);
    }
  });

  it('should cap at maxBackoffMs, even for huge attempt numbers', () => {
    expect(retryDelayMs(policy, 10_000, () => 0)).toBe(30_000);
    expect(retryDelayMs({ ...policy, backoffMultiplier: 10 }, 400, () => 1)).toBe(60_000);
  });

  it('should give a constant wait with multiplier 1 and no wait with backoffMs 0', () => {
    const constant = { ...policy, backoffMultiplier: 1 };
    expect(retryDelayMs(constant, 1, () => 1)).toBe(500);
    expect(retryDelayMs(constant, 6, () => 1)).toBe(500);
    expect(retryDelayMs({ ...policy, backoffMs: 0 }, 3, () => 0.7)).toBe(0);
  });

  it('should treat odd attempt numbers and random values safely', () => {
    expect(retryDelayMs(policy, 0, () => 1)).toBe(500);
    expect(retryDelayMs(policy, Number.NaN, () => 1)).toBe(500);
    expect(retryDelayMs(policy, 2.7, () => 1)).toBe(1_000);
    expect(retryDelayMs(policy, 1, () => Number.NaN)).toBe(250);
    expect(retryDelayMs(policy, 1, () => 7)).toBe(500);
    expect(retryDelayMs(policy, 1, () => -1)).toBe(250);
  });
});
