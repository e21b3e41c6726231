import { Controller, Get, Header } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { NoTenant } from '../common/decorators/context.decorators';
import { Public, RawResponse } from '../common/decorators/public.decorator';
import { ApiErrors } from '../common/http/api-docs';
import { NotFoundError } from '../common/errors/app-error';
import type { AppConfig } from '../config/config.schema';
import { InjectConfig } from '../config/inject-config.decorator';
import { MetricsService } from './metrics.service';

@ApiTags('health')
@Public()
@NoTenant()
@RawResponse()
@Controller('metrics')
export class MetricsController {
  constructor(
    @InjectConfig() private readonly config: AppConfig,
    private readonly metrics: MetricsService,
  ) {}

  @Get()
  @ApiErrors('NOT_FOUND')
  @Header('content-type', 'text/plain; version=0.0.4; charset=utf-8')
  @ApiOperation({
    operationId: 'getMetrics',
    summary: 'Prometheus metrics: request count and latency by route and status, pool and cache gauges',
  })
  @ApiOkResponse({
    description: 'Prometheus text exposition format 0.0.4 (`text/plain; version=0.0.4; charset=utf-8`)',
    content: {
      'text/plain': {
        schema: { type: 'string' },
        example:
          '# HELP http_requests_total Requests by route and status\n# TYPE http_requests_total counter\n' +
          'http_requests_total{method="GET",route="/api/v1/:entity_code",status="200"} 42\n',
      },
    },
  })
  async scrape(): Promise<string> {
    if (!this.config.metricsEnabled) throw new NotFoundError('Metrics are disabled (METRICS_ENABLED=false)');
    return this.metrics.registry.metrics();
  }
}
