import { AuthorizationError } from '../../common/errors/app-error';
import type { AuthUser } from '../../common/request-context';
import type { EntityInfo } from '../../registry/registry.types';
import type { EntityPolicy, PolicyAction } from '../policy/policy.types';
import { modeAllows } from './mode-actions';
import { hasPermission, isSystemAdmin } from './permissions';

/** What a caller does to an entity's records. */
export type RecordAction = 'read' | 'create' | 'update' | 'delete' | 'export' | 'approve';

export type AccessDecision = { allowed: true } | { allowed: false; reason: string };

/** Who acts on which entity under which profile: a RecordContext, or the parts a guard holds. */
export interface AccessSubject {
  readonly entity: EntityInfo;
  readonly policy: EntityPolicy;
  readonly user: Pick<AuthUser, 'permissions'>;
}

/**
 * The role permissions that stand for an action, any one of them (a refusal names the first): by
 * default `<action>:<entity code>` or `<action>:entity` (D22). A route family that acts on an entity through something else
 * names its own: a dataview export is granted by `export:dataview`, a workflow approval by the
 * step's permission on `workflow` or on the workflow's code (see the grants below).
 */
export type RoleGrant = readonly string[];

export const entityGrant = (action: RecordAction, entity: Pick<EntityInfo, 'code'>): RoleGrant => [
  `${action}:${entity.code}`,
  `${action}:entity`,
];

/** The role's `export:dataview` stands for the export right on the dataview's own entity (D9). */
export const DATAVIEW_EXPORT_GRANT: RoleGrant = ['export:dataview'];

/** An approval step's permission (`approve` by default) on workflows, or on this workflow. */
export const approvalGrant = (permission: string, workflowCode: string): RoleGrant => [
  `${permission}:workflow`,
  `${permission}:${workflowCode}`,
];

const MUTATING: ReadonlySet<RecordAction> = new Set(['create', 'update', 'delete']);

/** The profile's permission that covers a record action (write covers create and update). */
function policyActionOf(action: RecordAction): PolicyAction {
  return action === 'create' || action === 'update' ? 'write' : action;
}

/** Whether the role holds any permission of the grant. */
export function roleGrants(user: Pick<AuthUser, 'permissions'>, grant: RoleGrant): boolean {
  return grant.some((required) => hasPermission(user.permissions, required));
}

/**
 * The one access decision (D21, D22, D47), for guards, use cases, cascades, exports, workflow
 * steps and approvals alike, in this order: mutating a system-maintained entity needs
 * `admin:system` (D21, spec §4.3 chain step 4); the role must hold the grant; the profile's
 * permissions and its mode must allow the action; VIEW and FUNCTION objects are read-only (approve
 * is a decision on a record, not a write of it), and an EXECUTE profile serves FUNCTION objects only.
 */
export function canPerform(
  action: RecordAction,
  subject: AccessSubject,
  grant: RoleGrant = entityGrant(action, subject.entity),
): AccessDecision {
  const { entity, policy, user } = subject;
  if (MUTATING.has(action) && entity.maintainedBy === 'system' && !isSystemAdmin(user.permissions))
    return { allowed: false, reason: `Entity ${entity.code} is maintained by the system` };
  if (!roleGrants(user, grant)) return { allowed: false, reason: `Permission ${grant[0]} required` };
  const policyAction = policyActionOf(action);
  if (!policy.permissions[policyAction])
    return { allowed: false, reason: `The profile of ${entity.code} does not allow ${action}` };
  const byMode =
    modeAllows(policy.mode, policyAction) && (policy.mode !== 'EXECUTE' || entity.type === 'FUNCTION');
  const byObject = entity.type === 'TABLE' || !MUTATING.has(action);
  if (!byMode || !byObject)
    return {
      allowed: false,
      reason: `Entity ${entity.code} does not allow ${action} (${policy.mode}, ${entity.type})`,
    };
  return { allowed: true };
}

/** canPerform, or the 403 it stands for. */
export function assertCanPerform(action: RecordAction, subject: AccessSubject, grant?: RoleGrant): void {
  const decision = canPerform(action, subject, grant);
  if (!decision.allowed) throw new AuthorizationError(decision.reason);
}
