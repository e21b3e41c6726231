import { Controller, Delete, HttpCode, Param, Post, Put, Req, UseGuards } from '@nestjs/common';
import {
  ApiBody,
  ApiCreatedResponse,
  ApiHeader,
  ApiOkResponse,
  ApiOperation,
  ApiParam,
  ApiQuery,
  ApiTags,
} from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { Authenticated } from '../common/decorators/context.decorators';
import { ApiErrors } from '../common/http/api-docs';
import type { Enveloped } from '../common/http/envelope';
import { ENTITY_CHAIN, EntityOperation } from './entity.guards';
import { DeleteResult, EntityWriteService } from './entity-write.service';
import type { Row } from './entity.repository';

const RECORD = { type: 'object', additionalProperties: true };
const WRITE_ERRORS = ['VALIDATION_ERROR', 'UNAUTHORIZED', 'FORBIDDEN', 'NOT_FOUND', 'CONFLICT'] as const;

/**
 * Generic entity writes (spec §4.3 style 2, §3.1, D21-D25, D29). Same chain as the reads: token
 * (global) → entity info → profile loader → maintained-by → entity access → controller.
 */
@ApiTags('entities')
@Authenticated()
@Controller()
export class EntityWriteController {
  constructor(private readonly writes: EntityWriteService) {}

  @Post('api/v1/:entity_code')
  @HttpCode(201)
  @UseGuards(...ENTITY_CHAIN)
  @EntityOperation('create')
  @ApiOperation({ summary: 'Create a record; answers {id, ...payload, lastModified}' })
  @ApiParam({ name: 'entity_code' })
  @ApiBody({ schema: RECORD })
  @ApiCreatedResponse({ schema: RECORD })
  @ApiErrors(...WRITE_ERRORS)
  create(@Req() request: FastifyRequest): Promise<Row> {
    return this.writes.create(request);
  }

  @Put('api/v1/:entity_code/:id')
  @UseGuards(...ENTITY_CHAIN)
  @EntityOperation('update')
  @ApiOperation({ summary: 'Update a record; needs lastModified (body) or If-Match (D24)' })
  @ApiParam({ name: 'entity_code' })
  @ApiParam({ name: 'id' })
  @ApiHeader({ name: 'If-Match', required: false, description: 'lastModified of the record as read' })
  @ApiBody({ schema: RECORD })
  @ApiOkResponse({ schema: RECORD })
  @ApiErrors(...WRITE_ERRORS)
  update(@Req() request: FastifyRequest, @Param('id') id: string): Promise<Row> {
    return this.writes.update(request, id);
  }

  @Delete('api/v1/:entity_code/:id')
  @UseGuards(...ENTITY_CHAIN)
  @EntityOperation('delete')
  @ApiOperation({ summary: 'Soft-delete a record (spec §3.1); cascade=true also removes dependents (D25)' })
  @ApiParam({ name: 'entity_code' })
  @ApiParam({ name: 'id' })
  @ApiQuery({ name: 'cascade', required: false, enum: ['true', 'false'] })
  @ApiOkResponse({
    schema: {
      type: 'object',
      properties: {
        success: { type: 'boolean' },
        data: { type: 'object', properties: { success: { type: 'boolean' }, deletedAt: { type: 'string' } } },
        deletedAt: { type: 'string' },
        meta: { type: 'object' },
      },
    },
  })
  @ApiErrors(...WRITE_ERRORS)
  remove(@Req() request: FastifyRequest, @Param('id') id: string): Promise<Enveloped<DeleteResult>> {
    return this.writes.remove(request, id);
  }
}
