import { Controller, HttpCode, Param, Patch, Post, Req } from '@nestjs/common';
import { ApiBody, ApiHeader, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { NotFoundError, ValidationError, type FieldError } from '../../common/errors/app-error';
import { CurrentActor, RequireFeature, RequirePermission } from '../../common/decorators/context.decorators';
import { ApiErrors } from '../../common/http/api-docs';
import type { Actor } from '../../common/request-context';
import { etagOf, LAST_MODIFIED_KEY } from '../../records/concurrency-token';
import type { Row } from '../../records/records-read.repository';
import { parseRecordId } from '../../records/values';
import { BulkAnswer, bulkAnswer, bulkRowId } from '../../entity/bulk-body';
import { BULK_RESULT_SCHEMA } from '../../entity/entity.api-docs';
import { ROW } from '../dataview.api-docs';
import { parseGridRequest } from '../grid/grid-request';
import { ActionTarget, DataviewActions } from './dataview-actions';
import { Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';

const ACTION_KEYS = new Set(['ids', 'all', 'filters', 'confirm']);

/** `{ids}` or `{all: true, filters?}`, plus `confirm` (D52); 400 naming every problem. */
export function parseActionBody(body: unknown): { target: ActionTarget; confirmed: boolean } {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new ValidationError('Validation failed', [{ field: 'body', error: 'must be an object' }]);
  const b = body as Record<string, unknown>;
  const errors: FieldError[] = [];
  for (const key of Object.keys(b))
    if (!ACTION_KEYS.has(key)) errors.push({ field: key, error: 'is not an action option' });
  if (b.confirm !== undefined && typeof b.confirm !== 'boolean')
    errors.push({ field: 'confirm', error: 'must be true or false' });
  if (b.all !== undefined && b.all !== true) errors.push({ field: 'all', error: 'must be true when given' });
  if ((b.ids === undefined) === (b.all === undefined))
    errors.push({ field: 'body', error: 'must name either ids or all: true' });
  if (b.filters !== undefined && b.all === undefined)
    errors.push({ field: 'filters', error: 'is taken with all: true only' });
  let target: ActionTarget | undefined;
  if (b.ids !== undefined) {
    if (!Array.isArray(b.ids) || b.ids.length === 0)
      errors.push({ field: 'ids', error: 'must be a non-empty array' });
    else {
      // As a bulk row's id (issue 34 #5): a float, an object or non-digits is a 400 naming it.
      const ids: number[] = [];
      const seen = new Set<number>();
      for (const [i, raw] of (b.ids as unknown[]).entries()) {
        const read = bulkRowId(raw);
        if ('error' in read) errors.push({ field: `ids[${i}]`, error: read.error });
        else if (seen.has(read.id))
          errors.push({ field: `ids[${i}]`, error: 'names a record an earlier id names' });
        else seen.add(read.id);
        ids.push('id' in read ? read.id : NaN);
      }
      target = { ids };
    }
  } else if (b.all === true) {
    if (b.filters !== undefined && !Array.isArray(b.filters))
      errors.push({ field: 'filters', error: 'must be an array' });
    else if (errors.length === 0)
      target = {
        all: true,
        request: parseGridRequest(b.filters === undefined ? {} : { filters: JSON.stringify(b.filters) }),
      };
  }
  if (errors.length > 0 || !target) throw new ValidationError('Validation failed', errors);
  return { target, confirmed: b.confirm === true };
}

const ACTION_BODY = {
  type: 'object' as const,
  additionalProperties: false,
  description: 'ids, or all: true with the grid’s filters; confirm: true where the action requires it',
  properties: {
    ids: {
      type: 'array' as const,
      minItems: 1,
      items: { oneOf: [{ type: 'integer' as const }, { type: 'string' as const }] },
    },
    all: { type: 'boolean' as const, enum: [true] },
    filters: {
      type: 'array' as const,
      items: { type: 'object' as const, additionalProperties: true },
      description: 'As the data route’s filters: [{fieldCode, operator, value}]',
    },
    confirm: { type: 'boolean' as const },
  },
  example: { ids: [1, 2, 3], confirm: true },
};

/**
 * Dataview bulk actions and inline editing (D52). Like the other dataview routes: a token, the
 * role's `read:dataview`, the tenant feature `dataviews`; the action's operation then needs its own
 * permission on the source entity (update, delete) or the role's `execute:workflow`.
 */
@ApiTags('dataviews')
@RequirePermission('read:dataview')
@RequireFeature('dataviews')
@Controller('api/v1/dataviews')
export class DataviewActionsController {
  constructor(private readonly actions: DataviewActions) {}

  @Post(':dvc_code/actions/:actionId')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'runDataviewAction',
    summary:
      'Run a configured bulk action (update, delete, workflow) on ids or on the filtered set (D52); a result per row as D51',
  })
  @ApiParam({ name: 'dvc_code', example: 'customers_grid' })
  @ApiParam({ name: 'actionId', example: 'make_silver' })
  @ApiBody({ schema: ACTION_BODY })
  @ApiOkResponse({
    description: 'A result per row (a workflow row: 202 and its instanceId)',
    schema: BULK_RESULT_SCHEMA,
  })
  @ApiErrors(
    'VALIDATION_ERROR',
    'UNAUTHORIZED',
    'FORBIDDEN',
    'FEATURE_DISABLED',
    'NOT_FOUND',
    'PAYLOAD_TOO_LARGE',
    'NOT_IMPLEMENTED',
  )
  async run(
    @Req() request: FastifyRequest,
    @CurrentActor() actor: Actor,
    @Param('dvc_code') code: string,
    @Param('actionId') actionId: string,
  ): Promise<BulkAnswer> {
    const { target, confirmed } = parseActionBody(request.body);
    return bulkAnswer(await this.actions.run(actor, code, actionId, target, confirmed));
  }

  @Patch(':dvc_code/rows/:id')
  @ApiOperation({
    operationId: 'editDataviewRow',
    summary:
      'Inline edit (D52): lastModified plus fields of editableColumns the profile lets the caller write; answers the row as the grid shows it',
  })
  @ApiParam({ name: 'dvc_code', example: 'orders_grid' })
  @ApiParam({ name: 'id', schema: { type: 'integer', minimum: 1, example: 1 } })
  @ApiHeader({ name: 'If-Match', required: false, description: 'The row’s ETag, instead of lastModified' })
  @ApiBody({
    schema: {
      type: 'object',
      additionalProperties: true,
      properties: { lastModified: { type: 'string', format: 'date-time', nullable: true } },
      example: { lastModified: '2026-11-23T05:03:25.085Z', status: 'paid' },
    },
  })
  @ApiOkResponse({
    description: 'The row as the grid shows it; ETag',
    schema: {
      type: 'object',
      required: ['success', 'data', 'meta'],
      properties: {
        success: { type: 'boolean', enum: [true] },
        data: ROW,
        meta: {
          type: 'object',
          required: ['timestamp', 'requestId'],
          properties: { timestamp: { type: 'string' }, requestId: { type: 'string' } },
        },
      },
    },
  })
  @ApiErrors(
    'VALIDATION_ERROR',
    'UNAUTHORIZED',
    'FORBIDDEN',
    'FEATURE_DISABLED',
    'NOT_FOUND',
    'CONFLICT',
    'NOT_IMPLEMENTED',
  )
  async edit(
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
    @CurrentActor() actor: Actor,
    @Param('dvc_code') code: string,
    @Param('id') id: string,
  ): Promise<Row> {
    const recordId = parseRecordId(id);
    if (recordId === undefined) throw new NotFoundError(`Record ${id} not found`);
    const row = await this.actions.editRow(actor, code, recordId, request.body, request.headers['if-match']);
    const etag = etagOf(row[LAST_MODIFIED_KEY] as string | null | undefined);
    if (etag) void reply.header('etag', etag);
    return row;
  }
}
