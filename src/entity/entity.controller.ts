import { Controller, Get, Param, Req, Res, UseGuards } from '@nestjs/common';
import { ApiHeader, ApiOkResponse, ApiOperation, ApiQuery, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Authenticated } from '../common/decorators/context.decorators';
import { AuthorizationError } from '../common/errors/app-error';
import { ApiErrors } from '../common/http/api-docs';
import {
  ApiEntityCodeParam,
  ApiListQuery,
  ApiRecordIdParam,
  ARRAY_SCHEMA,
  LIST_SCHEMA,
  RECORD_EXAMPLE,
  RECORD_SCHEMA,
  successExample,
  successSchema,
  TEN_ID_PARAMETER,
} from './entity.api-docs';
import { Enveloped } from '../common/http/envelope';
import { etagOf, LAST_MODIFIED_KEY, notModified } from '../records/concurrency-token';
import { ENTITY_CHAIN, EntityOperation } from './entity.guards';
import { SerializedJson } from '../common/serialized-json';
import { ListRecords, ReadRecord } from '../records/use-cases/read-records';
import type { Row } from '../records/records-read.repository';
import { parseRecordId } from '../records/values';
import { NotFoundError } from '../common/errors/app-error';
import { ListQuery, RecordCtx } from './entity.decorators';
import type { OffsetQuery } from './list-query';
import type { RecordContext } from '../records/record-context';

/** D28: `ten_id`, where given, must be the tenant of the token (and header); else 403. */
function assertTenId(request: FastifyRequest): void {
  const tenId = (request.query as Record<string, unknown>).ten_id;
  if (tenId !== undefined && (typeof tenId !== 'string' || tenId !== request.tenant?.id)) {
    throw new AuthorizationError('ten_id does not match the tenant of the token');
  }
}

/**
 * Generic entity reads (spec §4.3). Chain: token (global) → entity info → profile loader →
 * maintained-by → entity access → controller.
 */
@ApiTags('entities')
@Authenticated()
@Controller()
export class EntityController {
  constructor(
    private readonly listRecords: ListRecords,
    private readonly readRecord: ReadRecord,
  ) {}

  @Get('api/v1/records')
  @UseGuards(...ENTITY_CHAIN)
  @EntityOperation('read')
  @ApiOperation({ operationId: 'listRecordsByQuery', summary: 'Plain-array form of an entity read (D28)' })
  @ApiQuery({ name: 'entity', required: true, description: 'Entity code', example: 'customers' })
  @ApiQuery(TEN_ID_PARAMETER)
  @ApiListQuery()
  @ApiOkResponse({ description: 'A page of records as a plain array', schema: ARRAY_SCHEMA })
  @ApiErrors('VALIDATION_ERROR', 'UNAUTHORIZED', 'FORBIDDEN', 'NOT_FOUND', 'NOT_IMPLEMENTED')
  async records(
    @Req() request: FastifyRequest,
    @RecordCtx() ctx: RecordContext,
    @ListQuery() query: OffsetQuery,
  ): Promise<Enveloped<Row[]>> {
    assertTenId(request);
    return this.plainArray(ctx, query);
  }

  @Get('api/entity/:entity_code/get')
  @UseGuards(...ENTITY_CHAIN)
  @EntityOperation('read')
  @ApiOperation({
    operationId: 'listEntityRecords',
    summary: 'Style 1 read; ten_id must be the caller’s tenant (D28)',
  })
  @ApiEntityCodeParam()
  @ApiQuery(TEN_ID_PARAMETER)
  @ApiListQuery()
  @ApiOkResponse({ description: 'A page of records as a plain array', schema: ARRAY_SCHEMA })
  @ApiErrors('VALIDATION_ERROR', 'UNAUTHORIZED', 'FORBIDDEN', 'NOT_FOUND', 'NOT_IMPLEMENTED')
  async styleOne(
    @Req() request: FastifyRequest,
    @RecordCtx() ctx: RecordContext,
    @ListQuery() query: OffsetQuery,
  ): Promise<Enveloped<Row[]>> {
    assertTenId(request);
    return this.plainArray(ctx, query);
  }

  @Get('api/v1/:entity_code')
  @UseGuards(...ENTITY_CHAIN)
  @EntityOperation('read')
  @ApiOperation({
    operationId: 'listRecords',
    summary: 'List records: filters[<field>]=<value>, limit, skip, sortBy, sortOrder',
  })
  @ApiEntityCodeParam()
  @ApiListQuery()
  @ApiOkResponse({ description: 'A page of records (spec §2.15)', schema: LIST_SCHEMA })
  @ApiErrors('VALIDATION_ERROR', 'UNAUTHORIZED', 'FORBIDDEN', 'NOT_FOUND', 'NOT_IMPLEMENTED')
  list(
    @RecordCtx() ctx: RecordContext,
    @ListQuery() query: OffsetQuery,
  ): SerializedJson | Promise<SerializedJson> {
    // The page as JSON text: a cached page is answered as the bytes the cache holds.
    return this.listRecords.executeSerialized(ctx, query);
  }

  @Get('api/v1/:entity_code/:id')
  @UseGuards(...ENTITY_CHAIN)
  @EntityOperation('read')
  @ApiOperation({ operationId: 'getRecord', summary: 'One record by id' })
  @ApiEntityCodeParam()
  @ApiRecordIdParam()
  @ApiHeader({ name: 'If-None-Match', required: false, description: 'ETag of a copy held; 304 if current' })
  @ApiOkResponse({
    description: 'The record with its lastModified; ETag: "<lastModified>" (D42)',
    schema: { ...successSchema(RECORD_SCHEMA), example: successExample(RECORD_EXAMPLE) },
  })
  @ApiResponse({ status: 304, description: 'If-None-Match names the current ETag' })
  @ApiErrors('VALIDATION_ERROR', 'UNAUTHORIZED', 'FORBIDDEN', 'NOT_FOUND', 'NOT_IMPLEMENTED')
  async get(
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
    @RecordCtx() ctx: RecordContext,
    @Param('id') id: string,
  ): Promise<void> {
    // D45: an id the INT key cannot hold names no row.
    const recordId = parseRecordId(id);
    if (recordId === undefined) throw new NotFoundError(`${ctx.entity.code} ${id} not found`);
    const record = await this.readRecord.execute(ctx, recordId);
    const token = record[LAST_MODIFIED_KEY] as string | null;
    const etag = etagOf(token);
    if (etag) void reply.header('etag', etag);
    // D42: the client's copy is current; no body.
    if (notModified(request.headers['if-none-match'], token)) {
      await reply.status(304).send();
      return;
    }
    await reply.send(record);
  }

  /** `/records` and style 1 (D28): a page of records as a plain array, with count and total. */
  private async plainArray(ctx: RecordContext, query: OffsetQuery): Promise<Enveloped<Row[]>> {
    const result = await this.listRecords.execute(ctx, query);
    return new Enveloped(result.records, { count: result.records.length, total: result.total });
  }
}
