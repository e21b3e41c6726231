import { Body, Controller, Get, HttpCode, Param, Post, Res } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import {
  CurrentActor,
  CurrentTenant,
  CurrentUser,
  RequireFeature,
  RequirePermission,
} from '../../common/decorators/context.decorators';
import { AuthorizationError } from '../../common/errors/app-error';
import { ApiErrors } from '../../common/http/api-docs';
import type { Actor, AuthUser, TenantContext } from '../../common/request-context';
import type { AppConfig } from '../../config/config.schema';
import { InjectConfig } from '../../config/inject-config.decorator';
import { JobsService, type AdmissionLimits } from '../../jobs/jobs.service';
import { EXPORT_ANSWER_SCHEMA, EXPORT_BODY_SCHEMA } from './export.api-docs';
import { ExportAnswer, ExportDataview } from './export-dataview';
import { EXPORT_FEATURES, EXPORT_JOB_KIND, type ExportJobInput } from './export-job';
import { exportJobView, ExportJobView, exportOutcome } from './export-job-view';
import { EXPORT_JOB_ANSWER_SCHEMA, JOB_ID_PARAM } from './export-jobs.api-docs';
import { parseExportRequest } from './export-request';

/** Retry-After of a 429 beyond an export limit: about what a 10,000-row PDF takes, a few times over. */
const LIMIT_RETRY_AFTER_MS = 5_000;

/**
 * `POST /api/v1/dataviews/{code}/export` (spec §4.4 rule 8): the role's `export:dataview`, the
 * tenant features `export` (guard) and `dataviews` (use case), canPerform('export') on the source.
 * The request is checked at once (400/403/404 as before), then queued as a job (issue 21 #1) that
 * a render thread runs; the route waits up to EXPORT_WAIT_MS and answers the file as before (200),
 * or 202 with the job when it takes longer: `GET /api/v1/exports/{jobId}` tells how it goes.
 * Unfinished exports are bounded per user, per tenant and per instance (429 with Retry-After).
 */
@ApiTags('dataviews')
@Controller('api/v1')
export class ExportController {
  private readonly limits: AdmissionLimits;

  constructor(
    @InjectConfig() private readonly config: AppConfig,
    private readonly exporter: ExportDataview,
    private readonly jobs: JobsService,
  ) {
    const e = config.exports;
    this.limits = {
      perUser: e.maxPerUser,
      perTenant: e.maxPerTenant,
      perInstance: e.maxPerInstance,
      retryAfterMs: LIMIT_RETRY_AFTER_MS,
      noun: 'exports',
    };
  }

  @Post('dataviews/:dvc_code/export')
  @HttpCode(200)
  @RequirePermission('export:dataview')
  @RequireFeature(...EXPORT_FEATURES)
  @ApiOperation({
    operationId: 'exportDataview',
    summary:
      'Export a dataview (CSV, XLSX or PDF; at most min(source.maxRows, 10000) rows); answers a download URL',
    description:
      'Rendered off the event loop as a job. When the file is ready within EXPORT_WAIT_MS (default 10 s) ' +
      'the answer is 200 with its download URL; otherwise 202 with the job, to poll at `statusUrl`. ' +
      'Beyond EXPORT_MAX_PER_USER, EXPORT_MAX_PER_TENANT or EXPORT_MAX_PER_INSTANCE unfinished exports: ' +
      '429 RATE_LIMITED with Retry-After.',
  })
  @ApiParam({ name: 'dvc_code', example: 'customers_grid' })
  @ApiBody({ schema: EXPORT_BODY_SCHEMA })
  @ApiOkResponse({ schema: EXPORT_ANSWER_SCHEMA })
  @ApiResponse({
    status: 202,
    description: 'Still rendering after EXPORT_WAIT_MS: the job (status PENDING or RUNNING)',
    schema: EXPORT_JOB_ANSWER_SCHEMA,
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
  async export(
    @Body() body: unknown,
    @CurrentActor() actor: Actor,
    @Param('dvc_code') code: string,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<ExportAnswer | ExportJobView> {
    // Checked now, so a bad request is answered at once and never queued.
    await this.exporter.prepare(actor, code, parseExportRequest(body));
    const input: ExportJobInput = { dataviewCode: code, body };
    const { tenantId, user, requestId } = actor;
    const queued = await this.jobs.enqueue(
      { tenantId, kind: EXPORT_JOB_KIND, createdBy: user.userId, requestId, input },
      this.limits,
    );
    const job = await this.jobs.waitFor(queued, this.config.exports.waitMs);
    if (job.status === 'PENDING' || job.status === 'RUNNING') {
      void reply.status(202);
      return exportJobView(job);
    }
    return exportOutcome(job);
  }

  @Get('exports/:jobId')
  @RequirePermission('export:dataview')
  @RequireFeature(...EXPORT_FEATURES)
  @ApiOperation({
    operationId: 'getExportJob',
    summary: 'An export that outlived its request: status, progress, then the download URL or the error',
  })
  @ApiParam(JOB_ID_PARAM)
  @ApiOkResponse({ schema: EXPORT_JOB_ANSWER_SCHEMA })
  @ApiErrors('UNAUTHORIZED', 'FORBIDDEN', 'FEATURE_DISABLED', 'NOT_FOUND')
  async status(
    @CurrentTenant() tenant: TenantContext,
    @CurrentUser() user: AuthUser,
    @Param('jobId') jobId: string,
  ): Promise<ExportJobView> {
    // Its creator's, or a job administrator's (issue 34); anyone else's 404.
    return exportJobView(await this.jobs.getVisible(tenant.id, jobId, EXPORT_JOB_KIND, user));
  }

  @Post('exports/:jobId/cancel')
  @HttpCode(200)
  @RequirePermission('export:dataview')
  @RequireFeature(...EXPORT_FEATURES)
  @ApiOperation({
    operationId: 'cancelExportJob',
    summary: 'Cancel an unfinished export (its creator only); a finished one is answered as it is',
  })
  @ApiParam(JOB_ID_PARAM)
  @ApiOkResponse({ schema: EXPORT_JOB_ANSWER_SCHEMA })
  @ApiErrors('UNAUTHORIZED', 'FORBIDDEN', 'FEATURE_DISABLED', 'NOT_FOUND')
  async cancel(
    @CurrentTenant() tenant: TenantContext,
    @CurrentUser() user: AuthUser,
    @Param('jobId') jobId: string,
  ): Promise<ExportJobView> {
    const job = await this.jobs.getVisible(tenant.id, jobId, EXPORT_JOB_KIND, user);
    if (job.createdBy !== user.userId)
      throw new AuthorizationError('Only the user who started an export may cancel it');
    return exportJobView(await this.jobs.cancel(tenant.id, job.id, EXPORT_JOB_KIND));
  }
}
