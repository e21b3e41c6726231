import { SetMetadata } from '@nestjs/common';

export const IS_PUBLIC = 'mtb:isPublic';
export const RAW_RESPONSE = 'mtb:rawResponse';

/** Marks a route as reachable without a token (default-deny: everything else is protected). */
export const Public = (): MethodDecorator & ClassDecorator => SetMetadata(IS_PUBLIC, true);

/** The handler writes its own body (probes, metrics): no success envelope around it. */
export const RawResponse = (): MethodDecorator & ClassDecorator => SetMetadata(RAW_RESPONSE, true);

export const DIRECT_ROUTE = 'mtb:directRoute';

/**
 * The handler needs nothing of Nest's request pipeline: it is public, tenant-free and raw (checked
 * at start-up), takes no argument and returns its answer synchronously. Fastify then calls it
 * straight from the route (common/http/direct-routes.hook.ts), without the guard, pipe and interceptor
 * consumers that every guard of which would let it through anyway. For the most-polled route,
 * /healthz (issue 14).
 */
export const DirectRoute = (): MethodDecorator => SetMetadata(DIRECT_ROUTE, true);
