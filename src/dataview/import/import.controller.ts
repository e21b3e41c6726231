import { Controller, Get, HttpCode, Param, Post, Query, Req } from '@nestjs/common';
import {
  ApiBody,
  ApiConsumes,
  ApiOperation,
  ApiParam,
  ApiQuery,
  ApiResponse,
  ApiTags,
  ApiOkResponse,
} from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  Authenticated,
  CurrentActor,
  CurrentTenant,
  CurrentUser,
  RequireFeature,
} from '../../common/decorators/context.decorators';
import { AppError, AuthorizationError } from '../../common/errors/app-error';
import { ApiErrors } from '../../common/http/api-docs';
import type { Actor, AuthUser, TenantContext } from '../../common/request-context';
import type { RecordContext } from '../../records/record-context';
import { JobsService } from '../../jobs/jobs.service';
import { assertCanPerform } from '../../profile/access/can-perform';
import { RecordContextFactory } from '../../records/record-context.factory';
import { Inject } from '@nestjs/common';
import { EXPORT_STORE, type ExportStore } from '../download/export-store';
import { FileCheck, type ImportFormat } from './import-file';
import { IMPORT_FEATURES, IMPORT_JOB_KIND, type ImportJobInput } from './import-input';
import {
  badMultipart,
  importOptions,
  importOptionsOf,
  type ImportOptions,
  multipartError,
  nextFile,
  unsupportedImportType,
  XLSX_TYPE,
} from './import-upload';
import { upsertKey } from './import-rows';
import { importJobView, type ImportJobView } from './import-job-view';
import { IMPORT_ID_PARAM, IMPORT_JOB_ANSWER_SCHEMA } from './import.api-docs';

/**
 * Imports (D53): `POST /api/v1/{entity_code}/imports` takes the file as the body (`text/csv` or
 * XLSX), checks it and the caller's right to create, stores the file and queues a job that any
 * instance's worker runs; `GET /api/v1/imports/{importId}` tells how it goes, `…/cancel` stops it.
 * A job is its tenant's only (another tenant's is a 404).
 */
@ApiTags('entities')
@Authenticated()
@Controller('api/v1')
export class ImportController {
  constructor(
    private readonly jobs: JobsService,
    private readonly contexts: RecordContextFactory,
    @Inject(EXPORT_STORE) private readonly store: ExportStore,
  ) {}

  @Post(':entity_code/imports')
  @HttpCode(202)
  @RequireFeature(...IMPORT_FEATURES)
  @ApiOperation({
    operationId: 'importRecords',
    summary: 'Import a CSV or XLSX file into an entity as a job (D53); answers 202 with the import',
    description:
      'The file is a multipart/form-data part named `file` (a `.xlsx` name or the XLSX type is a workbook, anything else CSV), ' +
      'or the whole body (Content-Type text/csv in UTF-8, or the XLSX type); any other type (JSON too) is 415. ' +
      'Options are query parameters, or form fields of the multipart body (before or after the file; the same option both ways must agree, else 400). ' +
      'Headers match writable field codes case-blind (spaces, dashes, underscores ignored), or `mapping`. ' +
      'A file larger than IMPORT_MAX_BYTES is 413; a file with more than IMPORT_MAX_ROWS rows fails the job with 413, ' +
      'one beyond a bound of its content (IMPORT_MAX_INFLATED_BYTES, IMPORT_MAX_ZIP_RATIO, IMPORT_MAX_CELL_CHARS, IMPORT_MAX_ROW_CHARS, IMPORT_MAX_SHARED_STRINGS, IMPORT_MAX_SHARED_STRINGS_BYTES) with 400 naming file.',
  })
  @ApiParam({ name: 'entity_code', example: 'customers' })
  @ApiQuery({ name: 'mode', required: false, schema: { type: 'string', enum: ['create', 'upsert'] } })
  @ApiQuery({ name: 'dryRun', required: false, schema: { type: 'boolean' } })
  @ApiQuery({
    name: 'key',
    required: false,
    description: 'upsert: id or a unique field',
    schema: { type: 'string' },
  })
  @ApiQuery({ name: 'onError', required: false, schema: { type: 'string', enum: ['abort', 'skip'] } })
  @ApiQuery({
    name: 'mapping',
    required: false,
    description: 'JSON object: column → field code (null ignores)',
    schema: { type: 'string' },
  })
  @ApiConsumes('multipart/form-data', 'text/csv', XLSX_TYPE)
  @ApiBody({ schema: { type: 'string', format: 'binary' } })
  @ApiResponse({ status: 202, description: 'The import, queued', schema: IMPORT_JOB_ANSWER_SCHEMA })
  @ApiErrors(
    'VALIDATION_ERROR',
    'UNAUTHORIZED',
    'FORBIDDEN',
    'FEATURE_DISABLED',
    'NOT_FOUND',
    'NOT_IMPLEMENTED',
    'PAYLOAD_TOO_LARGE',
    'UNSUPPORTED_MEDIA_TYPE',
  )
  async create(
    @Req() request: FastifyRequest,
    @Query() query: Record<string, string | undefined>,
    @CurrentActor() actor: Actor,
    @Param('entity_code') entityCode: string,
  ): Promise<ImportJobView> {
    const multipart = request.isMultipart();
    // A multipart body may carry options as form fields, read with the file (see storeFile).
    if (!multipart) importOptions(query);
    const ctx = await this.contexts.fromIds({
      tenantId: actor.tenantId,
      userId: actor.user.userId,
      requestId: actor.requestId,
      entityCode,
    });
    if (!ctx.entity.supported)
      throw new AppError(
        'NOT_IMPLEMENTED',
        `Entity ${entityCode} is served by an unsupported database type (D26)`,
      );
    assertCanPerform('create', ctx);
    const { fileId, format, options } = await this.storeFile(request, actor, ctx, query);
    const input: ImportJobInput = { entityCode: ctx.entity.code, fileId, format, ...options };
    const job = await this.jobs.enqueue({
      tenantId: actor.tenantId,
      kind: IMPORT_JOB_KIND,
      createdBy: actor.user.userId,
      requestId: actor.requestId,
      input,
    });
    return importJobView(job);
  }

  /**
   * Stores the file as it streams in, checked on the way (FileCheck): a multipart `file` part (the
   * XLSX type or a `.xlsx` name is a workbook, anything else CSV), or the raw body (already read,
   * up to IMPORT_MAX_BYTES). A file beyond IMPORT_MAX_BYTES is 413 and nothing is kept.
   *
   * The options are settled inside the store's write (issue 34 #6): a multipart body is read to its
   * end — the form fields after the file too — before they are, so a field's place never matters,
   * and options that fail (400, 403) discard the stored file.
   */
  private async storeFile(
    request: FastifyRequest,
    actor: Actor,
    ctx: RecordContext,
    query: Record<string, string | undefined>,
  ): Promise<{ fileId: string; format: ImportFormat; options: ImportOptions }> {
    let format: ImportFormat;
    let source: Readable;
    let truncated = () => false;
    const form: Record<string, string> = {};
    let rest: () => Promise<void> = async () => undefined;
    if (request.isMultipart()) {
      const parts = request.parts()[Symbol.asyncIterator]();
      const part = await nextFile(parts, form);
      if (!part) throw badMultipart('send the file as the multipart part named file');
      format = part.mimetype.startsWith(XLSX_TYPE) || /\.xlsx$/i.test(part.filename) ? 'xlsx' : 'csv';
      source = part.file;
      // Busboy stops a file at IMPORT_MAX_BYTES (truncated): the stored copy is then dropped, 413.
      truncated = () => part.file.truncated;
      rest = async () => {
        if (await nextFile(parts, form)) throw multipartError({ code: 'FST_FILES_LIMIT' });
      };
    } else {
      const body = request.body;
      if (!Buffer.isBuffer(body)) {
        if (request.headers['content-type'] !== undefined) throw unsupportedImportType();
        throw badMultipart('send the file as the body (text/csv or XLSX) or as a multipart file part');
      }
      format = String(request.headers['content-type'] ?? '').startsWith(XLSX_TYPE) ? 'xlsx' : 'csv';
      source = Readable.from([body]);
    }
    let options: ImportOptions = importOptions({});
    try {
      const fileId = await this.store.save(
        {
          tenantId: actor.tenantId,
          filename: `${ctx.entity.code}-import.${format}`,
          contentType: format === 'csv' ? 'text/csv' : XLSX_TYPE,
          createdBy: actor.user.userId,
        },
        async (out) => {
          await pipeline(source, new FileCheck(format, truncated), out);
          await rest();
          options = importOptionsOf(query, form);
          if (options.mode === 'upsert') {
            assertCanPerform('update', ctx);
            upsertKey(ctx, options.key);
          }
        },
      );
      return { fileId, format, options };
    } catch (err) {
      throw /^FST_/.test(String((err as { code?: unknown } | null)?.code)) ? multipartError(err) : err;
    } finally {
      source.destroy();
    }
  }

  @Get('imports/:importId')
  @RequireFeature(...IMPORT_FEATURES)
  @ApiOperation({
    operationId: 'getImport',
    summary: 'An import: status, counts, the first errors, the error file',
  })
  @ApiParam(IMPORT_ID_PARAM)
  @ApiOkResponse({ schema: IMPORT_JOB_ANSWER_SCHEMA })
  @ApiErrors('UNAUTHORIZED', 'FORBIDDEN', 'FEATURE_DISABLED', 'NOT_FOUND')
  async status(
    @CurrentTenant() tenant: TenantContext,
    @CurrentUser() user: AuthUser,
    @Param('importId') importId: string,
  ): Promise<ImportJobView> {
    // Its creator's, or a job administrator's (issue 34); anyone else's 404.
    return importJobView(await this.jobs.getVisible(tenant.id, importId, IMPORT_JOB_KIND, user));
  }

  @Post('imports/:importId/cancel')
  @HttpCode(200)
  @RequireFeature(...IMPORT_FEATURES)
  @ApiOperation({
    operationId: 'cancelImport',
    summary: 'Cancel an unfinished import (its creator only): the running batch is rolled back',
  })
  @ApiParam(IMPORT_ID_PARAM)
  @ApiOkResponse({ schema: IMPORT_JOB_ANSWER_SCHEMA })
  @ApiErrors('UNAUTHORIZED', 'FORBIDDEN', 'FEATURE_DISABLED', 'NOT_FOUND')
  async cancel(
    @CurrentTenant() tenant: TenantContext,
    @CurrentUser() user: AuthUser,
    @Param('importId') importId: string,
  ): Promise<ImportJobView> {
    const job = await this.jobs.getVisible(tenant.id, importId, IMPORT_JOB_KIND, user);
    if (job.createdBy !== user.userId)
      throw new AuthorizationError('Only the user who started an import may cancel it');
    return importJobView(await this.jobs.cancel(tenant.id, job.id, IMPORT_JOB_KIND));
  }
}
