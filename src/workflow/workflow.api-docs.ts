import { applyDecorators, HttpCode } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiOperation, ApiParam } from '@nestjs/swagger';
import { ApiErrors } from '../common/http/api-docs';
import { INSTANCE_STATES } from './instance/state-machine';

/** The longest `reason` or `comment` of a state change. */
export const MAX_TEXT = 2000;

/** OpenAPI shapes of the workflow routes' `data`. */
export const WORKFLOW_SCHEMA = {
  type: 'object',
  properties: {
    id: { type: 'integer', example: 1 },
    code: { type: 'string', example: 'customer_onboarding' },
    name: { type: 'string', nullable: true, example: 'Customer onboarding' },
    description: { type: 'string', nullable: true },
    status: { type: 'string', enum: ['active', 'inactive'] },
    version: { type: 'integer', example: 2 },
    scope: { type: 'string', enum: ['system', 'tenant'] },
  },
};

export const INSTANCE_SCHEMA = {
  type: 'object',
  properties: {
    id: { type: 'integer', example: 1 },
    workflowCode: { type: 'string', example: 'customer_onboarding' },
    version: { type: 'integer', example: 2 },
    status: { type: 'string', enum: [...INSTANCE_STATES] },
    currentNode: { type: 'string', nullable: true, example: 'approve_gold' },
    error: { type: 'string', nullable: true },
    input: { type: 'object', additionalProperties: true, example: { customerId: 3, tier: 'gold' } },
    context: { type: 'object', additionalProperties: true, description: 'Values set by `set` steps' },
    startedBy: { type: 'integer', nullable: true },
    createdAt: { type: 'string', format: 'date-time', nullable: true },
    updatedAt: { type: 'string', format: 'date-time', nullable: true },
    completedAt: { type: 'string', format: 'date-time', nullable: true },
    waitingFor: {
      type: 'object',
      nullable: true,
      properties: {
        type: { type: 'string', enum: ['approval'] },
        step: { type: 'string' },
        message: { type: 'string' },
        permission: { type: 'string' },
        since: { type: 'string', format: 'date-time', nullable: true },
      },
    },
    nodes: {
      type: 'array',
      description: 'Single instance only: one entry per step reached',
      items: {
        type: 'object',
        properties: {
          nodeId: { type: 'string' },
          status: {
            type: 'string',
            enum: ['COMPLETED', 'WAITING', 'RETRYING', 'FAILED', 'REJECTED', 'TIMED_OUT'],
          },
          error: { type: 'string', nullable: true },
          attempts: { type: 'integer' },
          output: {},
          startedAt: { type: 'string', format: 'date-time', nullable: true },
          finishedAt: { type: 'string', format: 'date-time', nullable: true },
        },
      },
    },
  },
};

/** The start answer (D33: the instance id): `instanceId` beside the instance as queued. */
export const START_SCHEMA = {
  type: 'object',
  properties: { instanceId: { type: 'integer', example: 7 }, ...INSTANCE_SCHEMA.properties },
};

export const LOG_SCHEMA = {
  type: 'object',
  properties: {
    id: { type: 'integer' },
    level: { type: 'string', enum: ['debug', 'info', 'warn', 'error'] },
    message: { type: 'string' },
    data: {},
    createdAt: { type: 'string', format: 'date-time', nullable: true },
  },
};

/**
 * The OpenAPI of a state change of an instance (pause, resume, cancel, approve, reject): 200 with
 * the instance, an optional body `{reason}` or `{comment}`, 409 when illegal in the current state.
 */
export function ApiInstanceChange(
  operationId: string,
  summary: string,
  bodyKey: 'reason' | 'comment',
): MethodDecorator {
  return applyDecorators(
    HttpCode(200),
    ApiOperation({ operationId, summary }),
    ApiParam({ name: 'id', schema: { type: 'integer', minimum: 1, example: 1 } }),
    ApiBody({
      required: false,
      schema: { type: 'object', properties: { [bodyKey]: { type: 'string', maxLength: MAX_TEXT } } },
    }),
    ApiOkResponse({ schema: INSTANCE_SCHEMA }),
    ApiErrors('VALIDATION_ERROR', 'UNAUTHORIZED', 'FORBIDDEN', 'FEATURE_DISABLED', 'NOT_FOUND', 'CONFLICT'),
  );
}
