import { backoffDelayMs } from './backoff';

describe('backoffDelayMs', () => {
  it('should double from the base up to the cap', () => {
    expect([1, 2, 3, 4, 5, 6].map((a) => backoffDelayMs({ baseMs: 500, maxMs: 10_000 }, a))).toEqual([
      500, 1000, 2000, 4000, 8000, 10_000,
    ]);
  });

  it('should use the multiplier, and read a bad attempt as the first', () => {
    expect(backoffDelayMs({ baseMs: 100, multiplier: 3, maxMs: 10_000 }, 3)).toBe(900);
    expect(backoffDelayMs({ baseMs: 100, maxMs: 10_000 }, 0)).toBe(100);
    expect(backoffDelayMs({ baseMs: 100, maxMs: 10_000 }, Number.NaN)).toBe(100);
  });

  it('should keep half the wait fixed and draw the other half with equal jitter', () => {
    const b = { baseMs: 1000, maxMs: 60_000, jitter: 'equal' as const };
    expect(backoffDelayMs(b, 2, () => 0)).toBe(1000);
    expect(backoffDelayMs(b, 2, () => 0.5)).toBe(1500);
    expect(backoffDelayMs(b, 2, () => 0.999999)).toBe(2000);
    expect(backoffDelayMs(b, 2, () => Number.NaN)).toBe(1000);
  });
});
