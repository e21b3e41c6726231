import { applyDecorators, HttpCode } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiOperation, ApiParam } from '@nestjs/swagger';
import { ApiErrors, envelopeSchema } from '../common/http/api-docs';
import { INSTANCE_STATES } from './instance/state-machine';

/** The longest `reason` or `comment` of a state change. */
export const MAX_TEXT = 2000;

/** OpenAPI shapes of the workflow routes' `data` (every key is always sent; absent values are null). */
export const WORKFLOW_SCHEMA = {
  type: 'object',
  required: ['id', 'code', 'name', 'description', 'status', 'version', 'scope'],
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

const INSTANCE_REQUIRED = [
  'id',
  'workflowCode',
  'version',
  'status',
  'currentNode',
  'error',
  'input',
  'context',
  'startedBy',
  'createdAt',
  'updatedAt',
  'completedAt',
  'waitingFor',
];

export const INSTANCE_SCHEMA = {
  type: 'object',
  required: INSTANCE_REQUIRED,
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
      description: 'Set while the instance waits at an approval step, else null',
      required: ['type', 'step', 'message', 'permission', 'since'],
      properties: {
        type: { type: 'string', enum: ['approval'] },
        step: { type: 'string' },
        message: { description: "The approval step's `message` (usually text), or null" },
        permission: { description: "The approval step's `permission` (default `approve`)" },
        since: { type: 'string', format: 'date-time', nullable: true },
      },
    },
    nodes: {
      type: 'array',
      description: 'Single instance only: one entry per step reached',
      items: {
        type: 'object',
        required: ['nodeId', 'status', 'error', 'attempts', 'output', 'startedAt', 'finishedAt'],
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
  required: ['instanceId', ...INSTANCE_REQUIRED],
  properties: { instanceId: { type: 'integer', example: 7 }, ...INSTANCE_SCHEMA.properties },
};

export const LOG_SCHEMA = {
  type: 'object',
  required: ['id', 'level', 'message', 'data', 'createdAt'],
  properties: {
    id: { type: 'integer' },
    level: { type: 'string', enum: ['debug', 'info', 'warn', 'error'] },
    message: { type: 'string', nullable: true },
    data: {},
    createdAt: { type: 'string', format: 'date-time', nullable: true },
  },
};

/** The keys beside `data` of the instance list. */
export const PAGE_EXTRAS = {
  count: { type: 'integer', description: 'Instances in this answer', example: 2 },
  total: { type: 'integer', description: 'Instances matching the filters', example: 12 },
  page: { type: 'integer', minimum: 1, example: 1 },
  pageSize: { type: 'integer', minimum: 1, maximum: 100, example: 25 },
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
    ApiOkResponse({ description: 'The instance after the change', schema: envelopeSchema(INSTANCE_SCHEMA) }),
    ApiErrors('VALIDATION_ERROR', 'UNAUTHORIZED', 'FORBIDDEN', 'FEATURE_DISABLED', 'NOT_FOUND', 'CONFLICT'),
  );
}
