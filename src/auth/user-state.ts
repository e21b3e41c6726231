import type { UserRecord } from './users.repository';

/** What JwtAuthGuard caches per user (CacheKeys.userState). */
export interface UserState {
  active: boolean;
  /** Epoch ms: tokens issued before it are revoked (D46); null when there is no such revocation. */
  notBefore: number | null;
  /**
   * The user's role (usr_role_id) when it is a live, active role of the user's own tenant; null
   * otherwise, and then `roleCodes` and `permissions` are empty.
   */
  roleId: number | null;
  roleCodes: string[];
  /** The role's current rol_permissions (D9): what the guards enforce, not the token's copy. */
  permissions: string[];
}

/** The state of a user as read from the database (undefined: no such user in the tenant). */
export function userStateOf(record: UserRecord | undefined, notBefore: number | null): UserState {
  const role = record?.roleCode != null ? record : undefined;
  return {
    active: record?.active ?? false,
    notBefore,
    roleId: role?.roleId ?? null,
    roleCodes: role?.roleCode ? [role.roleCode] : [],
    permissions: role ? [...role.permissions] : [],
  };
}

/** Anything else (e.g. the shapes older versions cached, without the role) is read as a miss. */
export function isUserState(value: unknown): value is UserState {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Partial<UserState>;
  return (
    typeof v.active === 'boolean' &&
    (v.notBefore === null || typeof v.notBefore === 'number') &&
    (v.roleId === null || Number.isSafeInteger(v.roleId)) &&
    isStringArray(v.roleCodes) &&
    isStringArray(v.permissions)
  );
}

function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((p) => typeof p === 'string');
}
