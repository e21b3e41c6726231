import { backoffDelayMs } from '../../common/backoff';
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
  return backoffDelayMs(
    {
      baseMs: policy.backoffMs,
      multiplier: policy.backoffMultiplier,
      maxMs: policy.maxBackoffMs,
      jitter: 'equal',
    },
    failedAttempt,
    random,
  );
}
