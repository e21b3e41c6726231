import { Injectable } from '@nestjs/common';
import { createHash } from 'node:crypto';
import {
  RateLimiterAbstract,
  RateLimiterMemory,
  RateLimiterRedis,
  RateLimiterRes,
} from 'rate-limiter-flexible';
import { CacheService } from '../cache/cache.service';
import { RedisCacheStore } from '../cache/redis-cache.store';
import { AppError, RateLimitedError } from '../common/errors/app-error';

/** Failed sign-ins allowed per tenant + e-mail + client address within the window (D12, D46). */
export const SIGNIN_MAX_FAILURES = 5;
export const SIGNIN_WINDOW_S = 15 * 60;
/** Failed sign-ins allowed per tenant + e-mail from all addresses together (D46). */
export const SIGNIN_ACCOUNT_MAX_FAILURES = 50;
export const SIGNIN_ACCOUNT_WINDOW_S = 60 * 60;

/** One sign-in attempt as the throttle sees it; `email` normalised, `address` = request.ip. */
export interface SigninAttempt {
  tenantId: string;
  email: string;
  address: string;
}

/** How an attempt that held a slot ended: a failure keeps it spent, the others give it back. */
export type SigninOutcome = 'failure' | 'success' | 'aborted';

/**
 * Throttles sign-ins (D12, D39, D46) with rate-limiter-flexible, on Redis when configured (shared
 * by every instance), else in process. Two counters:
 *  - tenant + e-mail + client address, 5 / 15 min: one source guessing is stopped quickly, without
 *    locking the real user out from elsewhere;
 *  - tenant + e-mail, 50 / hour: guessing spread over many addresses is bounded too, and only then
 *    is the account refused for everyone until the hour is over.
 *
 * Each attempt reserves its slot before its password is verified (`reserve`: one atomic increment
 * per key, a Lua script on Redis), so attempts in flight count: N parallel attempts never verify
 * more than the bounds allow (issue 21 #3: 100 in parallel verified 100 against a bound of 50).
 * The address key is taken first and an attempt it refuses never touches the account key: a flood
 * from one address spends that address's 5 only, and the real user still signs in from any other
 * address (D46). An attempt the account key refuses gives its address slot back.
 *
 * `settle` ends the attempt: a failure keeps both slots spent; a success clears the address
 * counter and gives back the account slot it held — only its own: the account counter is never
 * cleared, otherwise each sign-in of the real user would hand a distributed guesser 50 more tries;
 * an attempt that ended without a verdict (the database failed) gives both back.
 * With Redis unreachable, each instance counts on in process until Redis answers again.
 */
@Injectable()
export class SigninThrottle {
  private readonly perAddress: RateLimiterAbstract;
  private readonly perAccount: RateLimiterAbstract;

  constructor(cache: CacheService) {
    const limiter = (keyPrefix: string, points: number, duration: number): RateLimiterAbstract => {
      const options = { keyPrefix: `${cache.keys.prefix}:${keyPrefix}`, points, duration };
      // With Redis down the counters go on in process (insuranceLimiter), as the tenant rate limit
      // does: throttling keeps working per instance instead of switching off (issue 13 #5).
      return cache.store instanceof RedisCacheStore
        ? new RateLimiterRedis({
            ...options,
            storeClient: cache.store.client,
            useRedisPackage: false,
            insuranceLimiter: new RateLimiterMemory(options),
          })
        : new RateLimiterMemory(options);
    };
    this.perAddress = limiter('signin-fail-addr', SIGNIN_MAX_FAILURES, SIGNIN_WINDOW_S);
    this.perAccount = limiter('signin-fail-acct', SIGNIN_ACCOUNT_MAX_FAILURES, SIGNIN_ACCOUNT_WINDOW_S);
  }

  private accountKey(a: SigninAttempt): string {
    return `${a.tenantId}:${hash(a.email)}`;
  }

  private addressKey(a: SigninAttempt): string {
    // request.ip is undefined only for a socket already gone; such attempts share one counter.
    return `${this.accountKey(a)}:${hash(a.address || 'unknown')}`;
  }

  /** Takes one slot of each counter, or answers 429 RATE_LIMITED (Retry-After) holding none. */
  async reserve(attempt: SigninAttempt): Promise<void> {
    const addressKey = this.addressKey(attempt);
    const refused = await take(this.perAddress, addressKey);
    if (refused) throw tooMany(refused.msBeforeNext);
    const accountRefused = await take(this.perAccount, this.accountKey(attempt));
    if (accountRefused) {
      await this.perAddress.reward(addressKey).catch(() => undefined);
      throw tooMany(accountRefused.msBeforeNext);
    }
  }

  /** Ends an attempt that `reserve` let through. */
  async settle(attempt: SigninAttempt, outcome: SigninOutcome): Promise<void> {
    if (outcome === 'failure') return;
    await Promise.all([
      outcome === 'success'
        ? this.perAddress.delete(this.addressKey(attempt)).catch(() => undefined)
        : this.perAddress.reward(this.addressKey(attempt)).catch(() => undefined),
      this.perAccount.reward(this.accountKey(attempt)).catch(() => undefined),
    ]);
  }
}

/**
 * One point of `key`; the refusal when the counter was already used up. A store error that is not
 * a refusal lets the attempt through as before (the Redis limiters fall back to their in-process
 * insurance limiter first, so this is a last resort that never happens in practice).
 */
async function take(limiter: RateLimiterAbstract, key: string): Promise<RateLimiterRes | undefined> {
  try {
    await limiter.consume(key);
    return undefined;
  } catch (rejection) {
    return rejection instanceof RateLimiterRes ? rejection : undefined;
  }
}

/** Keys carry no e-mail or address in clear text (Redis keys show up in tooling). */
function hash(value: string): string {
  return createHash('sha256').update(value).digest('hex').slice(0, 32);
}

function tooMany(msBeforeNext: number): AppError {
  return new RateLimitedError('Too many failed sign-in attempts; try again later', msBeforeNext);
}
