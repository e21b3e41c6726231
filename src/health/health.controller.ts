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
    return this.run(reply, this.flagIndicators());
  }

  @Get('livez')
  @ApiOperation({
    operationId: 'getLivez',
    summary: 'Readiness plus SELECT 1 on the default pool and cache PING',
  })
  @ApiOkResponse({ schema: HEALTH_SCHEMA })
  @ApiServiceUnavailableResponse({ schema: HEALTH_SCHEMA })
  async livez(@Res({ passthrough: true }) reply: FastifyReply): Promise<HealthCheckResult> {
    return this.run(reply, [...this.flagIndicators(), this.dbIndicator(), this.cacheIndicator()]);
  }

  @Get(['health', 'api/v1/health'])
  @ApiOperation({ operationId: 'getHealth', summary: 'Database and cache health (after start-up)' })
  @ApiOkResponse({ schema: HEALTH_SCHEMA })
  @ApiServiceUnavailableResponse({ schema: HEALTH_SCHEMA })
  async healthSummary(@Res({ passthrough: true }) reply: FastifyReply): Promise<HealthCheckResult> {
    return this.run(reply, [this.dbIndicator(), this.cacheIndicator()]);
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
    return this.run(reply, [this.cacheIndicator()]);
  }

  /** `embedded` = SQLite + in-process cache; `server` = a database server and/or Redis. */
  private startupMode(): 'embedded' | 'server' {
    return this.config.db.type === 'sqlite' && !this.config.cache.url ? 'embedded' : 'server';
  }

  private flagIndicators(): Indicator[] {
    const flags = this.readiness.snapshot();
    return (Object.keys(flags) as ReadinessFlag[]).map((flag) => async () => {
      const check = this.indicators.check(flag);
      return flags[flag] ? check.up() : check.down({ message: 'not ready' });
    });
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

  private cacheIndicator(): Indicator {
    return async () => {
      const check = this.indicators.check('cache');
      const { ok } = await this.checks.cache();
      return ok
        ? check.up({ kind: this.cache.kind })
        : check.down({ kind: this.cache.kind, message: 'PING failed' });
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
