import { Injectable } from '@nestjs/common';
import { AppError, AuthorizationError } from '../common/errors/app-error';
import { assertCanPerform, DATAVIEW_EXPORT_GRANT } from '../profile/access/can-perform';
import type { LoadedProfile } from '../profile/profile-loader.service';
import { ProfileLoaderService } from '../profile/profile-loader.service';
import type { EntityInfo } from '../registry/registry.types';
import type { Actor, RecordContext } from './record-context';
import { RecordHooks } from './record-hooks';

/** The ids a job keeps to act later as its user (an export, a workflow step, an import). */
export interface ActorIds {
  tenantId: string;
  userId: number;
  requestId: string;
}

export interface RecordContextIds extends ActorIds {
  entityCode: string;
}

/**
 * The service acting on its own (sign-up creating the account of a visitor nobody has signed in
 * as): a name for the audit (`created_by`) and exactly the permissions of that one purpose.
 */
export interface ServiceActor {
  name: string;
  permissions: readonly string[];
}

/** How a dataview reaches its source entity: reading its rows, or exporting them as well. */
export type SourceAccess = 'read' | 'export';

/**
 * The one place a RecordContext is built (D47), with three entrances:
 *  - `fromResolved`: an HTTP request, from what the entity guard chain resolved (no I/O);
 *  - `fromIds`: a worker or a job, from the ids it stored — the user as the database has it now
 *    (active, current role and permissions — not what a token said when the job was queued), the
 *    entity and profile as the profile loader resolves them for the tenant (novu's worker
 *    rebuilding its command);
 *  - `forSource`: a dataview's source entity for an actor, with the access decision of the grid;
 *  - and `forService`, the service itself (sign-up), with the permissions of its purpose only.
 * Workers then call the same use cases as the HTTP adapter, which take the access decision again.
 */
@Injectable()
export class RecordContextFactory {
  constructor(
    private readonly hooks: RecordHooks,
    private readonly profiles: ProfileLoaderService,
  ) {}

  /** Entrance 1: the entity and profile an HTTP request's guards resolved, for its actor. */
  static fromResolved(
    actor: Actor,
    entity: EntityInfo,
    loaded: Pick<LoadedProfile, 'policy' | 'profile'>,
  ): RecordContext {
    return {
      tenantId: actor.tenantId,
      user: actor.user,
      requestId: actor.requestId,
      entity,
      policy: loaded.policy,
      profileId: loaded.profile.prf_id,
    };
  }

  /** Entrance 2: from the ids a job stored. */
  async fromIds(ids: RecordContextIds): Promise<RecordContext> {
    const actor = await this.actorFromIds(ids);
    const loaded = await this.profiles.load({ entityCode: ids.entityCode, tenantId: ids.tenantId });
    return RecordContextFactory.fromResolved(actor, loaded.entity, loaded);
  }

  /** The actor a job acts as: its user as the database has it now; 403 when inactive or gone. */
  async actorFromIds(ids: ActorIds): Promise<Actor> {
    const user = await this.hooks.actingUser(ids.tenantId, ids.userId, ids.requestId);
    if (!user) throw new AuthorizationError(`User ${ids.userId} cannot act in this tenant`);
    return { tenantId: ids.tenantId, user, requestId: ids.requestId };
  }

  /**
   * Entrance 3: a dataview's source entity for an actor — 404 when the entity or its profile is
   * missing, 501 for an unsupported database type (D26), 403 unless canPerform allows `read`, and
   * `export` too when the grid exports: the role's `export:dataview` grants the role part of the
   * export (the route asked for it), the profile, mode and object decide the rest (D22, D47).
   */
  async forSource(actor: Actor, entityCode: string, access: SourceAccess = 'read'): Promise<RecordContext> {
    const loaded = await this.profiles.load({ entityCode, tenantId: actor.tenantId });
    if (!loaded.entity.supported)
      throw new AppError(
        'NOT_IMPLEMENTED',
        `Entity ${entityCode} is served by an unsupported database type (D26)`,
      );
    const ctx = RecordContextFactory.fromResolved(actor, loaded.entity, loaded);
    assertCanPerform('read', ctx);
    if (access === 'export') assertCanPerform('export', ctx, DATAVIEW_EXPORT_GRANT);
    return ctx;
  }

  /** The service itself acting in a tenant (user id 0): the use cases still decide on its grant. */
  async forService(
    tenantId: string,
    entityCode: string,
    requestId: string,
    service: ServiceActor,
  ): Promise<RecordContext> {
    const loaded = await this.profiles.load({ entityCode, tenantId });
    const user = {
      userId: 0,
      email: service.name,
      tenantId,
      roleId: null,
      roles: [],
      permissions: [...service.permissions],
      jti: `${service.name}:${requestId}`,
      exp: 0,
    };
    return RecordContextFactory.fromResolved({ tenantId, user, requestId }, loaded.entity, loaded);
  }
}
