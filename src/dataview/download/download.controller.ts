import { Controller, Get, Inject, Param, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiParam, ApiProduces, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { Authenticated, CurrentTenant } from '../../common/decorators/context.decorators';
import { RawResponse } from '../../common/decorators/public.decorator';
import { NotFoundError } from '../../common/errors/app-error';
import { ApiErrors } from '../../common/http/api-docs';
import type { TenantContext } from '../../common/request-context';
import { DOWNLOAD_CONTENT } from '../export/export.api-docs';

/** What the store serves: the dataview exports and import error files, and tenant exports (D58, a ZIP). */
const STORED_FILE_CONTENT = {
  ...DOWNLOAD_CONTENT,
  'application/zip': { schema: { type: 'string', format: 'binary' } },
};
import { EXPORT_STORE, type ExportStore } from './export-store';

/** A filename safe inside `filename="…"` (the store's names are already plain). */
function quoted(name: string): string {
  return name.replace(/["\\\r\n]/g, '_');
}

/**
 * `GET /api/v1/downloads/{file_id}` (spec §4.4 rule 8, D32): the export, as an attachment, to an
 * authenticated user of the tenant that made it; no other permission. Unknown, another tenant's or
 * expired → 404 (an expired one is purged). The body is the file: no success envelope.
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
    @Param('file_id') fileId: string,
  ): Promise<void> {
    const file = await this.store.open(tenant.id, fileId);
    if (!file) throw new NotFoundError('Export not found or expired');
    if (file.size !== undefined) void reply.header('content-length', String(file.size));
    await reply
      .header('content-type', file.meta.contentType)
      .header('content-disposition', `attachment; filename="${quoted(file.meta.filename)}"`)
      .header('cache-control', 'private, no-store')
      .send(file.body);
  }
}
