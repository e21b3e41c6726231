import { Controller, Get, Param, Req, Res } from '@nestjs/common';
import { ApiHeader, ApiOkResponse, ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import {
  CurrentActor,
  CurrentTenant,
  RequireFeature,
  RequirePermission,
} from '../common/decorators/context.decorators';
import { ApiErrors } from '../common/http/api-docs';
import { Enveloped } from '../common/http/envelope';
import type { Actor, TenantContext } from '../common/request-context';
import { entityTags } from '../records/concurrency-token';
import { configAnswer, DataviewConfigService } from './config/dataview-config.service';
import { ApiGridQuery, CONFIG_SCHEMA, DATA_SCHEMA } from './dataview.api-docs';
import { ReadDataviewData } from './grid/grid-data';
import { parseGridRequest } from './grid/grid-request';

/**
 * Dataview routes (spec §4.4): the configuration of a grid and its data. Protected (token), the
 * role's `read:dataview` (D9), the tenant feature `dataviews` (D10); the data route also needs
 * `read` on the source entity (canPerform, D22). Only this controller sees the HTTP request.
 */
@ApiTags('dataviews')
@RequirePermission('read:dataview')
@RequireFeature('dataviews')
@Controller('api/v1/dataviews')
export class DataviewController {
  constructor(
    private readonly configs: DataviewConfigService,
    private readonly readData: ReadDataviewData,
  ) {}

  @Get(':dvc_code/config')
  @ApiOperation({
    operationId: 'getDataviewConfig',
    summary: 'Dataview configuration: the tenant’s row over the system row, dvc_config parsed',
  })
  @ApiParam({ name: 'dvc_code', example: 'customers_grid' })
  @ApiHeader({
    name: 'If-None-Match',
    required: false,
    description: 'The ETag of a copy held; 304 when it is current',
  })
  @ApiOkResponse({ description: 'With ETag: a hash of the configuration', schema: CONFIG_SCHEMA })
  @ApiResponse({ status: 304, description: 'If-None-Match names the current ETag' })
  @ApiErrors('UNAUTHORIZED', 'FORBIDDEN', 'FEATURE_DISABLED', 'NOT_FOUND')
  async config(
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
    @CurrentTenant() tenant: TenantContext,
    @Param('dvc_code') code: string,
  ): Promise<void> {
    const def = await this.configs.get(tenant.id, code);
    const etag = `"${def.version}"`;
    void reply.header('etag', etag);
    const tags = entityTags(request.headers['if-none-match']);
    if (tags.includes('*') || tags.includes(def.version)) {
      await reply.status(304).send();
      return;
    }
    await reply.send(configAnswer(def));
  }

  @Get(':dvc_code/data')
  @ApiOperation({
    operationId: 'getDataviewData',
    summary:
      'Dataview data: filters, sort, search; offset (page) or cursor pages; aggregates; groups (spec §4.4, D30, D31)',
  })
  @ApiParam({ name: 'dvc_code', example: 'customers_grid' })
  @ApiGridQuery()
  @ApiOkResponse({ schema: DATA_SCHEMA })
  @ApiErrors(
    'VALIDATION_ERROR',
    'UNAUTHORIZED',
    'FORBIDDEN',
    'FEATURE_DISABLED',
    'NOT_FOUND',
    'NOT_IMPLEMENTED',
  )
  async data(
    @Req() request: FastifyRequest,
    @CurrentActor() actor: Actor,
    @Param('dvc_code') code: string,
  ): Promise<Enveloped<unknown[]>> {
    const input = parseGridRequest(request.query);
    const answer = await this.readData.execute(actor, code, input);
    return new Enveloped<unknown[]>(answer.data, answer.extras);
  }
}
