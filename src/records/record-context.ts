import type { Actor, AuthUser } from '../common/request-context';

export type { Actor };
import type { EntityPolicy } from '../profile/policy/policy.model';
import type { EntityInfo } from '../registry/registry.types';

/**
 * Everything a records use case needs to know about who acts on what (D47): the actor, the entity
 * and the policy of its profile. Built only by RecordContextFactory, through one of its three
 * entrances (an HTTP request's resolved entity, stored ids, a dataview's source).
 */
export interface RecordContext extends Actor {
  readonly entity: EntityInfo;
  readonly policy: EntityPolicy;
  /** The profile row the policy came from (part of list cache keys). */
  readonly profileId: number | null;
}

/** The part of a context the scope builder needs: whose rows, as whom. */
export interface ScopeContext {
  readonly tenantId: string;
  readonly user: AuthUser;
}
