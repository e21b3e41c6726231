import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  IsEmail,
  IsNotEmpty,
  IsOptional,
  IsString,
  Length,
  Matches,
  MaxLength,
  ValidateNested,
} from 'class-validator';

/** Request and answer models of the tenant lifecycle routes (D58). */

export const TENANT_CODE = /^[a-z][a-z0-9_]{1,49}$/;

export class TenantAdminInput {
  @ApiProperty({ example: 'admin@umbrella.test', description: "The new tenant's first user" })
  @IsEmail({}, { message: 'must be an e-mail address' })
  @MaxLength(100)
  email_id!: string;

  @ApiProperty({ example: 'a long passphrase', minLength: 8, maxLength: 200, writeOnly: true })
  @IsString()
  @Length(8, 200)
  password!: string;
}

export class CreateTenantDto {
  @ApiProperty({
    example: 'umbrella',
    pattern: TENANT_CODE.source,
    description: 'Lower-case letters, digits and `_`, starting with a letter (2-50); unique',
  })
  @IsString()
  @Matches(TENANT_CODE, { message: 'must be 2-50 lower-case letters, digits or _, starting with a letter' })
  code!: string;

  @ApiProperty({ example: 'Umbrella Corp', maxLength: 200 })
  @IsString()
  @IsNotEmpty()
  @MaxLength(200)
  name!: string;

  @ApiPropertyOptional({
    example: 'acme',
    description:
      'The code of the tenant whose own configuration rows are copied (roles, registry overrides, profiles, pages, workflows, dataviews, navigation, value sets); without it the new tenant starts with the system-wide configuration only',
  })
  @IsOptional()
  @IsString()
  @MaxLength(100)
  template?: string;

  @ApiPropertyOptional({
    type: TenantAdminInput,
    description: "A first user with the new tenant's ADMIN role (copied from the template)",
  })
  @IsOptional()
  @ValidateNested()
  @Type(() => TenantAdminInput)
  admin?: TenantAdminInput;
}

export class CreatedTenantDto {
  @ApiProperty({ example: '4', description: 'The new tenant id (never reused)' }) tenantId!: string;
  @ApiProperty({ example: 'umbrella' }) code!: string;
  @ApiProperty({
    example: { app_roles: 2, app_object_profiles: 3 },
    type: 'object',
    additionalProperties: { type: 'integer' },
    description: 'Configuration rows copied from the template, per table',
  })
  copied!: Record<string, number>;
  @ApiPropertyOptional({ example: 17, description: 'The first user, when `admin` was given' })
  adminUserId?: number;
}

export class RequestUsageDto {
  @ApiProperty({ example: 1520 }) last24h!: number;
  @ApiProperty({ example: 40210 }) last30d!: number;
}

export class StoredUsageDto {
  @ApiProperty({ example: 3, description: 'Export files waiting for their download' }) files!: number;
  @ApiProperty({ example: 524288, description: 'Their bytes' }) bytes!: number;
}

export class JobUsageDto {
  @ApiProperty({ example: 12, description: 'Jobs of this kind the tenant has run or queued' }) jobs!: number;
}

export class DeliveryUsageDto {
  @ApiProperty({
    example: 310,
    description: 'Webhook deliveries kept (delivered ones are purged with their events)',
  })
  total!: number;
  @ApiProperty({
    example: 2,
    description: 'Of which dead (gave up after WEBHOOK_MAX_ATTEMPTS, kept for a retry)',
  })
  dead!: number;
}

export class TenantUsageDto {
  @ApiProperty({ example: '1' }) tenantId!: string;
  @ApiProperty({ example: 'acme' }) code!: string;
  @ApiProperty({ type: RequestUsageDto, description: 'Requests that named this tenant' })
  requests!: RequestUsageDto;
  @ApiProperty({
    example: { customers: 50, orders: 120 },
    type: 'object',
    additionalProperties: { type: 'integer' },
    description:
      "Rows per entity with a tenant column (the tenant's rows only); an entity whose connection is unavailable is left out",
  })
  rows!: Record<string, number>;
  @ApiProperty({ type: JobUsageDto }) exports!: JobUsageDto;
  @ApiProperty({ type: JobUsageDto }) imports!: JobUsageDto;
  @ApiProperty({ type: DeliveryUsageDto }) deliveries!: DeliveryUsageDto;
  @ApiProperty({
    type: StoredUsageDto,
    description: 'Bytes the service stores for this tenant besides its rows',
  })
  stored!: StoredUsageDto;
}

export class EraseTenantDto {
  @ApiProperty({ example: 'umbrella', description: "The tenant's code, as confirmation" })
  @IsString()
  confirm!: string;
}

export class ErasedTenantDto {
  @ApiProperty({ example: '4' }) tenantId!: string;
  @ApiProperty({ example: 'umbrella' }) code!: string;
  @ApiProperty({
    example: { customers: 50, orders: 120 },
    type: 'object',
    additionalProperties: { type: 'integer' },
    description: 'Entity rows deleted, per entity',
  })
  entities!: Record<string, number>;
  @ApiProperty({
    example: { app_audit_logs: 300, app_jobs: 4 },
    type: 'object',
    additionalProperties: { type: 'integer' },
    description: 'Rows deleted, per table of the configuration database',
  })
  deleted!: Record<string, number>;
  @ApiProperty({
    example: { app_roles: 2, app_users: 3 },
    type: 'object',
    additionalProperties: { type: 'integer' },
    description: 'Configuration and user rows archived (status -1, soft-deleted), per table',
  })
  archived!: Record<string, number>;
  @ApiProperty({ example: 2, description: 'Export files removed from the export store' })
  exportFiles!: number;
}

export class TenantExportStartedDto {
  @ApiProperty({
    example: 'hV3kq0Zb9mT2xw7LcR1pAg',
    pattern: '^[A-Za-z0-9_-]{22}$',
    description: 'Poll GET /api/v1/admin/tenants/{id}/export/{jobId} (an opaque id, issue 34)',
  })
  jobId!: string;
  @ApiProperty({ enum: ['PENDING', 'RUNNING', 'COMPLETED', 'FAILED', 'CANCELLED'], example: 'PENDING' })
  status!: string;
}

export class TenantExportErrorDto {
  @ApiProperty({ example: 'FORBIDDEN' }) code!: string;
  @ApiProperty({ example: 'Permission admin:system required' }) message!: string;
}

export class TenantExportJobDto {
  @ApiProperty({ example: 'hV3kq0Zb9mT2xw7LcR1pAg', pattern: '^[A-Za-z0-9_-]{22}$' }) jobId!: string;
  @ApiProperty({ example: '4', description: 'The tenant exported' }) tenantId!: string;
  @ApiProperty({ enum: ['PENDING', 'RUNNING', 'COMPLETED', 'FAILED', 'CANCELLED'], example: 'COMPLETED' })
  status!: string;
  @ApiProperty({ example: 1520, description: 'Rows written so far' }) processed!: number;
  @ApiPropertyOptional({ example: 'tenant-umbrella-2026-11-26.zip' }) filename?: string;
  @ApiPropertyOptional({
    example: '/api/v1/downloads/AbCdEfGhIjKlMnOpQrStUvWxYz0123456789_-abcde',
    description:
      'The ZIP (one JSON-lines file per table), once COMPLETED; downloaded with the same tenant header and the token of a user holding admin:system',
  })
  downloadUrl?: string;
  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: { type: 'integer' },
    example: { 'app_tenants.jsonl': 1, 'entities/customers.jsonl': 50 },
    description: 'Rows per file of the archive, once COMPLETED',
  })
  files?: Record<string, number>;
  @ApiPropertyOptional({ type: TenantExportErrorDto, description: 'Why it failed, once FAILED' })
  error?: TenantExportErrorDto;
}
