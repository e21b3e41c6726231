import { Body, Controller, HttpCode, Param, Post } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import {
  CurrentTenant,
  CurrentUser,
  RequestId,
  RequireFeature,
  RequirePermission,
} from '../../common/decorators/context.decorators';
import { ApiErrors } from '../../common/http/api-docs';
import type { AuthUser, TenantContext } from '../../common/request-context';
import { EXPORT_ANSWER_SCHEMA, EXPORT_BODY_SCHEMA } from './export.api-docs';
import { ExportAnswer, ExportDataview } from './export-dataview';
import { parseExportRequest } from './export-request';

/**
 * `POST /api/v1/dataviews/{code}/export` (spec §4.4 rule 8): the role's `export:dataview`, the
 * tenant features `export` (guard) and `dataviews` (use case), canPerform('export') on the source.
 */
@ApiTags('dataviews')
@Controller('api/v1/dataviews')
export class ExportController {
  constructor(private readonly exporter: ExportDataview) {}

  @Post(':dvc_code/export')
  @HttpCode(200)
  @RequirePermission('export:dataview')
  @RequireFeature('export')
  @ApiOperation({
    operationId: 'exportDataview',
    summary:
      'Export a dataview (CSV, XLSX or PDF; at most min(source.maxRows, 10000) rows); answers a download URL',
  })
  @ApiParam({ name: 'dvc_code', example: 'customers_grid' })
  @ApiBody({ schema: EXPORT_BODY_SCHEMA })
  @ApiOkResponse({ schema: EXPORT_ANSWER_SCHEMA })
  @ApiErrors(
    'VALIDATION_ERROR',
    'UNAUTHORIZED',
    'FORBIDDEN',
    'FEATURE_DISABLED',
    'NOT_FOUND',
    'NOT_IMPLEMENTED',
  )
  async export(
    @Body() body: unknown,
    @CurrentTenant() tenant: TenantContext,
    @CurrentUser() user: AuthUser,
    @RequestId() requestId: string,
    @Param('dvc_code') code: string,
  ): Promise<ExportAnswer> {
    return this.exporter.execute(tenant, user, requestId, code, parseExportRequest(body));
  }
}
