import { CanActivate, ExecutionContext, Injectable, OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { LRUCache } from 'lru-cache';
import { createHash } from 'node:crypto';
import {
  RateLimiterAbstract,
  RateLimiterMemory,
  RateLimiterRedis,
  RateLimiterRes,
} from 'rate-limiter-flexible';
import { LeasedLimiter, type LeaseVerdict } from '../common/http/leased-limiter';
import { WindowCounter } from '../common/http/window-counter';
import { TokenService } from '../auth/token.service';
import { CacheService } from '../cache/cache.service';
import { RedisCacheStore } from '../cache/redis-cache.store';
import { AppError, RateLimitedError } from '../common/errors/app-error';
import { clientAddressKey } from '../common/http/client-address';
import { routePolicy } from '../common/http/route-policy';
import type { AppConfig } from '../config/config.schema';
import { InjectConfig } from '../config/inject-config.decorator';

/** Addresses remembered as blocked at once in one process; an LRU, so a flood of them is bounded. */
const MAX_BLOCKED_ADDRESSES = 100_000;

/** As JwtAuthGuard reads the Authorization header. */
const BEARER = /^Bearer ([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*)$/;

/**
 * Per-client-address limits (issue 9, finding 3): traffic that is not authenticated is counted by
 * the client address (`request.ip`), never against the tenant, so no one can spend a tenant's D39
 * budget without a valid token. Runs as the first global guard.
 *
 *  - **Failure budget.** Every 4xx answered to a request that ended without an authenticated user
 *    (a 401 of any code, the tenant header's 400/404/403, a 403 before the user was set, an
 *    unknown route, a failed sign-in…) costs its address one point; 429s are not counted. Once the
 *    budget is used up, further requests from the address answer `429 RATE_LIMITED` with
 *    Retry-After until the window ends — unless they carry a bearer token that verifies
 *    (signature, expiry, shape: TokenService.verify), so the real users behind a shared address
 *    (NAT) keep working; JwtAuthGuard then checks such a token fully as always.
 *  - **Public routes** (@Public() tenant routes: tenant-config, sign-in, sign-up) have a budget
 *    per address of their own. Probes and metrics (@NoTenant()) are not limited.
 *
 * Cost: on the hot path (a protected route, address not blocked) one LRU lookup and a metadata
 * read, no I/O. The failure points are consumed after the answer has been sent (onResponse), on
 * Redis when configured so that every instance shares them; an instance learns that an address is
 * blocked from the answer of its own next consume and remembers it in memory until the window
 * ends, so a blocked address costs no Redis round trip either. Public routes consume one point
 * per request, in leases with Redis (LeasedLimiter: a Redis round trip per 1 % of the limit).
 */
@Injectable()
export class AddressLimitGuard implements CanActivate, OnModuleInit {
  private readonly publicLimiter: WindowCounter | LeasedLimiter;
  private readonly failureLimiter: AddressLimiter;
  /** Address key → epoch ms until which its failure budget is used up. */
  private readonly blocked = new LRUCache<string, number>({ max: MAX_BLOCKED_ADDRESSES });

  constructor(
    private readonly tokens: TokenService,
    private readonly adapterHost: HttpAdapterHost,
    cache: CacheService,
    @InjectConfig() config: AppConfig,
  ) {
    const limits = config.rateLimit;
    const limiter = (name: string, points: number, duration: number): AddressLimiter => {
      const options = { keyPrefix: `${cache.keys.prefix}:${name}`, points, duration };
      // The embedded default counts in process, synchronously (WindowCounter); Redis shares it.
      if (!(cache.store instanceof RedisCacheStore)) return new WindowCounter(points, duration * 1000);
      return new RateLimiterRedis({
        ...options,
        storeClient: cache.store.client,
        useRedisPackage: false,
        // A cache outage must not take the API down: fall back to a per-process count.
        insuranceLimiter: new RateLimiterMemory(options),
      });
    };
    const publicLimiter = limiter('rate-public', limits.publicPoints, limits.publicWindowS);
    // Spent in leases with Redis (1 % of the limit at a time; exact under 200), as the tenant's.
    this.publicLimiter =
      publicLimiter instanceof WindowCounter ? publicLimiter : new LeasedLimiter(publicLimiter, limits.publicPoints);
    this.failureLimiter = limiter('rate-fail-addr', limits.failurePoints, limits.failureWindowS);
  }

  onModuleInit(): void {
    const fastify = this.adapterHost.httpAdapter.getInstance<FastifyInstance>();
    fastify.addHook('onResponse', (request, reply, done) => {
      const status = reply.statusCode;
      // 429s (this guard's own, the tenant's, sign-in throttling) are limits at work, not failures.
      if (status >= 400 && status < 500 && status !== 429 && !request.user)
        void this.recordFailure(clientAddressKey(request.ip));
      done();
    });
  }

  canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    const policy = routePolicy(context);
    if (policy.noTenant) return true;
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    const address = clientAddressKey(request.ip);

    const blockedUntil = this.blockedUntil(address);
    if (blockedUntil !== undefined && !this.carriesValidToken(request)) {
      throw tooMany(blockedUntil - Date.now(), 'Too many failed requests from this address; try again later');
    }
    if (policy.isPublic) return this.consumePublic(address);
    return true;
  }

  /** Epoch ms until which the address is blocked, or undefined. In memory only. */
  private blockedUntil(address: string): number | undefined {
    const until = this.blocked.get(address);
    if (until === undefined) return undefined;
    if (until > Date.now()) return until;
    this.blocked.delete(address);
    return undefined;
  }

  /** A bearer token that verifies (pure signature and shape check; no I/O). */
  private carriesValidToken(request: FastifyRequest): boolean {
    const header = request.headers.authorization;
    const match = typeof header === 'string' ? BEARER.exec(header.trim()) : null;
    if (!match) return false;
    try {
      this.tokens.verify(match[1]);
      return true;
    } catch {
      return false;
    }
  }

  private consumePublic(address: string): boolean | Promise<boolean> {
    const message = 'Too many requests from this address; try again later';
    if (this.publicLimiter instanceof WindowCounter) {
      const verdict = this.publicLimiter.consume(address);
      if (!verdict.allowed) throw tooMany(verdict.msBeforeNext, message);
      return true;
    }
    const verdict = this.publicLimiter.take(limiterKey(address));
    const decide = (v: LeaseVerdict): boolean => {
      if (!v.allowed) throw tooMany(v.msBeforeNext, message);
      return true;
    };
    return verdict instanceof Promise ? verdict.then(decide) : decide(verdict);
  }

  /** One failure point for the address; remembers the address as blocked once the budget is used up. */
  private async recordFailure(address: string): Promise<void> {
    // Already known to be blocked until the window ends: nothing more to learn.
    if (this.blockedUntil(address) !== undefined) return;
    if (this.failureLimiter instanceof WindowCounter) {
      const verdict = this.failureLimiter.consume(address);
      if (verdict.remaining <= 0) this.block(address, verdict.msBeforeNext);
      return;
    }
    try {
      const res = await this.failureLimiter.consume(limiterKey(address));
      if (res.remainingPoints <= 0) this.block(address, res.msBeforeNext);
    } catch (rejection) {
      if (rejection instanceof RateLimiterRes) this.block(address, rejection.msBeforeNext);
    }
  }

  private block(address: string, msBeforeNext: number): void {
    this.blocked.set(address, Date.now() + Math.max(1000, msBeforeNext));
  }
}

/** A limit per address: counted in process (embedded default) or shared through Redis. */
type AddressLimiter = WindowCounter | RateLimiterAbstract;

/** Hashes of the addresses seen lately: a public route's address is hashed once, not per request. */
const limiterKeys = new LRUCache<string, string>({ max: 10_000 });

/** Limiter keys carry no address in clear text (Redis keys show up in tooling). */
function limiterKey(address: string): string {
  let key = limiterKeys.get(address);
  if (key === undefined) {
    key = createHash('sha256').update(address).digest('hex').slice(0, 32);
    limiterKeys.set(address, key);
  }
  return key;
}

function tooMany(msBeforeNext: number, message: string): AppError {
  return new RateLimitedError(message, msBeforeNext);
}
