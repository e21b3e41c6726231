import { AppError, AuthorizationError } from '../../common/errors/app-error';
import type { AuthUser } from '../../common/request-context';
import { canPerform } from '../../profile/access/can-perform';
import type { ProfileLoaderService } from '../../profile/profile-loader.service';
import type { RecordContext } from '../../records/record-context';
import type { DataviewDefinition } from '../config/dataview-config.service';

/**
 * The RecordContext of a dataview's source entity for the caller (as RecordContextFactory builds
 * one, with the user of the request's token): 404 when the entity or its profile is missing, 501
 * for an unsupported database type (D26), 403 unless canPerform allows `read` — and `export` when
 * asked: the role's `export:dataview` (checked by the route's guard) stands for the role part of
 * `export:<entity>`, so canPerform decides on the rest (the profile's export permission, its mode
 * and the object type; D22, D47).
 */
export async function sourceContext(
  profiles: ProfileLoaderService,
  ids: { tenantId: string; user: AuthUser; requestId: string },
  def: DataviewDefinition,
  options: { export?: boolean } = {},
): Promise<RecordContext> {
  const { tenantId, user, requestId } = ids;
  const loaded = await profiles.load({ entityCode: def.sourceEntity, tenantId });
  if (!loaded.entity.supported)
    throw new AppError(
      'NOT_IMPLEMENTED',
      `Entity ${def.sourceEntity} is served by an unsupported database type (D26)`,
    );
  const read = canPerform('read', loaded.entity, loaded.policy, user);
  if (!read.allowed) throw new AuthorizationError(read.reason);
  if (options.export) {
    const decision = canPerform('export', loaded.entity, loaded.policy, {
      permissions: [...user.permissions, `export:${loaded.entity.code}`],
    });
    if (!decision.allowed) throw new AuthorizationError(decision.reason);
  }
  return {
    tenantId,
    user,
    entity: loaded.entity,
    policy: loaded.policy,
    profileId: loaded.profile.prf_id,
    requestId,
  };
}
