import type { AuthUser } from '../common/request-context';
import type { EntityPolicy } from '../profile/policy/policy.model';
import type { EntityInfo } from '../registry/registry.types';

/**
 * Everything a records use case needs to know about who acts on what (D47): explicit in every call,
 * built by the HTTP adapter from the guards' results or by a worker from the ids stored in its job
 * (RecordContextFactory). The tenant id is required by type: no statement on tenant data can be
 * built without it.
 */
export interface RecordContext {
  readonly tenantId: string;
  readonly user: AuthUser;
  readonly entity: EntityInfo;
  readonly policy: EntityPolicy;
  /** The profile row the policy came from (part of list cache keys). */
  readonly profileId: number | null;
  readonly requestId: string;
}

/** The part of a context the scope builder needs: whose rows, as whom. */
export interface ScopeContext {
  readonly tenantId: string;
  readonly user: AuthUser;
}
