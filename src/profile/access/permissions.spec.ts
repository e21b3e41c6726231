import { hasPermission, isSystemAdmin, permissionMatches } from './permissions';

describe('permissionMatches (D9)', () => {
  it.each([
    ['read:entity', 'read:entity', true],
    ['read:entity', 'update:entity', false],
    ['read:entity', 'read:customers', false],
    ['*:entity', 'delete:entity', true],
    ['read:*', 'read:customers', true],
    ['*:*', 'admin:cache', true],
    ['*', 'export:dataview', true],
    ['read', 'read:entity', false],
    ['admin:system', 'admin:cache', false],
  ])('%s grants %s: %s', (granted, required, expected) => {
    expect(permissionMatches(granted, required)).toBe(expected);
  });

  it('should grant when any permission of the role matches', () => {
    expect(hasPermission(['read:entity', 'export:dataview'], 'export:dataview')).toBe(true);
    expect(hasPermission([], 'read:entity')).toBe(false);
  });

  it('should recognise a system admin by admin:system', () => {
    expect(isSystemAdmin(['admin:system', '*:*'])).toBe(true);
    expect(isSystemAdmin(['*:*'])).toBe(false);
  });
});
