import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { FastifyRequest, FastifyReply } from 'fastify';
import { RateLimiterMemory, RateLimiterRedis } from 'rate-limiter-flexible';
import { LeasedLimiter, type LeaseVerdict } from '../common/http/leased-limiter';
import { WindowCounter } from '../common/http/window-counter';
import { CacheService } from '../cache/cache.service';
import { RedisCacheStore } from '../cache/redis-cache.store';
import { AppError, RateLimitedError } from '../common/errors/app-error';
import type { AppConfig } from '../config/config.schema';
import { InjectConfig } from '../config/inject-config.decorator';

/**
 * D39: RATE_LIMIT_POINTS requests per RATE_LIMIT_WINDOW_S per tenant, and USER_RATE_LIMIT_POINTS
 * per user within it (issue 21 #4: one account spent its tenant's whole budget), both shared by
 * every instance through Redis when configured. Only authenticated requests spend them: the guard
 * runs after JwtAuthGuard and skips every request without a user (public routes, and anything
 * refused earlier never gets here), so no one without a valid token of the tenant can exhaust
 * them. Unauthenticated traffic is limited per client address instead (AddressLimitGuard). Routes
 * outside any tenant (probes, metrics) are not limited.
 *
 * A request the user's budget refuses does not spend the tenant's: a user over their own limit
 * keeps getting 429 without eating into what the tenant's other users have. In process the user's
 * counter is asked first; with Redis both are asked at once and the tenant's point of a refused
 * request is given back. With Redis each instance takes the points in leases (LeasedLimiter: 1 %
 * of the limit at a time), so most requests spend them in memory, without a round trip.
 */
@Injectable()
export class TenantRateLimitGuard implements CanActivate {
  /** With Redis: shared by every instance. */
  private readonly shared: { tenant: LeasedLimiter; user: LeasedLimiter } | undefined;
  /** The embedded default: this process's counts, synchronous. */
  private readonly local: { tenant: WindowCounter; user: WindowCounter } | undefined;

  constructor(@InjectConfig() config: AppConfig, cache: CacheService) {
    const { points, userPoints, windowS } = config.rateLimit;
    if (cache.store instanceof RedisCacheStore) {
      const client = cache.store.client;
      const limiter = (keyPrefix: string, limit: number): LeasedLimiter => {
        const options = { keyPrefix: `${cache.keys.prefix}:${keyPrefix}`, points: limit, duration: windowS };
        const redis = new RateLimiterRedis({
          ...options,
          storeClient: client,
          useRedisPackage: false,
          // A cache outage must not take the API down: fall back to a per-process limit.
          insuranceLimiter: new RateLimiterMemory(options),
        });
        return new LeasedLimiter(redis, limit);
      };
      this.shared = { tenant: limiter('rate', points), user: limiter('rate-user', userPoints) };
    } else {
      this.local = {
        tenant: new WindowCounter(points, windowS * 1000),
        user: new WindowCounter(userPoints, windowS * 1000),
      };
    }
  }

  canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    const http = context.switchToHttp();
    const request = http.getRequest<FastifyRequest>();
    if (!request.tenant || !request.user) return true;
    const reply = http.getResponse<FastifyReply>();
    const tenantId = request.tenant.id;
    const userKey = `${tenantId}:${request.user.userId}`;
    if (this.local) {
      const mine = this.local.user.consume(userKey);
      if (!mine.allowed) throw rateLimited('user', mine.msBeforeNext);
      const theirs = this.local.tenant.consume(tenantId);
      if (!theirs.allowed) throw rateLimited('tenant', theirs.msBeforeNext);
      void reply.header('x-ratelimit-remaining', String(theirs.remaining));
      return true;
    }
    const { tenant, user } = this.shared!;
    const mine = user.take(userKey);
    const theirs = tenant.take(tenantId);
    const decide = (m: LeaseVerdict, t: LeaseVerdict): boolean => {
      if (!m.allowed) {
        if (t.allowed) tenant.giveBack(tenantId);
        throw rateLimited('user', m.msBeforeNext);
      }
      if (!t.allowed) throw rateLimited('tenant', t.msBeforeNext);
      // What the tenant has left (the documented header, D39).
      void reply.header('x-ratelimit-remaining', String(t.remaining));
      return true;
    };
    // Both held in leases: answered without a promise.
    if (!(mine instanceof Promise) && !(theirs instanceof Promise)) return decide(mine, theirs);
    return Promise.all([mine, theirs]).then(([m, t]) => decide(m, t));
  }
}

function rateLimited(who: 'user' | 'tenant', msBeforeNext: number): AppError {
  return new RateLimitedError(`Too many requests for this ${who}`, msBeforeNext);
}
