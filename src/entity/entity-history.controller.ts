import { Controller, Get, HttpCode, Param, Post, Req, Res, UseGuards } from '@nestjs/common';
import {
  ApiBody,
  ApiHeader,
  ApiOkResponse,
  ApiOperation,
  ApiParam,
  ApiQuery,
  ApiTags,
} from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Authenticated } from '../common/decorators/context.decorators';
import { FieldError, NotFoundError, ValidationError } from '../common/errors/app-error';
import { ApiErrors } from '../common/http/api-docs';
import { etagOf, expectedToken, LAST_MODIFIED_KEY } from '../records/concurrency-token';
import type { RecordContext } from '../records/record-context';
import type { Row } from '../records/records-read.repository';
import { RecordHistory, type HistoryPage, type RecordAtVersion } from '../records/use-cases/record-history';
import { RestoreVersion } from '../records/use-cases/restore-record';
import { UndeleteRecord } from '../records/use-cases/undelete-record';
import { parseRecordId } from '../records/values';
import {
  HISTORY_PAGE_SCHEMA,
  RECORD_AT_VERSION_SCHEMA,
  RESTORE_INPUT_SCHEMA,
  RESTORE_RESULT_SCHEMA,
} from './entity-history.api-docs';
import { ApiEntityCodeParam, ApiRecordIdParam } from './entity.api-docs';
import { RecordCtx } from './entity.decorators';
import { ENTITY_CHAIN, EntityOperation } from './entity.guards';

const HISTORY_DEFAULT_LIMIT = 50;
const HISTORY_MAX_LIMIT = 200;

/** NOT_IMPLEMENTED: an entity of an object or database type the service cannot serve (D26). */
const READ_ERRORS = [
  'VALIDATION_ERROR',
  'UNAUTHORIZED',
  'FORBIDDEN',
  'NOT_FOUND',
  'NOT_IMPLEMENTED',
] as const;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `limit` (1-200, default 50) and `skip` of a history page; nothing else. */
function historyPage(query: unknown): { limit: number; skip: number } {
  const q = isPlainObject(query) ? query : {};
  const errors: FieldError[] = [];
  const int = (name: string, fallback: number, min: number, max: number): number => {
    const raw = q[name];
    if (raw === undefined || raw === '') return fallback;
    if (typeof raw !== 'string' || !/^\d{1,10}$/.test(raw) || Number(raw) < min || Number(raw) > max) {
      errors.push({ field: name, error: `must be an integer from ${min} to ${max}` });
      return fallback;
    }
    return Number(raw);
  };
  const limit = int('limit', HISTORY_DEFAULT_LIMIT, 1, HISTORY_MAX_LIMIT);
  const skip = int('skip', 0, 0, 1_000_000_000);
  for (const key of Object.keys(q))
    if (key !== 'limit' && key !== 'skip') errors.push({ field: key, error: 'unknown query parameter' });
  if (errors.length > 0) throw new ValidationError('Invalid query', errors);
  return { limit, skip };
}

/**
 * Record history and restore (D56): the generic entity chain with `read` (the fast refusal of a
 * caller who cannot see the entity at all); the use cases decide the rest — restore needs update,
 * undelete delete — and the caller's read scope decides whether the record exists.
 */
@ApiTags('entities')
@Authenticated()
@Controller()
export class EntityHistoryController {
  constructor(
    private readonly history: RecordHistory,
    private readonly restoreVersion: RestoreVersion,
    private readonly undelete: UndeleteRecord,
  ) {}

  @Get('api/v1/:entity_code/:id/history')
  @UseGuards(...ENTITY_CHAIN)
  @EntityOperation('read')
  @ApiOperation({
    operationId: 'getRecordHistory',
    summary:
      'A record’s changes, newest first (D56): who, when, what; values shaped by the caller’s profile (masked stays masked)',
  })
  @ApiEntityCodeParam()
  @ApiRecordIdParam()
  @ApiQuery({
    name: 'limit',
    required: false,
    schema: { type: 'integer', minimum: 1, maximum: 200, default: 50 },
  })
  @ApiQuery({ name: 'skip', required: false, schema: { type: 'integer', minimum: 0, default: 0 } })
  @ApiOkResponse({ description: 'A page of the record’s history', schema: HISTORY_PAGE_SCHEMA })
  @ApiErrors(...READ_ERRORS)
  async list(
    @Req() request: FastifyRequest,
    @RecordCtx() ctx: RecordContext,
    @Param('id') id: string,
  ): Promise<HistoryPage> {
    const page = historyPage(request.query);
    return this.history.list(ctx, this.recordId(ctx, id), page);
  }

  @Get('api/v1/:entity_code/:id/history/:version')
  @UseGuards(...ENTITY_CHAIN)
  @EntityOperation('read')
  @ApiOperation({
    operationId: 'getRecordVersion',
    summary: 'The record as it was after one version (D56), shaped by the caller’s profile',
  })
  @ApiEntityCodeParam()
  @ApiRecordIdParam()
  @ApiParam({ name: 'version', schema: { type: 'integer', minimum: 1, example: 2 } })
  @ApiOkResponse({ description: 'The record as of that version', schema: RECORD_AT_VERSION_SCHEMA })
  @ApiErrors(...READ_ERRORS)
  async version(
    @RecordCtx() ctx: RecordContext,
    @Param('id') id: string,
    @Param('version') version: string,
  ): Promise<RecordAtVersion> {
    const recordId = this.recordId(ctx, id);
    const v = /^\d{1,10}$/.test(version) ? Number(version) : NaN;
    if (!Number.isSafeInteger(v) || v < 1)
      throw new NotFoundError(`${ctx.entity.code} ${id} has no version ${version}`);
    return this.history.atVersion(ctx, recordId, v);
  }

  @Post('api/v1/:entity_code/:id/restore')
  @HttpCode(200)
  @UseGuards(...ENTITY_CHAIN)
  @EntityOperation('read')
  @ApiOperation({
    operationId: 'restoreRecord',
    summary:
      'Write an earlier version back as an update ({version, lastModified}; needs update; fields the caller cannot write are skipped) or undelete a soft-deleted record and its cascade ({undelete: true}; needs delete) (D56)',
  })
  @ApiEntityCodeParam()
  @ApiRecordIdParam()
  @ApiHeader({ name: 'If-Match', required: false, description: 'Instead of lastModified in the body' })
  @ApiBody({ schema: RESTORE_INPUT_SCHEMA })
  @ApiOkResponse({
    description: 'The record now, with its new lastModified; ETag',
    schema: RESTORE_RESULT_SCHEMA,
  })
  @ApiErrors('VALIDATION_ERROR', 'UNAUTHORIZED', 'FORBIDDEN', 'NOT_FOUND', 'CONFLICT', 'NOT_IMPLEMENTED')
  async restore(
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
    @RecordCtx() ctx: RecordContext,
    @Param('id') id: string,
  ): Promise<Row> {
    const body = request.body;
    if (!isPlainObject(body))
      throw new ValidationError('Validation failed', [{ field: 'body', error: 'must be a JSON object' }]);
    const errors: FieldError[] = [];
    for (const key of Object.keys(body))
      if (!['version', 'lastModified', 'undelete'].includes(key))
        errors.push({ field: key, error: 'is not a restore option' });
    if (body.undelete !== undefined) {
      if (body.undelete !== true) errors.push({ field: 'undelete', error: 'must be true' });
      if (body.version !== undefined || body.lastModified !== undefined)
        errors.push({ field: 'undelete', error: 'cannot be combined with version or lastModified' });
      if (errors.length > 0) throw new ValidationError('Validation failed', errors);
      const result = await this.undelete.execute(ctx, this.recordId(ctx, id));
      this.etag(reply, result.record);
      return { record: result.record, undeleted: result.undeleted };
    }
    const version = body.version;
    if (typeof version !== 'number' || !Number.isSafeInteger(version) || version < 1)
      errors.push({ field: 'version', error: 'must be a positive integer (or send undelete: true)' });
    const expected = expectedToken(body[LAST_MODIFIED_KEY], request.headers['if-match']);
    if (expected.error) errors.push(expected.error);
    if (errors.length > 0) throw new ValidationError('Validation failed', errors);
    const result = await this.restoreVersion.execute(
      ctx,
      this.recordId(ctx, id),
      version as number,
      expected,
    );
    this.etag(reply, result.record);
    return { record: result.record, restoredVersion: result.restoredVersion, skipped: result.skipped };
  }

  /** D45: an id the INT key cannot hold names no row. */
  private recordId(ctx: RecordContext, id: string): number {
    const recordId = parseRecordId(id);
    if (recordId === undefined) throw new NotFoundError(`${ctx.entity.code} ${id} not found`);
    return recordId;
  }

  private etag(reply: FastifyReply, record: Row): void {
    const etag = etagOf(record[LAST_MODIFIED_KEY] as string | null | undefined);
    if (etag) void reply.header('etag', etag);
  }
}
