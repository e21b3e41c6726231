import type { ExecutionContext, Type } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { ACCEPTS_TICKET, NO_TENANT, REQUIRED_FEATURE, REQUIRED_PERMISSION } from '../decorators/context.decorators';
import { IS_PUBLIC } from '../decorators/public.decorator';

/** What the global guards need to know about a route, from its decorators (handler over class). */
export interface RoutePolicy {
  /** @NoTenant(): probes, metrics — no tenant header, no limits. */
  readonly noTenant: boolean;
  /** @Public(): no token. */
  readonly isPublic: boolean;
  /** @RequireFeature(): the tenant features the route needs. */
  readonly features: readonly string[];
  /** @RequirePermission(): the permission the route needs. */
  readonly permission: string | undefined;
  /** @AcceptsTicket(): `?ticket=` stands for the tenant header and the token (D55). */
  readonly acceptsTicket: boolean;
}

/**
 * The guards' metadata, resolved once per route and kept (keyed by controller class and handler):
 * the decorators of a route cannot change after start-up, so the request path does one map
 * lookup instead of eight reflection reads through the Reflector.
 */
const policies = new WeakMap<Type | object, WeakMap<object, RoutePolicy>>();
const reflector = new Reflector();

export function routePolicy(context: ExecutionContext): RoutePolicy {
  const handler = context.getHandler();
  const type = context.getClass();
  let byHandler = policies.get(type);
  if (!byHandler) policies.set(type, (byHandler = new WeakMap()));
  let policy = byHandler.get(handler);
  if (!policy) {
    const targets = [handler, type];
    policy = Object.freeze({
      noTenant: reflector.getAllAndOverride<boolean | undefined>(NO_TENANT, targets) === true,
      isPublic: reflector.getAllAndOverride<boolean | undefined>(IS_PUBLIC, targets) === true,
      features: reflector.getAllAndOverride<string[] | undefined>(REQUIRED_FEATURE, targets) ?? [],
      permission: reflector.getAllAndOverride<string | undefined>(REQUIRED_PERMISSION, targets),
      acceptsTicket: reflector.getAllAndOverride<boolean | undefined>(ACCEPTS_TICKET, targets) === true,
    });
    byHandler.set(handler, policy);
  }
  return policy;
}
