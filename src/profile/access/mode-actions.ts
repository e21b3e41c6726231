import type { PolicyAction, ProfileMode } from '../policy/policy.types';
import { POLICY_ACTIONS } from '../policy/policy.types';

/**
 * The one mode → action table (D22): FULL allows everything; WRITE everything but delete; READ
 * reads and exports; EXECUTE reads and exports too — and only for FUNCTION objects, which is a rule
 * of the object (canPerform), not of the mode.
 */
export const MODE_ACTIONS: Readonly<Record<ProfileMode, readonly PolicyAction[]>> = {
  FULL: POLICY_ACTIONS,
  WRITE: ['read', 'write', 'export', 'approve'],
  READ: ['read', 'export'],
  EXECUTE: ['read', 'export'],
};

export function modeAllows(mode: ProfileMode, action: PolicyAction): boolean {
  return MODE_ACTIONS[mode].includes(action);
}
