import { Controller, Get, Inject, Param, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiParam, ApiProduces, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { Authenticated, CurrentTenant, CurrentUser } from '../../common/decorators/context.decorators';
import { RawResponse } from '../../common/decorators/public.decorator';
import { NotFoundError } from '../../common/errors/app-error';
import { ApiErrors } from '../../common/http/api-docs';
import type { AuthUser, TenantContext } from '../../common/request-context';
import { DOWNLOAD_CONTENT } from '../export/export.api-docs';

/** What the store serves: the dataview exports and import error files, and tenant exports (D58, a ZIP). */
const STORED_FILE_CONTENT = {
  ...DOWNLOAD_CONTENT,
  'application/zip': { schema: { type: 'string', format: 'binary' } },
};
import { mayDownload } from './download-access';
import { EXPORT_STORE, type ExportStore } from './export-store';

/** A filename safe inside `filename="…"` (the store's names are already plain). */
function quoted(name: string): string {
  return name.replace(/["\\\r\n]/g, '_');
}

/**
 * `GET /api/v1/downloads/{file_id}` (spec §4.4 rule 8, D32): the file, as an attachment, to the
 * user of the tenant that made it or, by its kind, to a job administrator (download-access.ts,
 * issue 34). Unknown, another tenant's, another user's or expired → 404 (an expired one is purged):
 * never 403, which would confirm that the file exists. The body is the file: no success envelope.
 */
@ApiTags('dataviews')
@Controller('api/v1/downloads')
export class DownloadController {
  constructor(@Inject(EXPORT_STORE) private readonly store: ExportStore) {}

  @Get(':file_id')
  @RawResponse()
  @Authenticated()
  @ApiOperation({
    operationId: 'downloadExport',
    summary:
      'Download an export, an import error file or a tenant export (same tenant, within EXPORT_TTL_S of its creation)',
    description:
      'Served to the user who made the file; an export or an import error file also to holders of admin:jobs ' +
      '(a tenant administrator’s `*:*` grants it) or admin:system; a tenant export only to holders of admin:system. ' +
      'Anyone else, like an unknown or expired id, gets 404.',
  })
  @ApiParam({ name: 'file_id', example: 'q3v0cXlS1i8aQ3kE0nqKJ5x7sV8b2a9yXo0Wm4r6T1c' })
  @ApiProduces(...Object.keys(STORED_FILE_CONTENT))
  @ApiOkResponse({
    description: 'The file, with Content-Disposition: attachment; filename="…"',
    content: STORED_FILE_CONTENT,
    headers: {
      'Content-Disposition': {
        description: 'Always an attachment, with the export’s file name',
        schema: { type: 'string', example: 'attachment; filename="customers_2026-11-23.csv"' },
      },
      'Cache-Control': { schema: { type: 'string', example: 'private, no-store' } },
    },
  })
  @ApiErrors('UNAUTHORIZED', 'NOT_FOUND')
  async download(
    @Res() reply: FastifyReply,
    @CurrentTenant() tenant: TenantContext,
    @CurrentUser() user: AuthUser,
    @Param('file_id') fileId: string,
  ): Promise<void> {
    const file = await this.store.open(tenant.id, fileId);
    if (!file || !mayDownload(file.meta, user)) {
      file?.body.destroy();
      throw new NotFoundError('Export not found or expired');
    }
    if (file.size !== undefined) void reply.header('content-length', String(file.size));
    await reply
      .header('content-type', file.meta.contentType)
      .header('content-disposition', `attachment; filename="${quoted(file.meta.filename)}"`)
      .header('cache-control', 'private, no-store')
      .send(file.body);
  }
}
