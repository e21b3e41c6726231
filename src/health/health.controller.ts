import { Controller, Get, Res, ServiceUnavailableException } from '@nestjs/common';
import {
  ApiInternalServerErrorResponse,
  ApiOkResponse,
  ApiOperation,
  ApiServiceUnavailableResponse,
  ApiTags,
} from '@nestjs/swagger';
import { ErrorEnvelopeDto } from '../common/http/api-docs';
import {
  HealthCheckResult,
  HealthCheckService,
  HealthIndicatorResult,
  HealthIndicatorService,
} from '@nestjs/terminus';
import type { FastifyReply } from 'fastify';
import type { AppConfig } from '../config/config.schema';
import { InjectConfig } from '../config/inject-config.decorator';
import { NoTenant } from '../common/decorators/context.decorators';
import { DirectRoute, Public, RawResponse } from '../common/decorators/public.decorator';
import { CacheService } from '../cache/cache.service';
import { DatabaseService } from '../database/database.service';
import { ProbeChecks } from './probe-checks';
import { ReadinessFlag, ReadinessService } from './readiness.service';

type Indicator = () => Promise<HealthIndicatorResult>;

/**
 * The indicator of the cache store (issue 20 #8). Spec §3.3 calls its readiness flag `redis`, but
 * the flag is set by the PING of whichever store is configured (D2) — on the embedded default an
 * in-process store, no Redis at all — so the probes name what they check: `cache-store`, with
 * the store's `kind` (`memory` or `redis`) and, on /readyz and /livez, `flag: "redis"`. The flag
 * keeps its spec name everywhere else (the gate's 503 details, `service_readiness{flag}`).
 */
const CACHE_STORE = 'cache-store';
/** /healthz's answer: HealthCheckResult's shape (an interface: decorated signatures need a value-free type). */
type Liveness = HealthCheckResult;

const HEALTH_SCHEMA = {
  type: 'object',
  properties: {
    status: { type: 'string', enum: ['ok', 'error', 'shutting_down'] },
    info: { type: 'object', additionalProperties: true },
    error: { type: 'object', additionalProperties: true },
    details: { type: 'object', additionalProperties: true },
  },
};

/**
 * Probes (spec §4.6) in Terminus' format (D40). Not wrapped in the success envelope. The database
 * and cache checks come from ProbeChecks: computed at most once a second per instance, with single
 * flight, so probes stay cheap under any flood; the readiness flags are read live.
 */
@ApiTags('health')
@ApiInternalServerErrorResponse({ type: ErrorEnvelopeDto, description: 'SERVICE_ERROR: unexpected error' })
@Public()
@NoTenant()
@RawResponse()
@Controller()
export class HealthController {
  constructor(
    @InjectConfig() private readonly config: AppConfig,
    private readonly health: HealthCheckService,
    private readonly indicators: HealthIndicatorService,
    private readonly readiness: ReadinessService,
    private readonly database: DatabaseService,
    private readonly cache: CacheService,
    private readonly checks: ProbeChecks,
  ) {}

  @Get('healthz')
  @ApiOperation({
    operationId: 'getLiveness',
    summary: 'Liveness of the process: 200 whenever it is up; reports startupMode',
  })
  @ApiOkResponse({ schema: HEALTH_SCHEMA })
  @DirectRoute()
  healthz(): Liveness {
    // Terminus' format (D40) built directly: liveness checks nothing that can fail, so the
    // executor's promise machinery is not needed on the most-polled route.
    const process: HealthIndicatorResult[string] = {
      status: 'up',
      startupMode: this.startupMode(),
      ready: this.readiness.ready,
      uptimeSeconds: Math.round(globalThis.process.uptime()),
      ...(this.readiness.startupFailure ? { startupFailure: this.readiness.startupFailure } : {}),
    };
    return { status: 'ok', info: { process }, error: {}, details: { process } };
  }

  @Get('readyz')
  @ApiOperation({
    operationId: 'getReadiness',
    summary: 'Readiness: 200 iff the redis, externalDbs and cache flags are all set',
  })
  @ApiOkResponse({ schema: HEALTH_SCHEMA })
  @ApiServiceUnavailableResponse({ schema: HEALTH_SCHEMA })
  async readyz(@Res({ passthrough: true }) reply: FastifyReply): Promise<HealthCheckResult> {
    return this.run(reply, this.flagIndicators(false));
  }

  @Get('livez')
  @ApiOperation({
    operationId: 'getLivez',
    summary: 'Readiness plus SELECT 1 on the default pool and cache PING',
  })
  @ApiOkResponse({ schema: HEALTH_SCHEMA })
  @ApiServiceUnavailableResponse({ schema: HEALTH_SCHEMA })
  async livez(@Res({ passthrough: true }) reply: FastifyReply): Promise<HealthCheckResult> {
    return this.run(reply, [...this.flagIndicators(true), this.dbIndicator()]);
  }

  @Get(['health', 'api/v1/health'])
  @ApiOperation({ operationId: 'getHealth', summary: 'Database and cache health (after start-up)' })
  @ApiOkResponse({ schema: HEALTH_SCHEMA })
  @ApiServiceUnavailableResponse({ schema: HEALTH_SCHEMA })
  async healthSummary(@Res({ passthrough: true }) reply: FastifyReply): Promise<HealthCheckResult> {
    return this.run(reply, [this.dbIndicator(), this.cacheStoreIndicator({ ping: true })]);
  }

  @Get('health/db')
  @ApiOperation({ operationId: 'getDatabaseHealth', summary: 'SELECT 1 on the configuration database' })
  @ApiOkResponse({ schema: HEALTH_SCHEMA })
  @ApiServiceUnavailableResponse({ schema: HEALTH_SCHEMA })
  async healthDb(@Res({ passthrough: true }) reply: FastifyReply): Promise<HealthCheckResult> {
    return this.run(reply, [this.dbIndicator()]);
  }

  @Get('health/redis')
  @ApiOperation({ operationId: 'getCacheHealth', summary: 'PING on the cache (Redis or in-process)' })
  @ApiOkResponse({ schema: HEALTH_SCHEMA })
  @ApiServiceUnavailableResponse({ schema: HEALTH_SCHEMA })
  async healthRedis(@Res({ passthrough: true }) reply: FastifyReply): Promise<HealthCheckResult> {
    return this.run(reply, [this.cacheStoreIndicator({ ping: true })]);
  }

  /** `embedded` = SQLite + in-process cache; `server` = a database server and/or Redis. */
  private startupMode(): 'embedded' | 'server' {
    return this.config.db.type === 'sqlite' && !this.config.cache.url ? 'embedded' : 'server';
  }

  /**
   * The three readiness flags of spec §3.3 (D40), each under the name of what it checks: the
   * `redis` flag as `cache-store` (see CACHE_STORE), `externalDbs` and `cache` as they are. With
   * `ping` (/livez), `cache-store` also needs the cache PING now.
   */
  private flagIndicators(ping: boolean): Indicator[] {
    const flags = this.readiness.snapshot();
    const named = (flag: Exclude<ReadinessFlag, 'redis'>): Indicator => {
      return async () => {
        const check = this.indicators.check(flag);
        return flags[flag] ? check.up() : check.down({ message: 'not ready' });
      };
    };
    return [this.cacheStoreIndicator({ flag: flags.redis, ping }), named('externalDbs'), named('cache')];
  }

  private dbIndicator(): Indicator {
    return async () => {
      const check = this.indicators.check('database');
      const { ok } = await this.checks.database();
      return ok
        ? check.up({ dialect: this.database.dialect })
        : check.down({ dialect: this.database.dialect, message: 'SELECT 1 failed' });
    };
  }

  /**
   * The cache store (Redis or the in-process store, `kind`): with `flag`, whether start-up's
   * connect and PING succeeded (the readiness flag `redis`, named in the details); with `ping`,
   * whether it answers PING now.
   */
  private cacheStoreIndicator(options: { flag?: boolean; ping: boolean }): Indicator {
    return async () => {
      const check = this.indicators.check(CACHE_STORE);
      const details: Record<string, string> = { kind: this.cache.kind };
      if (options.flag !== undefined) details.flag = 'redis';
      if (options.flag === false) return check.down({ ...details, message: 'not ready' });
      if (!options.ping) return check.up(details);
      const { ok } = await this.checks.cache();
      return ok ? check.up(details) : check.down({ ...details, message: 'PING failed' });
    };
  }

  private async run(reply: FastifyReply, indicators: Indicator[]): Promise<HealthCheckResult> {
    try {
      return await this.health.check(indicators);
    } catch (err) {
      if (err instanceof ServiceUnavailableException) {
        void reply.status(503);
        return err.getResponse() as HealthCheckResult;
      }
      throw err;
    }
  }
}
