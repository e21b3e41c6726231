import { Body, Controller, Get, HttpCode, Post } from '@nestjs/common';
import { ApiBody, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Authenticated, CurrentUser } from '../common/decorators/context.decorators';
import { ApiEnvelope, ApiErrors } from '../common/http/api-docs';
import type { AuthUser } from '../common/request-context';
import { catalogViewer, clearTarget } from './cache-access';
import { CatalogDto, ClearCacheDto, ClearResultDto, ReloadDto } from './cache.api-docs';
import { CacheClearService } from './cache-clear.service';
import { ProfileCatalogService, reportFor } from './profile-catalog.service';

/**
 * The start-up catalog routes (spec §4.5, D38), without a version segment (spec §9.2). Protected
 * like every tenant-scoped route (x-tenant-id and a token of that tenant, spec §5.4), and only for
 * `admin:cache` or `admin:system` (D9), checked here because one route decorator names one
 * permission. The catalog itself is not a tenant's: the reload rebuilds every tenant's profiles;
 * the answers show a tenant's administrator only the system-wide profiles and its own.
 */
@ApiTags('cache')
@Authenticated()
@Controller('api/cache')
export class CacheCatalogController {
  constructor(private readonly catalog: ProfileCatalogService) {}

  @Get('catalog')
  @ApiOperation({
    operationId: 'getCacheCatalog',
    summary: 'The profile codes in the start-up catalog (`{prefix}:profile:{PRF_CODE}`, no expiry)',
    description: 'Needs admin:cache or admin:system.',
  })
  @ApiEnvelope(CatalogDto)
  @ApiErrors('UNAUTHORIZED', 'FORBIDDEN', 'TENANT_MISMATCH')
  async get(@CurrentUser() user: AuthUser): Promise<CatalogDto> {
    return { profiles: await this.catalog.view(catalogViewer(user)) };
  }

  @Post('reload')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'reloadCacheCatalog',
    summary:
      'Reload the whole profile catalog from the database, on this instance and (via the collection event) on every other',
    description:
      'Also drops the profile loader entries and the registry cache. Needs admin:cache or admin:system. ' +
      'Profiles that cannot be loaded are listed in `profiles.failed` and logged; the reload still succeeds.',
  })
  @ApiEnvelope(ReloadDto)
  @ApiErrors('UNAUTHORIZED', 'FORBIDDEN', 'TENANT_MISMATCH')
  async reload(@CurrentUser() user: AuthUser): Promise<ReloadDto> {
    const viewer = catalogViewer(user);
    const { count, keys, failed, reloadedAt } = reportFor(
      await this.catalog.reloadEverywhere(user.tenantId),
      viewer,
    );
    return { profiles: { count, keys, failed }, reloadedAt };
  }
}

/** `POST /api/v1/admin/cache/clear` (D38). */
@ApiTags('cache')
@Authenticated()
@Controller('api/v1/admin/cache')
export class CacheAdminController {
  constructor(private readonly clearing: CacheClearService) {}

  @Post('clear')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'clearCache',
    summary: 'Remove the cached keys of a scope (default all), of one tenant or of every tenant',
    description:
      "Needs admin:cache (own tenant's keys) or admin:system (any tenant's, or every tenant's without tenantId). " +
      'Security state is never removed: token revocations, sign-up codes and counters, rate-limit and ' +
      'sign-in throttle counters. The start-up catalog stays empty after a profiles or all clear until ' +
      'POST /api/cache/reload.',
  })
  @ApiBody({ type: ClearCacheDto, required: false })
  @ApiEnvelope(ClearResultDto)
  @ApiErrors('VALIDATION_ERROR', 'UNAUTHORIZED', 'FORBIDDEN', 'TENANT_MISMATCH')
  async clear(@CurrentUser() user: AuthUser, @Body() body: ClearCacheDto): Promise<ClearResultDto> {
    const tenantId = clearTarget(user, body?.tenantId);
    return { cleared: await this.clearing.clear(body?.scope ?? 'all', tenantId) };
  }
}
