import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { FastifyRequest, FastifyReply } from 'fastify';
import {
  RateLimiterAbstract,
  RateLimiterMemory,
  RateLimiterRedis,
  RateLimiterRes,
} from 'rate-limiter-flexible';
import { WindowCounter } from '../common/http/window-counter';
import { CacheService } from '../cache/cache.service';
import { RedisCacheStore } from '../cache/redis-cache.store';
import { AppError, RateLimitedError } from '../common/errors/app-error';
import type { AppConfig } from '../config/config.schema';
import { InjectConfig } from '../config/inject-config.decorator';

/**
 * D39: RATE_LIMIT_POINTS requests per RATE_LIMIT_WINDOW_S per tenant, shared by every instance
 * through Redis when configured. Only authenticated requests spend it: the guard runs after
 * JwtAuthGuard and skips every request without a user (public routes, and anything refused
 * earlier never gets here), so no one without a valid token of the tenant can exhaust it.
 * Unauthenticated traffic is limited per client address instead (AddressLimitGuard). Routes
 * outside any tenant (probes, metrics) are not limited.
 */
@Injectable()
export class TenantRateLimitGuard implements CanActivate {
  /** With Redis: shared by every instance. */
  private readonly limiter: RateLimiterAbstract | undefined;
  /** The embedded default: this process's count, synchronous. */
  private readonly local: WindowCounter | undefined;

  constructor(@InjectConfig() config: AppConfig, cache: CacheService) {
    const options = {
      keyPrefix: `${cache.keys.prefix}:rate`,
      points: config.rateLimit.points,
      duration: config.rateLimit.windowS,
    };
    if (cache.store instanceof RedisCacheStore)
      this.limiter = new RateLimiterRedis({
        ...options,
        storeClient: cache.store.client,
        useRedisPackage: false,
        // A cache outage must not take the API down: fall back to a per-process limit.
        insuranceLimiter: new RateLimiterMemory(options),
      });
    else this.local = new WindowCounter(options.points, options.duration * 1000);
  }

  canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    const http = context.switchToHttp();
    const request = http.getRequest<FastifyRequest>();
    if (!request.tenant || !request.user) return true;
    const reply = http.getResponse<FastifyReply>();
    if (this.local) {
      const verdict = this.local.consume(request.tenant.id);
      if (!verdict.allowed) throw rateLimited(verdict.msBeforeNext);
      void reply.header('x-ratelimit-remaining', String(verdict.remaining));
      return true;
    }
    return this.limiter!.consume(request.tenant.id).then(
      (res) => {
        void reply.header('x-ratelimit-remaining', String(res.remainingPoints));
        return true;
      },
      (rejection: unknown) => {
        if (rejection instanceof RateLimiterRes) throw rateLimited(rejection.msBeforeNext);
        return true;
      },
    );
  }
}

function rateLimited(msBeforeNext: number): AppError {
  return new RateLimitedError('Too many requests for this tenant', msBeforeNext);
}
