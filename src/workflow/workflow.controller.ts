import { Body, Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import {
  ApiBody,
  ApiOkResponse,
  ApiOperation,
  ApiParam,
  ApiQuery,
  ApiResponse,
  ApiTags,
} from '@nestjs/swagger';
import {
  Authenticated,
  CurrentActor,
  CurrentTenant,
  RequireFeature,
  RequirePermission,
} from '../common/decorators/context.decorators';
import { NotFoundError, ValidationError, type FieldError } from '../common/errors/app-error';
import { parseRecordId } from '../records/values';
import { ApiErrors, envelopeSchema } from '../common/http/api-docs';
import { Enveloped } from '../common/http/envelope';
import type { Actor, TenantContext } from '../common/request-context';
import { WorkflowDefinitionsService, type WorkflowSummary } from './definition/workflow-definitions.service';
import type { LogRow } from './instance/journal.repository';
import { INSTANCE_STATES, isInstanceState, type InstanceState } from './instance/state-machine';
import {
  WorkflowInstancesService,
  type InstanceView,
} from './instance/workflow-instances.service';
import {
  ApiInstanceChange,
  INSTANCE_SCHEMA,
  START_SCHEMA,
  LOG_SCHEMA,
  MAX_TEXT,
  PAGE_EXTRAS,
  WORKFLOW_SCHEMA,
} from './workflow.api-docs';

const CODE = /^[A-Za-z0-9_.-]{1,100}$/;

/**
 * An instance id from the path: 400 unless it is a positive integer, 404 when it lies outside the
 * INT range of the key (D45): no instance has it, and PostgreSQL would refuse the comparison
 * (issue 21 #5).
 */
function parseInstanceId(value: string): number {
  if (!/^\d+$/.test(value) || /^0+$/.test(value))
    throw new ValidationError('Validation failed', [{ field: 'id', error: 'must be a positive integer' }]);
  const id = parseRecordId(value.replace(/^0+/, ''));
  if (id === undefined) throw new NotFoundError(`Workflow instance ${value} not found`);
  return id;
}

/** `{reason?}` or `{comment?}` of a state change: an optional string, at most 2,000 characters. */
function optionalText(body: unknown, key: 'reason' | 'comment'): string | null {
  if (body === undefined || body === null) return null;
  if (typeof body !== 'object' || Array.isArray(body))
    throw new ValidationError('Validation failed', [{ field: 'body', error: 'must be a JSON object' }]);
  const b = body as Record<string, unknown>;
  const unknown = Object.keys(b).filter((k) => k !== key);
  const problems: FieldError[] = unknown.map((k) => ({
    field: k,
    error: `is not a field of this request (only ${key})`,
  }));
  const value = b[key];
  if (value !== undefined && value !== null && (typeof value !== 'string' || value.length > MAX_TEXT))
    problems.push({ field: key, error: `must be a string of at most ${MAX_TEXT} characters` });
  if (problems.length > 0) throw new ValidationError('Validation failed', problems);
  return typeof value === 'string' && value.trim() !== '' ? value : null;
}

function intParam(
  raw: string | undefined,
  field: string,
  def: number,
  min: number,
  max: number,
  problems: FieldError[],
): number {
  if (raw === undefined || raw === '') return def;
  const n = /^\d{1,9}$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    problems.push({ field, error: `must be an integer from ${min} to ${max}` });
    return def;
  }
  return n;
}

/**
 * Workflow routes (D33, issue 12): definitions, start, instances, logs, pause, resume, cancel,
 * approve, reject. Protected (token) and in the tenant feature `workflows` (D10); `read:workflow`
 * to read, `execute:workflow` to start and change, the approval step's permission (default
 * `approve:workflow`) to decide. Only this controller sees the HTTP request.
 */
@ApiTags('workflows')
@RequireFeature('workflows')
@Controller('api/v1/workflows')
export class WorkflowController {
  constructor(
    private readonly definitions: WorkflowDefinitionsService,
    private readonly instances: WorkflowInstancesService,
  ) {}

  @Get()
  @RequirePermission('read:workflow')
  @ApiOperation({
    operationId: 'listWorkflows',
    summary: "The tenant's and the system's workflow definitions, every version",
  })
  @ApiOkResponse({ schema: envelopeSchema({ type: 'array', items: WORKFLOW_SCHEMA }) })
  @ApiErrors('UNAUTHORIZED', 'FORBIDDEN', 'FEATURE_DISABLED')
  async list(@CurrentTenant() tenant: TenantContext): Promise<WorkflowSummary[]> {
    return this.definitions.list(tenant.id);
  }

  @Get('instances')
  @RequirePermission('read:workflow')
  @ApiOperation({
    operationId: 'listWorkflowInstances',
    summary: "The tenant's instances, newest first, with filters and pages",
  })
  @ApiQuery({ name: 'status', required: false, enum: [...INSTANCE_STATES] })
  @ApiQuery({ name: 'code', required: false, example: 'customer_onboarding' })
  @ApiQuery({ name: 'page', required: false, schema: { type: 'integer', minimum: 1, default: 1 } })
  @ApiQuery({
    name: 'pageSize',
    required: false,
    schema: { type: 'integer', minimum: 1, maximum: 100, default: 25 },
  })
  @ApiOkResponse({
    description: 'data: instances, newest first; count, total, page, pageSize beside it',
    schema: envelopeSchema({ type: 'array', items: INSTANCE_SCHEMA }, undefined, PAGE_EXTRAS),
  })
  @ApiErrors('VALIDATION_ERROR', 'UNAUTHORIZED', 'FORBIDDEN', 'FEATURE_DISABLED')
  async instancesList(
    @CurrentTenant() tenant: TenantContext,
    @Query('status') status?: string,
    @Query('code') code?: string,
    @Query('page') pageRaw?: string,
    @Query('pageSize') pageSizeRaw?: string,
  ): Promise<Enveloped<InstanceView[]>> {
    const problems: FieldError[] = [];
    let state: InstanceState | undefined;
    if (status !== undefined && status !== '') {
      const upper = String(status).toUpperCase();
      if (isInstanceState(upper)) state = upper;
      else problems.push({ field: 'status', error: `must be one of ${INSTANCE_STATES.join(', ')}` });
    }
    if (code !== undefined && (typeof code !== 'string' || !CODE.test(code)))
      problems.push({ field: 'code', error: 'must be a workflow code' });
    const page = intParam(pageRaw, 'page', 1, 1, 1_000_000, problems);
    const pageSize = intParam(pageSizeRaw, 'pageSize', 25, 1, 100, problems);
    if (problems.length > 0) throw new ValidationError('Validation failed', problems);
    const { rows, total } = await this.instances.list(tenant.id, {
      status: state,
      code: code || undefined,
      limit: pageSize,
      offset: (page - 1) * pageSize,
    });
    return new Enveloped(rows, { count: rows.length, total, page, pageSize });
  }

  @Post(':code/start')
  @HttpCode(202)
  @RequirePermission('execute:workflow')
  @ApiOperation({
    operationId: 'startWorkflow',
    summary: 'Start an instance of the newest active version, or of `version`',
  })
  @ApiParam({ name: 'code', example: 'customer_onboarding' })
  @ApiBody({
    schema: {
      type: 'object',
      additionalProperties: false,
      properties: {
        input: { type: 'object', additionalProperties: true },
        version: { type: 'integer', minimum: 1 },
      },
      example: { input: { customerId: 2, tier: 'silver' } },
    },
  })
  @ApiResponse({
    status: 202,
    description: 'Queued: the instance (status PENDING) and its instanceId',
    schema: envelopeSchema(START_SCHEMA),
  })
  @ApiErrors('VALIDATION_ERROR', 'UNAUTHORIZED', 'FORBIDDEN', 'FEATURE_DISABLED', 'NOT_FOUND')
  async start(
    @CurrentActor() actor: Actor,
    @Param('code') code: string,
    @Body() body: unknown,
  ): Promise<InstanceView & { instanceId: number }> {
    if (!CODE.test(code))
      throw new ValidationError('Validation failed', [{ field: 'code', error: 'must be a workflow code' }]);
    if (body !== undefined && body !== null && (typeof body !== 'object' || Array.isArray(body)))
      throw new ValidationError('Validation failed', [{ field: 'body', error: 'must be a JSON object' }]);
    const b = (body ?? {}) as Record<string, unknown>;
    const extra = Object.keys(b).filter((k) => k !== 'input' && k !== 'version');
    if (extra.length > 0)
      throw new ValidationError(
        'Validation failed',
        extra.map((k) => ({ field: k, error: 'is not a field of this request (input, version)' })),
      );
    return this.instances.start(actor, code, b);
  }

  @Get('instances/:id')
  @RequirePermission('read:workflow')
  @ApiOperation({
    operationId: 'getWorkflowInstance',
    summary: 'An instance: status, current step, context, node states',
  })
  @ApiParam({ name: 'id', schema: { type: 'integer', minimum: 1, example: 1 } })
  @ApiOkResponse({ schema: envelopeSchema(INSTANCE_SCHEMA) })
  @ApiErrors('VALIDATION_ERROR', 'UNAUTHORIZED', 'FORBIDDEN', 'FEATURE_DISABLED', 'NOT_FOUND')
  async get(@CurrentTenant() tenant: TenantContext, @Param('id') id: string): Promise<InstanceView> {
    return this.instances.get(tenant.id, parseInstanceId(id), true);
  }

  @Get('instances/:id/logs')
  @RequirePermission('read:workflow')
  @ApiOperation({
    operationId: 'getWorkflowInstanceLogs',
    summary: "An instance's log (wft_logs), oldest first; `after` pages on",
  })
  @ApiParam({ name: 'id', schema: { type: 'integer', minimum: 1, example: 1 } })
  @ApiQuery({
    name: 'after',
    required: false,
    description: 'The last log id already read',
    schema: { type: 'integer', minimum: 0 },
  })
  @ApiQuery({
    name: 'limit',
    required: false,
    schema: { type: 'integer', minimum: 1, maximum: 500, default: 100 },
  })
  @ApiOkResponse({ schema: envelopeSchema({ type: 'array', items: LOG_SCHEMA }) })
  @ApiErrors('VALIDATION_ERROR', 'UNAUTHORIZED', 'FORBIDDEN', 'FEATURE_DISABLED', 'NOT_FOUND')
  async logs(
    @CurrentTenant() tenant: TenantContext,
    @Param('id') id: string,
    @Query('after') after?: string,
    @Query('limit') limit?: string,
  ): Promise<Array<Omit<LogRow, 'createdAt'> & { createdAt: string | null }>> {
    const problems: FieldError[] = [];
    const afterId = intParam(after, 'after', 0, 0, 999_999_999, problems);
    const size = intParam(limit, 'limit', 100, 1, 500, problems);
    const instanceId = parseInstanceId(id);
    if (problems.length > 0) throw new ValidationError('Validation failed', problems);
    const rows = await this.instances.logs(tenant.id, instanceId, { afterId, limit: size });
    return rows.map((r) => ({
      ...r,
      createdAt: r.createdAt === null ? null : new Date(r.createdAt).toISOString(),
    }));
  }

  @Post('instances/:id/pause')
  @RequirePermission('execute:workflow')
  @ApiInstanceChange(
    'pauseWorkflowInstance',
    'Pause (PENDING or RUNNING → PAUSED); takes effect before the next step',
    'reason',
  )
  async pause(
    @CurrentActor() actor: Actor,
    @Param('id') id: string,
    @Body() body: unknown,
  ): Promise<InstanceView> {
    return this.instances.pause(
      actor,
      parseInstanceId(id),
      optionalText(body, 'reason'),
    );
  }

  @Post('instances/:id/resume')
  @RequirePermission('execute:workflow')
  @ApiInstanceChange(
    'resumeWorkflowInstance',
    'Resume (PAUSED → RUNNING); its queued steps run again',
    'reason',
  )
  async resume(
    @CurrentActor() actor: Actor,
    @Param('id') id: string,
    @Body() body: unknown,
  ): Promise<InstanceView> {
    return this.instances.resume(
      actor,
      parseInstanceId(id),
      optionalText(body, 'reason'),
    );
  }

  @Post('instances/:id/cancel')
  @RequirePermission('execute:workflow')
  @ApiInstanceChange(
    'cancelWorkflowInstance',
    'Cancel (any non-final state → CANCELLED); queued steps are cleared',
    'reason',
  )
  async cancel(
    @CurrentActor() actor: Actor,
    @Param('id') id: string,
    @Body() body: unknown,
  ): Promise<InstanceView> {
    return this.instances.cancel(
      actor,
      parseInstanceId(id),
      optionalText(body, 'reason'),
    );
  }

  @Post('instances/:id/approve')
  @Authenticated()
  @ApiInstanceChange(
    'approveWorkflowInstance',
    'Approve the approval step the instance waits at (approve:workflow; not the starter unless allowSelfApproval)',
    'comment',
  )
  async approve(
    @CurrentActor() actor: Actor,
    @Param('id') id: string,
    @Body() body: unknown,
  ): Promise<InstanceView> {
    return this.instances.decide(
      actor,
      parseInstanceId(id),
      'approved',
      optionalText(body, 'comment'),
    );
  }

  @Post('instances/:id/reject')
  @Authenticated()
  @ApiInstanceChange(
    'rejectWorkflowInstance',
    'Reject the approval step the instance waits at: its onReject step, or the instance fails',
    'comment',
  )
  async reject(
    @CurrentActor() actor: Actor,
    @Param('id') id: string,
    @Body() body: unknown,
  ): Promise<InstanceView> {
    return this.instances.decide(
      actor,
      parseInstanceId(id),
      'rejected',
      optionalText(body, 'comment'),
    );
  }
}
