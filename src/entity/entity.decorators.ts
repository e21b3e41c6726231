import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import type { LoadedProfile } from '../profile/profile-loader.service';
import type { RecordContext } from '../records/record-context';
import { RecordContextFactory } from '../records/record-context.factory';
import type { EntityInfo } from '../registry/registry.types';
import { parseListQuery } from './list-query';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by EntityInfoGuard (spec §4.3 chain step 2). */
    entity?: EntityInfo;
    /** Set by ProfileLoaderGuard (step 3). */
    profile?: LoadedProfile;
  }
}

/** The records context of an entity route, from what the guard chain resolved (D47). */
export function recordContextOf(request: FastifyRequest): RecordContext {
  const { entity, profile, user, tenant } = request;
  if (!entity || !profile || !user || !tenant) throw new Error('Entity request chain did not run');
  return RecordContextFactory.fromResolved(
    { tenantId: tenant.id, user, requestId: request.id },
    entity,
    profile,
  );
}

/** `@RecordCtx()`: the RecordContext of the request (tenant, user, entity, policy, request id). */
export const RecordCtx = createParamDecorator((_: unknown, ctx: ExecutionContext): RecordContext =>
  recordContextOf(ctx.switchToHttp().getRequest<FastifyRequest>()),
);

/** `@ListQuery()`: the list parameters of spec §4.3 style 2 as a RecordQuery (list-query.ts). */
export const ListQuery = createParamDecorator((_: unknown, ctx: ExecutionContext) => {
  const request = ctx.switchToHttp().getRequest<FastifyRequest>();
  return parseListQuery(request.query, request.profile);
});
