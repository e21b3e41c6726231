import { Controller, Get, Param, Req, UseGuards } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiParam, ApiQuery, ApiTags } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { Authenticated } from '../common/decorators/context.decorators';
import { AuthorizationError } from '../common/errors/app-error';
import { ApiErrors } from '../common/http/api-docs';
import { ENTITY_CHAIN, EntityOperation } from './entity.guards';
import { EntityService, ListResult } from './entity.service';
import type { Row } from './entity.repository';

const LIST_SCHEMA = {
  type: 'object',
  properties: {
    success: { type: 'boolean' },
    data: {
      type: 'object',
      properties: {
        records: { type: 'array', items: { type: 'object', additionalProperties: true } },
        total: { type: 'integer' },
        limit: { type: 'integer' },
        skip: { type: 'integer' },
        meta: {
          type: 'object',
          properties: { entityCode: { type: 'string' }, retrievedAt: { type: 'string' } },
        },
      },
    },
    meta: { type: 'object' },
  },
};

/**
 * Generic entity reads (spec §4.3). Chain: token (global) → entity info → profile loader →
 * maintained-by → entity access → controller.
 */
@ApiTags('entities')
@Authenticated()
@Controller()
export class EntityController {
  constructor(private readonly entities: EntityService) {}

  @Get('api/v1/records')
  @UseGuards(...ENTITY_CHAIN)
  @EntityOperation('read')
  @ApiOperation({ summary: 'Plain-array form of an entity read (D28)' })
  @ApiQuery({ name: 'entity', required: true, description: 'Entity code' })
  @ApiOkResponse({
    schema: {
      type: 'object',
      properties: { success: { type: 'boolean' }, data: { type: 'array', items: { type: 'object' } } },
    },
  })
  @ApiErrors('VALIDATION_ERROR', 'UNAUTHORIZED', 'FORBIDDEN', 'NOT_FOUND')
  async records(@Req() request: FastifyRequest): Promise<Row[]> {
    return (await this.entities.list(request, this.entities.parseListQuery(request))).records;
  }

  @Get('api/entity/:entity_code/get')
  @UseGuards(...ENTITY_CHAIN)
  @EntityOperation('read')
  @ApiOperation({ summary: 'Style 1 read; ten_id must be the caller’s tenant (D28)' })
  @ApiParam({ name: 'entity_code' })
  @ApiQuery({ name: 'ten_id', required: false })
  @ApiOkResponse({
    schema: {
      type: 'object',
      properties: { success: { type: 'boolean' }, data: { type: 'array', items: { type: 'object' } } },
    },
  })
  @ApiErrors('VALIDATION_ERROR', 'UNAUTHORIZED', 'FORBIDDEN', 'NOT_FOUND')
  async styleOne(@Req() request: FastifyRequest): Promise<Row[]> {
    const tenId = (request.query as Record<string, unknown>).ten_id;
    if (tenId !== undefined && (typeof tenId !== 'string' || tenId !== request.tenant?.id)) {
      throw new AuthorizationError('ten_id does not match the tenant of the token');
    }
    return (await this.entities.list(request, this.entities.parseListQuery(request))).records;
  }

  @Get('api/v1/:entity_code')
  @UseGuards(...ENTITY_CHAIN)
  @EntityOperation('read')
  @ApiOperation({ summary: 'List records: filters[<field>]=<value>, limit, skip, sortBy, sortOrder' })
  @ApiParam({ name: 'entity_code' })
  @ApiOkResponse({ schema: LIST_SCHEMA })
  @ApiErrors('VALIDATION_ERROR', 'UNAUTHORIZED', 'FORBIDDEN', 'NOT_FOUND', 'NOT_IMPLEMENTED')
  list(@Req() request: FastifyRequest): Promise<ListResult> {
    return this.entities.list(request, this.entities.parseListQuery(request));
  }

  @Get('api/v1/:entity_code/:id')
  @UseGuards(...ENTITY_CHAIN)
  @EntityOperation('read')
  @ApiOperation({ summary: 'One record by id' })
  @ApiParam({ name: 'entity_code' })
  @ApiParam({ name: 'id' })
  @ApiErrors('VALIDATION_ERROR', 'UNAUTHORIZED', 'FORBIDDEN', 'NOT_FOUND', 'NOT_IMPLEMENTED')
  get(@Req() request: FastifyRequest, @Param('id') id: string): Promise<Row> {
    return this.entities.get(request, id);
  }
}
