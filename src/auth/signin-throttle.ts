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
import { AppError } from '../common/errors/app-error';

/** Failed sign-ins allowed per tenant + e-mail within the window before 429 (D12). */
export const SIGNIN_MAX_FAILURES = 5;
export const SIGNIN_WINDOW_S = 15 * 60;

/**
 * Throttles repeated sign-in failures per tenant + e-mail (D12, D39) with rate-limiter-flexible,
 * on Redis when configured (shared by every instance), else in process.
 */
@Injectable()
export class SigninThrottle {
  private readonly limiter: RateLimiterAbstract;

  constructor(cache: CacheService) {
    const options = {
      keyPrefix: `${cache.keys.prefix}:signin-fail`,
      points: SIGNIN_MAX_FAILURES,
      duration: SIGNIN_WINDOW_S,
    };
    this.limiter =
      cache.store instanceof RedisCacheStore
        ? new RateLimiterRedis({ ...options, storeClient: cache.store.client, useRedisPackage: false })
        : new RateLimiterMemory(options);
  }

  private key(tenantId: string, email: string): string {
    return `${tenantId}:${createHash('sha256').update(email).digest('hex').slice(0, 32)}`;
  }

  /** 429 RATE_LIMITED with Retry-After when the failures are used up. */
  async assertAllowed(tenantId: string, email: string): Promise<void> {
    const res = await this.limiter.get(this.key(tenantId, email)).catch(() => null);
    if (res && res.consumedPoints >= SIGNIN_MAX_FAILURES) throw tooMany(res);
  }

  async recordFailure(tenantId: string, email: string): Promise<void> {
    await this.limiter.consume(this.key(tenantId, email)).catch(() => undefined);
  }

  async reset(tenantId: string, email: string): Promise<void> {
    await this.limiter.delete(this.key(tenantId, email)).catch(() => undefined);
  }
}

function tooMany(res: RateLimiterRes): AppError {
  const retryAfter = String(Math.max(1, Math.ceil(res.msBeforeNext / 1000)));
  return new AppError(
    'RATE_LIMITED',
    'Too many failed sign-in attempts; try again later',
    null,
    {},
    { 'Retry-After': retryAfter },
  );
}
