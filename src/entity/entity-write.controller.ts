import { Controller, Delete, HttpCode, Param, Post, Put, Req, Res, UseGuards } from '@nestjs/common';
import {
  ApiBody,
  ApiCreatedResponse,
  ApiHeader,
  ApiOkResponse,
  ApiOperation,
  ApiQuery,
  ApiTags,
} from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Authenticated } from '../common/decorators/context.decorators';
import { ApiErrors } from '../common/http/api-docs';
import {
  ApiEntityCodeParam,
  ApiRecordIdParam,
  BULK_INPUT_SCHEMA,
  BULK_RESULT_SCHEMA,
  deleteSchema,
  RECORD_INPUT_SCHEMA,
  RECORD_SCHEMA,
  successSchema,
} from './entity.api-docs';
import { Enveloped } from '../common/http/envelope';
import { etagOf, expectedToken, LAST_MODIFIED_KEY } from '../records/concurrency-token';
import type { Row } from '../records/records-read.repository';
import { CreateRecord } from '../records/use-cases/create-record';
import { DeleteRecord, DeleteResult } from '../records/use-cases/delete-record';
import { UpdateRecord } from '../records/use-cases/update-record';
import { parseRecordId } from '../records/values';
import { NotFoundError, ValidationError } from '../common/errors/app-error';
import { RecordCtx } from './entity.decorators';
import type { RecordContext } from '../records/record-context';
import { ENTITY_CHAIN, EntityOperation, EntityOperationFromBody } from './entity.guards';
import type { AppConfig } from '../config/config.schema';
import { InjectConfig } from '../config/inject-config.decorator';
import { BulkRecords } from '../records/use-cases/bulk-records';
import { BulkAnswer, bulkAnswer, parseBulkBody } from './bulk-body';

/** NOT_IMPLEMENTED: an entity of an object or database type the service cannot write (D26). */
const WRITE_ERRORS = [
  'VALIDATION_ERROR',
  'UNAUTHORIZED',
  'FORBIDDEN',
  'NOT_FOUND',
  'CONFLICT',
  'NOT_IMPLEMENTED',
] as const;

/** D42: a written record's new token as its ETag, so the next save can use If-Match. */
function withEtag(reply: FastifyReply, record: Row): Row {
  const etag = etagOf(record[LAST_MODIFIED_KEY] as string | null | undefined);
  if (etag) void reply.header('etag', etag);
  return record;
}

/**
 * Generic entity writes (spec §4.3 style 2, §3.1, D21-D25, D29). Same chain as the reads: token
 * (global) → entity info → profile loader → maintained-by → entity access → controller.
 */
@ApiTags('entities')
@Authenticated()
@Controller()
export class EntityWriteController {
  constructor(
    private readonly createRecord: CreateRecord,
    private readonly updateRecord: UpdateRecord,
    private readonly deleteRecord: DeleteRecord,
    private readonly bulkRecords: BulkRecords,
    @InjectConfig() private readonly config: AppConfig,
  ) {}

  @Post('api/v1/:entity_code/bulk')
  @HttpCode(200)
  @UseGuards(...ENTITY_CHAIN)
  @EntityOperationFromBody()
  @ApiOperation({
    operationId: 'bulkRecords',
    summary:
      'Create, update or delete many records (D51): a result per row with the status and error the single route would give; allOrNone writes all or nothing',
  })
  @ApiEntityCodeParam()
  @ApiBody({ schema: BULK_INPUT_SCHEMA })
  @ApiOkResponse({ description: 'A result per row', schema: BULK_RESULT_SCHEMA })
  @ApiErrors(...WRITE_ERRORS, 'PAYLOAD_TOO_LARGE')
  async bulk(@Req() request: FastifyRequest, @RecordCtx() ctx: RecordContext): Promise<BulkAnswer> {
    const input = parseBulkBody(request.body, this.config.writes.bulkMaxRows);
    return bulkAnswer(await this.bulkRecords.execute(ctx, input));
  }

  @Post('api/v1/:entity_code')
  @HttpCode(201)
  @UseGuards(...ENTITY_CHAIN)
  @EntityOperation('create')
  @ApiOperation({
    operationId: 'createRecord',
    summary: 'Create a record; answers the record as a read shows it, with lastModified and ETag',
  })
  @ApiEntityCodeParam()
  @ApiBody({ schema: RECORD_INPUT_SCHEMA })
  @ApiCreatedResponse({
    description: 'The record as a read shows it; ETag',
    schema: successSchema(RECORD_SCHEMA),
  })
  @ApiErrors(...WRITE_ERRORS)
  async create(
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
    @RecordCtx() ctx: RecordContext,
  ): Promise<Row> {
    return withEtag(reply, await this.createRecord.execute(ctx, request.body));
  }

  @Put('api/v1/:entity_code/:id')
  @UseGuards(...ENTITY_CHAIN)
  @EntityOperation('update')
  @ApiOperation({
    operationId: 'updateRecord',
    summary:
      'Update a record; needs lastModified (body) or If-Match (D24); values sent back as read (masked, read-only) are ignored (D43); answers the whole record with its new lastModified and ETag',
  })
  @ApiEntityCodeParam()
  @ApiRecordIdParam()
  @ApiHeader({
    name: 'If-Match',
    required: false,
    description: 'The record’s ETag (its lastModified, quoted) as read; instead of lastModified in the body',
    example: '"2026-11-23T05:03:25.085Z"',
  })
  @ApiBody({ schema: RECORD_INPUT_SCHEMA })
  @ApiOkResponse({
    description: 'The whole record with its new lastModified; ETag',
    schema: successSchema(RECORD_SCHEMA),
  })
  @ApiErrors(...WRITE_ERRORS)
  async update(
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
    @RecordCtx() ctx: RecordContext,
    @Param('id') id: string,
  ): Promise<Row> {
    const body = request.body;
    const expected = expectedToken(
      body && typeof body === 'object' && !Array.isArray(body)
        ? (body as Record<string, unknown>)[LAST_MODIFIED_KEY]
        : undefined,
      request.headers['if-match'],
    );
    const recordId = parseRecordId(id);
    if (recordId === undefined) {
      // D24's missing token is reported first, as for any id; an id the INT key cannot hold is a 404 (D45).
      if (expected.error) throw new ValidationError('Validation failed', [expected.error]);
      throw new NotFoundError(`${ctx.entity.code} ${id} not found`);
    }
    return withEtag(reply, await this.updateRecord.execute(ctx, recordId, body, expected));
  }

  @Delete('api/v1/:entity_code/:id')
  @UseGuards(...ENTITY_CHAIN)
  @EntityOperation('delete')
  @ApiOperation({
    operationId: 'deleteRecord',
    summary: 'Soft-delete a record (spec §3.1); cascade=true also removes dependents (D25)',
  })
  @ApiEntityCodeParam()
  @ApiRecordIdParam()
  @ApiQuery({
    name: 'cascade',
    required: false,
    enum: ['true', 'false'],
    description: 'true also soft-deletes the dependents (D25); without it dependents answer 409',
  })
  @ApiOkResponse({ description: 'Soft-deleted (spec §3.1)', schema: deleteSchema() })
  @ApiErrors(...WRITE_ERRORS)
  async remove(
    @Req() request: FastifyRequest,
    @RecordCtx() ctx: RecordContext,
    @Param('id') id: string,
  ): Promise<Enveloped<DeleteResult>> {
    const cascade = (request.query as Record<string, unknown>).cascade;
    if (cascade !== undefined && cascade !== 'true' && cascade !== 'false') {
      throw new ValidationError('Invalid query', [{ field: 'cascade', error: 'must be true or false' }]);
    }
    const recordId = parseRecordId(id);
    if (recordId === undefined) throw new NotFoundError(`${ctx.entity.code} ${id} not found`);
    const result = await this.deleteRecord.execute(ctx, recordId, { cascade: cascade === 'true' });
    return new Enveloped<DeleteResult>(result, { deletedAt: result.deletedAt });
  }
}
