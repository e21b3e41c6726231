import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { routePolicy } from '../common/http/route-policy';
import { AppError, AuthorizationError, NotFoundError, ValidationError } from '../common/errors/app-error';
import { setLogContext } from '../common/logging';
import { TenantHeaderError, TenantHeaderFailure } from './tenant-header.crypto';
import { TenantHeaderService } from './tenant-header.service';
import { TenantLookupService } from './tenant-lookup.service';
import { TenantUsageService } from './tenant-usage.service';
import { isTenantActive, type TenantRow } from './tenants.repository';

const HEADER_MESSAGES: Record<TenantHeaderFailure, string> = {
  required: 'x-tenant-id header is required',
  invalid_format_not_encrypted: 'x-tenant-id header is not an encrypted tenant header',
  decryption_failed: 'Failed to decrypt tenant ID',
};

export function tenantHeaderError(reason: TenantHeaderFailure): AppError {
  return new ValidationError(HEADER_MESSAGES[reason], { 'x-tenant-id': reason });
}

/**
 * First step of every tenant-scoped route (spec §5.1-5.2): x-tenant-id → decrypted tenant id →
 * an existing, active tenant on the request. Runs for every route not marked @NoTenant().
 */
@Injectable()
export class TenantGuard implements CanActivate {
  constructor(
    private readonly headers: TenantHeaderService,
    private readonly tenants: TenantLookupService,
    private readonly usage: TenantUsageService,
  ) {}

  canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    const policy = routePolicy(context);
    if (policy.noTenant) return true;
    const request = context.switchToHttp().getRequest<FastifyRequest>();

    let tenantId: string;
    try {
      // A redeemed change-stream ticket (D55, ChangeTicketGuard) names its tenant itself.
      tenantId = request.changeTicket?.tenantId ?? this.headers.resolve(request.headers['x-tenant-id']);
    } catch (err) {
      if (err instanceof TenantHeaderError) throw tenantHeaderError(err.reason);
      throw err;
    }

    // A tenant held in memory is checked without a promise; else it is read (cache, database).
    const held = this.tenants.peek(tenantId);
    if (held !== undefined) return this.admit(request, policy.features, held ?? undefined);
    return this.tenants.findById(tenantId).then((tenant) => this.admit(request, policy.features, tenant));
  }

  /** The tenant must exist, be active and have the route's features; then it is the request's. */
  private admit(request: FastifyRequest, features: readonly string[], tenant: TenantRow | undefined): true {
    if (!tenant) throw new NotFoundError('Tenant not found', { 'x-tenant-id': 'unknown_tenant' });
    if (!isTenantActive(tenant)) throw new AuthorizationError('Tenant is not active');
    const feature = features.find((f) => tenant.features[f] === false);
    if (feature) {
      throw new AuthorizationError(`Feature ${feature} is disabled for this tenant`, 'FEATURE_DISABLED');
    }
    this.usage.count(tenant.id);
    request.tenant = { id: tenant.id, code: tenant.code, name: tenant.name, features: tenant.features };
    setLogContext(request, { tenantId: tenant.id });
    return true;
  }
}
