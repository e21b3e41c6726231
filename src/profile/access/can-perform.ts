import { hasPermission, isSystemAdmin } from './permissions';
import type { AuthUser } from '../../common/request-context';
import type { EntityInfo } from '../../registry/registry.types';
import type { EntityPolicy, PolicyAction } from '../policy/policy.types';
import { modeAllows } from './mode-actions';

/** What a caller does to an entity's records. */
export type RecordAction = 'read' | 'create' | 'update' | 'delete' | 'export';

export type AccessDecision = { allowed: true } | { allowed: false; reason: string };

const MUTATING: ReadonlySet<RecordAction> = new Set(['create', 'update', 'delete']);

/** The profile's permission that covers a record action (write covers create and update). */
function policyActionOf(action: RecordAction): PolicyAction {
  return action === 'create' || action === 'update' ? 'write' : action;
}

/**
 * The one access decision (D21, D22, D47), for guards, cascades, exports and workflow steps alike:
 * the role must hold `<action>:entity` or `<action>:<code>`; mutating a system-maintained entity
 * needs `admin:system`; the profile's permissions and its mode must allow the action; VIEW and
 * FUNCTION objects are read-only, and an EXECUTE profile serves FUNCTION objects only.
 */
export function canPerform(
  action: RecordAction,
  entity: EntityInfo,
  policy: EntityPolicy,
  user: Pick<AuthUser, 'permissions'>,
): AccessDecision {
  const maintained = maintainedByAllows(action, entity, user);
  if (!maintained.allowed) return maintained;
  const granted = user.permissions;
  if (!hasPermission(granted, `${action}:entity`) && !hasPermission(granted, `${action}:${entity.code}`))
    return { allowed: false, reason: `Permission ${action}:${entity.code} required` };
  const policyAction = policyActionOf(action);
  if (!policy.permissions[policyAction])
    return { allowed: false, reason: `The profile of ${entity.code} does not allow ${action}` };
  const byMode =
    modeAllows(policy.mode, policyAction) && (policy.mode !== 'EXECUTE' || entity.type === 'FUNCTION');
  const byObject = entity.type === 'TABLE' || action === 'read' || action === 'export';
  if (!byMode || !byObject)
    return {
      allowed: false,
      reason: `Entity ${entity.code} does not allow ${action} (${policy.mode}, ${entity.type})`,
    };
  return { allowed: true };
}

/** D21 (spec §4.3 chain step 4): mutating a system-maintained entity needs `admin:system`. */
export function maintainedByAllows(
  action: RecordAction,
  entity: EntityInfo,
  user: Pick<AuthUser, 'permissions'>,
): AccessDecision {
  return MUTATING.has(action) && entity.maintainedBy === 'system' && !isSystemAdmin(user.permissions)
    ? { allowed: false, reason: `Entity ${entity.code} is maintained by the system` }
    : { allowed: true };
}
