import type { AuthUser } from '../common/request-context';
import { canManageCache, catalogViewer, clearTarget } from './cache-access';

const user = (permissions: string[], tenantId = '1'): AuthUser => ({
  userId: 1,
  email: 'u@example.test',
  tenantId,
  roleId: 1,
  roles: [],
  permissions,
  jti: 'j',
  exp: 0,
});

describe('cache route access (D9, D38)', () => {
  it('should need admin:cache or admin:system, wildcards included', () => {
    expect(canManageCache(['admin:cache'])).toBe(true);
    expect(canManageCache(['admin:system'])).toBe(true);
    expect(canManageCache(['*:*'])).toBe(true);
    expect(canManageCache(['admin:*'])).toBe(true);
    expect(canManageCache(['read:entity', 'read:dataview'])).toBe(false);
    expect(() => clearTarget(user(['read:entity']), undefined)).toThrow(/admin:cache or admin:system/);
    expect(() => catalogViewer(user([]))).toThrow();
  });

  it("should let a system administrator clear every tenant's keys or a named tenant's", () => {
    expect(clearTarget(user(['admin:system']), undefined)).toBeUndefined();
    expect(clearTarget(user(['admin:system']), '2')).toBe('2');
    expect(catalogViewer(user(['admin:system']))).toBeUndefined();
  });

  it("should keep a tenant's cache administrator (also *:*) to its own tenant", () => {
    for (const permissions of [['admin:cache'], ['*:*']]) {
      expect(clearTarget(user(permissions), undefined)).toBe('1');
      expect(clearTarget(user(permissions), '1')).toBe('1');
      expect(() => clearTarget(user(permissions), '2')).toThrow(/another tenant/);
      expect(catalogViewer(user(permissions))).toBe('1');
    }
  });
});
