/** An exponential backoff: `baseMs × multiplier^(attempt − 1)`, at most `maxMs`. */
export interface Backoff {
  baseMs: number;
  /** Default 2. */
  multiplier?: number;
  maxMs: number;
  /**
   * `equal` keeps half of the wait fixed and draws the other half at random, so the wait lies in
   * [wait / 2, wait]: the fixed half keeps it growing with each failure, the random half spreads
   * the retries of many clients that failed together (a database that was down) so they do not all
   * come back at once. Default none.
   */
  jitter?: 'none' | 'equal';
}

/**
 * The wait before the next try after try number `attempt` (1 = the first) failed, in whole
 * milliseconds — the one backoff of the service (connections, the cache's reconnects, start-up,
 * workflow steps, jobs). `random` returns a number in [0, 1) (out-of-range values are clamped, NaN
 * counts as 0); tests pass a fixed one. An attempt below 1 or not an integer is taken as 1 / rounded
 * down.
 */
export function backoffDelayMs(
  backoff: Backoff,
  attempt: number,
  random: () => number = Math.random,
): number {
  const n = Number.isFinite(attempt) ? Math.max(1, Math.floor(attempt)) : 1;
  const exponential = backoff.baseMs * (backoff.multiplier ?? 2) ** (n - 1);
  const wait = Math.max(0, Math.min(exponential, backoff.maxMs));
  if (backoff.jitter !== 'equal') return Math.round(wait);
  const r = random();
  const share = Number.isNaN(r) ? 0 : Math.min(1, Math.max(0, r));
  return Math.round(wait / 2 + (share * wait) / 2);
}
