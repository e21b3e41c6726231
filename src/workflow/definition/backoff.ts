import type { RetryPolicy } from './workflow-schema';

/**
 * How long to wait before retrying a step whose attempt number `failedAttempt` (1 = the first
 * attempt) has just failed, in whole milliseconds.
 *
 * Exponential backoff: the base wait is `backoffMs * backoffMultiplier^(failedAttempt - 1)`, capped
 * at `maxBackoffMs`. "Equal jitter" then keeps half of it fixed and draws the other half at random:
 * `wait = base / 2 + random() * base / 2`, so the wait lies in `[base / 2, base]`. The fixed half
 * keeps the wait growing with each failure; the random half spreads the retries of many instances
 * that failed together (e.g. while the database was down) so they do not all come back at once.
 *
 * `random` returns a number in [0, 1) (out-of-range values are clamped, NaN counts as 0); tests pass
 * a fixed one. A `failedAttempt` below 1 or not an integer is taken as 1 / rounded down.
 */
export function retryDelayMs(
  policy: RetryPolicy,
  failedAttempt: number,
  random: () => number = Math.random,
): number {
  const attempt = Number.isFinite(failedAttempt) ? Math.max(1, Math.floor(failedAttempt)) : 1;
  const exponential = policy.backoffMs * policy.backoffMultiplier ** (attempt - 1);
  const base = Math.max(0, Math.min(exponential, policy.maxBackoffMs));
  const r = random();
  const jitter = Number.isNaN(r) ? 0 : Math.min(1, Math.max(0, r));
  return Math.round(base / 2 + (jitter * base) / 2);
}
