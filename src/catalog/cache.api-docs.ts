import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsIn, IsOptional, IsString, Matches } from 'class-validator';
import { CLEAR_SCOPES, type ClearScope } from './cache-clear';

/** OpenAPI models and the request body of the cache routes (spec §4.5, D38). */

export class CatalogProfilesDto {
  @ApiProperty({ example: 4, description: 'Number of profile codes in `keys`' })
  count!: number;

  @ApiProperty({
    type: [String],
    example: ['customers', 'orders', 'roles', 'users'],
    description:
      'PRF_CODEs whose `{prefix}:profile:{PRF_CODE}` key is in the store, sorted. A system administrator ' +
      "sees every profile; anyone else the system-wide profiles and its own tenant's.",
  })
  keys!: string[];
}

export class CatalogFailureDto {
  @ApiProperty({ example: 'broken_profile' }) code!: string;
  @ApiProperty({
    type: String,
    nullable: true,
    example: null,
    description: 'prf_tenant_id; null = system-wide',
  })
  tenantId!: string | null;
  @ApiProperty({
    enum: ['serialize', 'store'],
    description: 'serialize: a JSON column or the policy is invalid',
  })
  stage!: string;
  @ApiProperty({ example: 'prf_policy is not JSON (Unexpected token)' }) reason!: string;
}

export class ReloadProfilesDto extends CatalogProfilesDto {
  @ApiProperty({
    type: [CatalogFailureDto],
    description: 'Profiles of this load that are not in the catalog, and why (also logged)',
  })
  failed!: CatalogFailureDto[];
}

export class CatalogDto {
  @ApiProperty({ type: CatalogProfilesDto }) profiles!: CatalogProfilesDto;
}

export class ReloadDto {
  @ApiProperty({ type: ReloadProfilesDto }) profiles!: ReloadProfilesDto;
  @ApiProperty({ example: '2026-11-21T12:00:00.000Z', description: 'When this load started' })
  reloadedAt!: string;
}

export class ClearCacheDto {
  @ApiPropertyOptional({
    enum: CLEAR_SCOPES,
    default: 'all',
    description:
      'profiles: the start-up catalog and the profile loader entries; config: registry, page, workflow, ' +
      'dataview, navigation, value-set and entity-config entries; lists: entity list pages; all: every ' +
      'key under the prefix. Never removed: token revocations, sign-up codes and counters, rate-limit ' +
      'and sign-in throttle counters.',
  })
  @IsOptional()
  @IsIn(CLEAR_SCOPES, { message: `must be one of ${CLEAR_SCOPES.join(', ')}` })
  scope?: ClearScope;

  @ApiPropertyOptional({
    // A JSON number is accepted as well as the digits (the same id either way).
    oneOf: [
      { type: 'string', pattern: '^\\d{1,15}$', example: '2' },
      { type: 'integer', minimum: 0, maximum: 999_999_999_999_999, example: 2 },
    ],
    description:
      "A tenant id, as digits or a number: only this tenant's keys. Without it a system administrator (admin:system) clears every tenant's keys " +
      "and anyone else its own tenant's; another tenant's id needs admin:system (403 otherwise).",
  })
  @IsOptional()
  @Transform(({ value }: { value: unknown }) => (typeof value === 'number' ? String(value) : value))
  @IsString({ message: 'must be a tenant id (digits)' })
  @Matches(/^\d{1,15}$/, { message: 'must be a tenant id (digits)' })
  tenantId?: string;
}

export class ClearResultDto {
  @ApiProperty({ example: 12, description: 'Number of keys removed' })
  cleared!: number;
}
