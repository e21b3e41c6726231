import { Body, Controller, Delete, Get, HttpCode, Param, Post } from '@nestjs/common';
import { ApiBody, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { AuthorizationError, NotFoundError, ValidationError } from '../../common/errors/app-error';
import { Authenticated, CurrentActor } from '../../common/decorators/context.decorators';
import { ApiEnvelope, ApiErrors } from '../../common/http/api-docs';
import type { Actor } from '../../common/request-context';
import { isSystemAdmin } from '../../profile/access/permissions';
import { parseRecordId } from '../../records/values';
import {
  CreatedTenantDto,
  CreateTenantDto,
  ErasedTenantDto,
  EraseTenantDto,
  TenantExportJobDto,
  TenantExportStartedDto,
  TenantUsageDto,
} from './tenant-lifecycle.api-docs';
import { TenantEraser } from './tenant-eraser';
import { TenantExports } from './tenant-exports';
import { TenantLifecycleService } from './tenant-lifecycle.service';
import { TenantUsageReport } from './tenant-usage-report';

/** 403 unless the user's role names `admin:system` itself (`*:*` makes a tenant administrator). */
function assertSystemAdmin(actor: Actor): void {
  if (!isSystemAdmin(actor.user.permissions))
    throw new AuthorizationError('Permission admin:system required');
}

/** A tenant id from the path: 400 unless a positive integer, 404 beyond the INT range. */
function tenantIdOf(value: string): string {
  if (!/^\d+$/.test(value) || /^0+$/.test(value))
    throw new ValidationError('Validation failed', [{ field: 'id', error: 'must be a positive integer' }]);
  const id = parseRecordId(value.replace(/^0+/, ''));
  if (id === undefined) throw new NotFoundError('Tenant not found', { id: 'unknown_tenant' });
  return String(id);
}

const ID_PARAM = { name: 'id', schema: { type: 'integer', minimum: 1, example: 4 } } as const;

/** The tenant lifecycle routes (D58): `admin:system` only, from any tenant the caller belongs to. */
@ApiTags('admin')
@Authenticated()
@Controller('api/v1/admin/tenants')
export class TenantLifecycleController {
  constructor(
    private readonly lifecycle: TenantLifecycleService,
    private readonly usageReport: TenantUsageReport,
    private readonly exports: TenantExports,
    private readonly eraser: TenantEraser,
  ) {}

  @Post()
  @HttpCode(201)
  @ApiOperation({
    operationId: 'createTenant',
    summary:
      "Create a tenant, optionally from a template tenant's configuration and with a first administrator",
    description:
      "Needs admin:system. Copies the template's own live configuration rows (roles, registry overrides, profiles — whose codes get `_<code>` appended, being unique across tenants —, pages, workflows, dataviews, navigation, value sets); never its connections, users or data.",
  })
  @ApiBody({ type: CreateTenantDto })
  @ApiEnvelope(CreatedTenantDto, { status: 201 })
  @ApiErrors('VALIDATION_ERROR', 'UNAUTHORIZED', 'FORBIDDEN', 'TENANT_MISMATCH', 'CONFLICT')
  async create(@CurrentActor() actor: Actor, @Body() body: CreateTenantDto): Promise<CreatedTenantDto> {
    assertSystemAdmin(actor);
    return this.lifecycle.create(actor, body);
  }

  @Get(':id/usage')
  @ApiOperation({
    operationId: 'getTenantUsage',
    summary:
      'What a tenant uses: requests (24 h, 30 d), rows per entity, export and import jobs, stored bytes',
    description: 'Needs admin:system. An erased tenant answers too (its counts are then zero).',
  })
  @ApiParam(ID_PARAM)
  @ApiEnvelope(TenantUsageDto)
  @ApiErrors('VALIDATION_ERROR', 'UNAUTHORIZED', 'FORBIDDEN', 'TENANT_MISMATCH', 'NOT_FOUND')
  async usage(@CurrentActor() actor: Actor, @Param('id') id: string): Promise<TenantUsageDto> {
    assertSystemAdmin(actor);
    return this.usageReport.usage(tenantIdOf(id));
  }

  @Post(':id/export')
  @HttpCode(202)
  @ApiOperation({
    operationId: 'exportTenant',
    summary: 'Export every row of a tenant as a ZIP, built by a job (one JSON-lines file per table)',
    description:
      "Needs admin:system. The job belongs to the administrator's tenant: poll GET …/export/{jobId}; once COMPLETED, " +
      '`downloadUrl` serves the ZIP through the download route with the same tenant header and token. Secret columns ' +
      '(password hashes, connection strings, webhook secrets) and hidden entity fields are left out.',
  })
  @ApiParam(ID_PARAM)
  @ApiEnvelope(TenantExportStartedDto, { status: 202 })
  @ApiErrors('VALIDATION_ERROR', 'UNAUTHORIZED', 'FORBIDDEN', 'TENANT_MISMATCH', 'NOT_FOUND')
  async startExport(@CurrentActor() actor: Actor, @Param('id') id: string): Promise<TenantExportStartedDto> {
    assertSystemAdmin(actor);
    return this.exports.startExport(actor, tenantIdOf(id));
  }

  @Get(':id/export/:jobId')
  @ApiOperation({
    operationId: 'getTenantExport',
    summary: 'A tenant export job: status, rows written, and the download once done',
    description:
      "Needs admin:system. Only jobs of the caller's own tenant are found, by the id the export was answered with; any other id is 404.",
  })
  @ApiParam(ID_PARAM)
  @ApiParam({
    name: 'jobId',
    schema: { type: 'string', pattern: '^[A-Za-z0-9_-]{22}$', example: 'hV3kq0Zb9mT2xw7LcR1pAg' },
  })
  @ApiEnvelope(TenantExportJobDto)
  @ApiErrors('VALIDATION_ERROR', 'UNAUTHORIZED', 'FORBIDDEN', 'TENANT_MISMATCH', 'NOT_FOUND')
  async exportJob(
    @CurrentActor() actor: Actor,
    @Param('id') id: string,
    @Param('jobId') jobId: string,
  ): Promise<TenantExportJobDto> {
    assertSystemAdmin(actor);
    return this.exports.exportJob(actor, tenantIdOf(id), jobId);
  }

  @Delete(':id')
  @ApiOperation({
    operationId: 'eraseTenant',
    summary: 'Erase a tenant: its data deleted, its configuration and users archived, its id never reused',
    description:
      'Needs admin:system; the body names the tenant code as confirmation. Entity rows (every connection), audit, ' +
      'workflow runtime, jobs, exports, revocations and usage are deleted; configuration rows and users are archived ' +
      '(status -1, soft-deleted); the tenant row stays, deleted, so its id is never reused and its tokens and headers ' +
      'are refused. Running it again finishes an erase that stopped half-way. A tenant cannot erase itself.',
  })
  @ApiParam(ID_PARAM)
  @ApiBody({ type: EraseTenantDto })
  @ApiEnvelope(ErasedTenantDto)
  @ApiErrors('VALIDATION_ERROR', 'UNAUTHORIZED', 'FORBIDDEN', 'TENANT_MISMATCH', 'NOT_FOUND', 'CONFLICT')
  async erase(
    @CurrentActor() actor: Actor,
    @Param('id') id: string,
    @Body() body: EraseTenantDto,
  ): Promise<ErasedTenantDto> {
    assertSystemAdmin(actor);
    return this.eraser.erase(actor, tenantIdOf(id), body.confirm);
  }
}
