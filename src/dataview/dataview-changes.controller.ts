import { Controller, Get, Param, Req, Res } from '@nestjs/common';
import { ApiHeader, ApiOperation, ApiParam, ApiProduces, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AcceptsTicket, CurrentActor, RequireFeature, RequirePermission } from '../common/decorators/context.decorators';
import { assertCanPerform } from '../profile/access/can-perform';
import { ApiErrors } from '../common/http/api-docs';
import type { Actor } from '../common/request-context';
import {
  ApiTicketQuery,
  serveChanges,
  STREAM_DESCRIPTION,
  STREAM_OPERATION_DESCRIPTION,
} from '../entity/live-changes.controller';
import { LiveChangesService, type LiveView, type Shaped } from '../entity/live-changes.service';
import type { RecordContext } from '../records/record-context';
import { RecordContextFactory } from '../records/record-context.factory';
import type { Row } from '../records/records-read.repository';
import { DataviewConfigService } from './config/dataview-config.service';
import { gridConfigOf } from './grid/grid-config';
import { rowMatches } from './grid/grid-match';
import { gridRow, planGrid } from './grid/grid-query';
import { parseGridRequest } from './grid/grid-request';

/**
 * D55: live changes of a dataview's grid: the source entity's changes as the caller reads them,
 * narrowed to the dataview's columns and its default filters (evaluated in memory on the row as
 * read); a row leaving those filters arrives as `deleted`.
 */
@ApiTags('dataviews')
@RequirePermission('read:dataview')
@RequireFeature('dataviews')
@Controller('api/v1/dataviews')
export class DataviewChangesController {
  constructor(
    private readonly live: LiveChangesService,
    private readonly configs: DataviewConfigService,
    private readonly contexts: RecordContextFactory,
  ) {}

  @Get(':dvc_code/changes')
  @AcceptsTicket()
  @ApiTicketQuery()
  @ApiOperation({
    operationId: 'streamDataviewChanges',
    summary: 'Live changes of a dataview (Server-Sent Events, D55)',
    description: STREAM_OPERATION_DESCRIPTION,
  })
  @ApiParam({ name: 'dvc_code', example: 'customers_grid' })
  @ApiHeader({ name: 'Last-Event-ID', required: false, description: 'Resume after this sequence (outbox retention)' })
  @ApiProduces('text/event-stream')
  @ApiResponse({
    status: 200,
    description: STREAM_DESCRIPTION,
    content: { 'text/event-stream': { schema: { type: 'string' } } },
  })
  @ApiErrors('UNAUTHORIZED', 'FORBIDDEN', 'FEATURE_DISABLED', 'NOT_FOUND', 'NOT_IMPLEMENTED', 'RATE_LIMITED')
  async changes(
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
    @CurrentActor() actor: Actor,
    @Param('dvc_code') code: string,
  ): Promise<void> {
    const def = await this.configs.get(actor.tenantId, code);
    const ctx = await this.contexts.forSource(actor, def.sourceEntity);
    assertCanPerform('read', ctx);
    // Built again when the stream's profile changes (its columns and filters as the new profile allows).
    const viewOf = (read: RecordContext): LiveView => {
      const plan = planGrid(gridConfigOf(def.config), read.entity, read.policy, parseGridRequest({}));
      const filters = plan.query.filters;
      const narrow = (shaped: Shaped): Shaped => {
        if (!shaped || shaped.event === 'deleted') return shaped;
        const data = JSON.parse(shaped.data) as { id: number; lastModified: unknown; row: Row };
        if (!rowMatches(data.row, filters))
          return shaped.event === 'created'
            ? null
            : { event: 'deleted', data: JSON.stringify({ id: data.id, lastModified: null, row: null }) };
        return {
          event: shaped.event,
          data: JSON.stringify({ ...data, row: gridRow(data.row, plan.rowFields) }),
        };
      };
      return { key: `dv:${def.id}:${def.version}`, narrow };
    };
    await serveChanges(this.live, request, reply, ctx, viewOf);
  }
}
