/**
 * D9: permissions are `<action>:<resource>` strings; `*` matches any part (`*:*` = everything).
 * A role with `admin:system` is a system admin.
 */
export function permissionMatches(granted: string, required: string): boolean {
  const parts = granted === '*' ? ['*', '*'] : granted.split(':');
  // A malformed permission (no resource part) grants nothing.
  if (parts.length !== 2) return false;
  const [ga, gr] = parts;
  const [ra = '', rr = ''] = required.split(':');
  return (ga === '*' || ga === ra) && (gr === '*' || gr === rr);
}

export function hasPermission(granted: readonly string[], required: string): boolean {
  return granted.some((g) => permissionMatches(g, required));
}

export const SYSTEM_ADMIN_PERMISSION = 'admin:system';

export function isSystemAdmin(granted: readonly string[]): boolean {
  return granted.includes(SYSTEM_ADMIN_PERMISSION);
}
