import { applyDecorators, createParamDecorator, ExecutionContext, SetMetadata } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { AuthorizationError } from '../errors/app-error';
import type { ErrorCode } from '../errors/error-codes';
import { ApiProtected, ApiTenantOnly } from '../http/api-docs';
import type { Actor, AuthUser, TenantContext } from '../request-context';
import type { RequestScope } from '../request-scope';

/** What the guards put on the request: the tenant (TenantGuard) and the user (JwtAuthGuard). */
declare module 'fastify' {
  interface FastifyRequest {
    tenant?: TenantContext;
    user?: AuthUser;
    /** The request's async-local log scope (health/http-hooks.service.ts), where guards add to it. */
    logScope?: RequestScope;
    /** A redeemed `?ticket=` (D55) on a route that accepts one: the tenant and token it stands for. */
    changeTicket?: TicketClaims;
    /** The bearer token's issue time (epoch ms), set by JwtAuthGuard beside `user`. */
    tokenIssuedAtMs?: number;
    /**
     * The code of the error envelope the request was answered with (D18), for its access line: set
     * by the exception filter and the hooks that answer errors themselves (readiness, overload).
     */
    errorCode?: ErrorCode;
  }
}

/** What a change-stream ticket carries (D55): the claims of the token it was issued against. */
export interface TicketClaims extends AuthUser {
  /** Epoch ms the originating token was issued (a user-wide revocation refuses earlier ones). */
  issuedAtMs: number;
}

export const NO_TENANT = 'mtb:noTenant';
export const REQUIRED_PERMISSION = 'mtb:requiredPermission';
export const REQUIRED_FEATURE = 'mtb:requiredFeature';
export const ACCEPTS_TICKET = 'mtb:acceptsTicket';

/**
 * The route accepts `?ticket=` (D55, POST /api/v1/changes/tickets) instead of both the tenant
 * header and the bearer token: for an EventSource, which cannot send headers.
 */
export const AcceptsTicket = (): MethodDecorator & ClassDecorator => SetMetadata(ACCEPTS_TICKET, true);

/** Routes outside any tenant (probes, metrics): TenantGuard does not run. */
export const NoTenant = (): MethodDecorator & ClassDecorator => SetMetadata(NO_TENANT, true);

/**
 * The permission (D9 `<action>:<resource>`) a protected route requires, with the Swagger security
 * of a protected route. A route without @Public() is protected even without this decorator.
 */
export const RequirePermission = (permission: string): MethodDecorator & ClassDecorator =>
  applyDecorators(SetMetadata(REQUIRED_PERMISSION, permission), ApiProtected());

/** Swagger security of a protected route that needs no particular permission (logout, profile). */
export const Authenticated = (): MethodDecorator & ClassDecorator => ApiProtected();

/** Swagger security of a public route that still needs the tenant header (sign-in, sign-up…). */
export const TenantOnly = (): MethodDecorator & ClassDecorator => ApiTenantOnly();

/**
 * The route belongs to tenant features (D10), each needed; a disabled one answers 403
 * FEATURE_DISABLED. A handler's list replaces its controller's.
 */
export const RequireFeature = (...features: string[]): MethodDecorator & ClassDecorator =>
  SetMetadata(REQUIRED_FEATURE, features);

export const CurrentTenant = createParamDecorator((_: unknown, ctx: ExecutionContext): TenantContext => {
  const tenant = ctx.switchToHttp().getRequest<FastifyRequest>().tenant;
  if (!tenant) throw new AuthorizationError('No tenant context');
  return tenant;
});

export const CurrentUser = createParamDecorator((_: unknown, ctx: ExecutionContext): AuthUser => {
  const user = ctx.switchToHttp().getRequest<FastifyRequest>().user;
  if (!user) throw new AuthorizationError('No user context');
  return user;
});

/** The request's actor (D47): its tenant, user and request id, as the guards resolved them. */
export const CurrentActor = createParamDecorator((_: unknown, ctx: ExecutionContext): Actor => {
  const request = ctx.switchToHttp().getRequest<FastifyRequest>();
  if (!request.tenant || !request.user) throw new AuthorizationError('No user context');
  return { tenantId: request.tenant.id, user: request.user, requestId: request.id };
});

/** The request's id (D19), for use cases that record it (audit rows, jobs). */
export const RequestId = createParamDecorator(
  (_: unknown, ctx: ExecutionContext): string => ctx.switchToHttp().getRequest<FastifyRequest>().id,
);
