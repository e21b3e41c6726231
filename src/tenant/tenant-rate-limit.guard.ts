import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { FastifyRequest, FastifyReply } from 'fastify';
import {
  RateLimiterAbstract,
  RateLimiterMemory,
  RateLimiterRedis,
  RateLimiterRes,
} from 'rate-limiter-flexible';
import { CacheService } from '../cache/cache.service';
import { RedisCacheStore } from '../cache/redis-cache.store';
import { AppError } from '../common/errors/app-error';
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
  private readonly limiter: RateLimiterAbstract;

  constructor(@InjectConfig() config: AppConfig, cache: CacheService) {
    const options = {
      keyPrefix: `${cache.keys.prefix}:rate`,
      points: config.rateLimit.points,
      duration: config.rateLimit.windowS,
    };
    this.limiter =
      cache.store instanceof RedisCacheStore
        ? new RateLimiterRedis({
            ...options,
            storeClient: cache.store.client,
            useRedisPackage: false,
            // A cache outage must not take the API down: fall back to a per-process limit.
            insuranceLimiter: new RateLimiterMemory(options),
          })
        : new RateLimiterMemory(options);
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const http = context.switchToHttp();
    const request = http.getRequest<FastifyRequest>();
    if (!request.tenant || !request.user) return true;
    try {
      const res = await this.limiter.consume(request.tenant.id);
      void http.getResponse<FastifyReply>().header('x-ratelimit-remaining', String(res.remainingPoints));
      return true;
    } catch (rejection) {
      if (rejection instanceof RateLimiterRes) {
        const retryAfter = String(Math.max(1, Math.ceil(rejection.msBeforeNext / 1000)));
        throw new AppError(
          'RATE_LIMITED',
          'Too many requests for this tenant',
          null,
          {},
          { 'Retry-After': retryAfter },
        );
      }
      return true;
    }
  }
}
