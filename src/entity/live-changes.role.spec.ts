import type { AuthUser } from '../common/request-context';
import { roleChanged } from './live-changes.service';

const user = (roleId: number | null, permissions: string[]): AuthUser => ({
  userId: 7,
  email: 'u@x.test',
  tenantId: '1',
  roleId,
  roles: [],
  permissions,
  jti: 'j',
  exp: 0,
});

describe(roleChanged.name, () => {
  it('should see the same role with the same permissions, in any order, as unchanged', () => {
    expect(
      roleChanged(user(2, ['read:*', 'update:customers']), user(2, ['update:customers', 'read:*'])),
    ).toBe(false);
  });

  it.each([
    ['another role', user(3, ['read:*'])],
    ['no role any more', user(null, [])],
    ['a permission more', user(2, ['read:*', 'delete:customers'])],
    ['a permission less', user(2, [])],
    ['another permission', user(2, ['read:orders'])],
  ])('should see %s as a change', (_, now) => {
    expect(roleChanged(user(2, ['read:*']), now)).toBe(true);
  });
});
