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

/**
 * Throttles failed sign-ins (D12, D39, D46) with rate-limiter-flexible, on Redis when configured
 * (shared by every instance), else in process. Two counters:
 *  - tenant + e-mail + client address, 5 / 15 min: one source guessing is stopped quickly, without
 *    locking the real user out from elsewhere;
 *  - tenant + e-mail, 50 / hour: guessing spread over many addresses is bounded too, and only then
 *    is the account refused for everyone until the hour is over.
 * With Redis unreachable, each instance counts on in process until Redis answers again.
 * A successful sign-in clears the address counter only. The account counter is never cleared by a
 * success: otherwise each sign-in of the real user would hand a distributed guesser 50 more tries.
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

  /** 429 RATE_LIMITED with Retry-After when either counter is used up. */
  async assertAllowed(attempt: SigninAttempt): Promise<void> {
    const [address, account] = await Promise.all([
      this.perAddress.get(this.addressKey(attempt)).catch(() => null),
      this.perAccount.get(this.accountKey(attempt)).catch(() => null),
    ]);
    const blocked = [
      address && address.consumedPoints >= SIGNIN_MAX_FAILURES ? address : null,
      account && account.consumedPoints >= SIGNIN_ACCOUNT_MAX_FAILURES ? account : null,
    ].filter((r): r is RateLimiterRes => r !== null);
    if (blocked.length > 0) throw tooMany(Math.max(...blocked.map((r) => r.msBeforeNext)));
  }

  async recordFailure(attempt: SigninAttempt): Promise<void> {
    await Promise.all([
      this.perAddress.consume(this.addressKey(attempt)).catch(() => undefined),
      this.perAccount.consume(this.accountKey(attempt)).catch(() => undefined),
    ]);
  }

  async recordSuccess(attempt: SigninAttempt): Promise<void> {
    await this.perAddress.delete(this.addressKey(attempt)).catch(() => undefined);
  }
}

/** Keys carry no e-mail or address in clear text (Redis keys show up in tooling). */
function hash(value: string): string {
  return createHash('sha256').update(value).digest('hex').slice(0, 32);
}

function tooMany(msBeforeNext: number): AppError {
  return new RateLimitedError('Too many failed sign-in attempts; try again later', msBeforeNext);
}
