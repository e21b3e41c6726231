import { Injectable } from '@nestjs/common';
import { AuthorizationError } from '../common/errors/app-error';
import type { AuthUser } from '../common/request-context';
import { ProfileLoaderService } from '../profile/profile-loader.service';
import type { RecordContext } from './record-context';
import { RecordHooks } from './record-hooks';

/** The ids a job keeps to act later as its user (an export, a workflow step). */
export interface RecordContextIds {
  tenantId: string;
  userId: number;
  entityCode: string;
  requestId: string;
}

/**
 * Builds a RecordContext from ids, without an HTTP request (D47; novu's worker rebuilding its
 * command): the user as the database has it now (active, current role and permissions — not what
 * a token said when the job was queued), the entity and profile as the profile loader resolves them
 * for the tenant. Workers then call the same use cases as the HTTP adapter.
 */
@Injectable()
export class RecordContextFactory {
  constructor(
    private readonly hooks: RecordHooks,
    private readonly profiles: ProfileLoaderService,
  ) {}

  async build(ids: RecordContextIds): Promise<RecordContext> {
    const user = await this.actingUser(ids);
    const loaded = await this.profiles.load({ entityCode: ids.entityCode, tenantId: ids.tenantId });
    return {
      tenantId: ids.tenantId,
      user,
      entity: loaded.entity,
      policy: loaded.policy,
      profileId: loaded.profile.prf_id,
      requestId: ids.requestId,
    };
  }

  /** The user a job acts as, as the database has it now; 403 when inactive or gone. */
  async actingUser(ids: Omit<RecordContextIds, 'entityCode'>): Promise<AuthUser> {
    const user = await this.hooks.actingUser(ids.tenantId, ids.userId, ids.requestId);
    if (!user) throw new AuthorizationError(`User ${ids.userId} cannot act in this tenant`);
    return user;
  }
}
