import { normalisePolicy } from '../profile/policy/policy.model';
import type { RecordContext } from '../records/record-context';
import type { EntityInfo } from '../registry/registry.types';
import { shapingVersion, viewKey } from './live-stream';

const entity = { code: 'customers', registryId: 3, fields: [{ name: 'email' }] } as unknown as EntityInfo;
const user = {
  userId: 7,
  email: 'u@x.test',
  tenantId: '1',
  roleId: 2,
  roles: [],
  permissions: [],
  jti: 'j',
  exp: 0,
};

const ctxOf = (excludeFields: string[], over: Partial<RecordContext> = {}): RecordContext => ({
  tenantId: '1',
  user,
  requestId: 'r',
  entity,
  profileId: 11,
  policy: normalisePolicy({
    modeCode: 'FULL',
    policy: { tenantPolicy: { mode: 'STRICT' }, projection: { type: 'exclude', excludeFields } },
  }),
  ...over,
});

describe('the view key of a live stream (issue 34 #3)', () => {
  it('should be the same for two streams reading with the same profile content', () => {
    expect(viewKey(ctxOf(['notes']))).toBe(viewKey(ctxOf(['notes'])));
  });

  it('should differ when the profile row was edited in place (same id, another policy)', () => {
    expect(viewKey(ctxOf(['notes', 'email']))).not.toBe(viewKey(ctxOf(['notes'])));
    expect(shapingVersion(ctxOf(['notes', 'email']))).not.toBe(shapingVersion(ctxOf(['notes'])));
  });

  it('should differ when the registry entry changed', () => {
    const fields = [{ name: 'email' }, { name: 'phone' }];
    const changed = ctxOf(['notes'], { entity: { ...entity, fields } as unknown as EntityInfo });
    expect(viewKey(changed)).not.toBe(viewKey(ctxOf(['notes'])));
  });

  it('should not depend on the user when the row filter names no @user variable', () => {
    expect(viewKey(ctxOf(['notes'], { user: { ...user, userId: 8 } }))).toBe(viewKey(ctxOf(['notes'])));
  });
});
