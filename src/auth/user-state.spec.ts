import { isUserState, userStateOf } from './user-state';
import type { UserRecord } from './users.repository';

const RECORD: UserRecord = {
  id: 2,
  tenantId: '1',
  email: 'viewer@acme.test',
  firstName: null,
  lastName: null,
  passwordHash: null,
  roleId: 2,
  roleCode: 'VIEWER',
  permissions: ['read:entity'],
  active: true,
};

describe('user state (JwtAuthGuard)', () => {
  it("should carry the role's current code and permissions", () => {
    expect(userStateOf(RECORD, 1234)).toEqual({
      active: true,
      notBefore: 1234,
      roleId: 2,
      roleCodes: ['VIEWER'],
      permissions: ['read:entity'],
    });
  });

  it('should grant nothing when the role does not resolve (inactive, deleted, of another tenant)', () => {
    // UsersRepository leaves roleCode and permissions empty for such a role.
    expect(userStateOf({ ...RECORD, roleCode: null, permissions: [] }, null)).toEqual({
      active: true,
      notBefore: null,
      roleId: null,
      roleCodes: [],
      permissions: [],
    });
  });

  it('should make an unknown user inactive', () => {
    expect(userStateOf(undefined, null)).toEqual({
      active: false,
      notBefore: null,
      roleId: null,
      roleCodes: [],
      permissions: [],
    });
  });

  it('should read what it caches, and read older shapes (without the role) as a miss', () => {
    expect(isUserState(JSON.parse(JSON.stringify(userStateOf(RECORD, 5))))).toBe(true);
    expect(isUserState({ active: true, notBefore: null })).toBe(false);
    expect(isUserState(true)).toBe(false);
    expect(isUserState(null)).toBe(false);
    const state = userStateOf(RECORD, null);
    expect(isUserState({ ...state, permissions: '*:*' })).toBe(false);
    expect(isUserState({ ...state, permissions: [1] })).toBe(false);
    expect(isUserState({ ...state, roleCodes: undefined })).toBe(false);
    expect(isUserState({ ...state, roleId: '2' })).toBe(false);
  });
});
