import { hasPermission, isSystemAdmin } from '../profile/access/permissions';
import { AuthorizationError } from '../common/errors/app-error';
import type { AuthUser } from '../common/request-context';

/** D38: the cache routes need either permission (D9), which one route decorator cannot say. */
export const CACHE_ADMIN_PERMISSIONS = ['admin:cache', 'admin:system'] as const;

export function canManageCache(permissions: readonly string[]): boolean {
  return CACHE_ADMIN_PERMISSIONS.some((p) => hasPermission(permissions, p));
}

/** 403 FORBIDDEN unless the user holds `admin:cache` or `admin:system` (wildcards count, D9). */
export function assertCacheAdmin(user: AuthUser): void {
  if (!canManageCache(user.permissions))
    throw new AuthorizationError(`Permission ${CACHE_ADMIN_PERMISSIONS.join(' or ')} required`);
}

/**
 * The tenant whose keys a clear removes; undefined = every tenant's.
 *
 * Only a system administrator (a role that names `admin:system` itself, as everywhere else in the
 * service: `*:*` makes a tenant administrator, not a system one) reaches beyond its own tenant:
 * without `tenantId` it clears every tenant's keys, with one it clears that tenant's. Anyone else
 * with `admin:cache` clears its own tenant's keys; naming another tenant is 403.
 */
export function clearTarget(user: AuthUser, requested: string | undefined): string | undefined {
  assertCacheAdmin(user);
  if (isSystemAdmin(user.permissions)) return requested;
  if (requested !== undefined && requested !== user.tenantId)
    throw new AuthorizationError("Only a system administrator may clear another tenant's cache");
  return user.tenantId;
}

/**
 * Whose profiles a user sees in the catalog answers: a system administrator every profile; anyone
 * else the system-wide profiles and its own tenant's (prf_code is unique across tenants, but
 * another tenant's codes are still that tenant's business).
 */
export function catalogViewer(user: AuthUser): string | undefined {
  assertCacheAdmin(user);
  return isSystemAdmin(user.permissions) ? undefined : user.tenantId;
}
