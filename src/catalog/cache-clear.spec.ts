import { CacheKeys } from '../cache/cache-keys';
import {
  classifyKey,
  clearDecision,
  isSecurityNamespace,
  namespacesOf,
  SECURITY_NAMESPACES,
} from './cache-clear';

const P = 'mtb';
const keys = new CacheKeys(P);

describe('cache clear (D38)', () => {
  describe('classifyKey', () => {
    it('should read the namespace and the tenant part the key builder writes', () => {
      expect(classifyKey(keys.entityList('7', 'customers', 'h'), P)).toMatchObject({
        namespace: 'list',
        tenant: '7',
      });
      expect(classifyKey(keys.entityConfig('customers', '7'), P)).toMatchObject({
        namespace: 'config',
        tenant: '7',
      });
      expect(classifyKey(keys.profileRequest('7', 'orders'), P)).toMatchObject({
        namespace: 'prf',
        tenant: '7',
      });
      expect(classifyKey(keys.config('page', '7', 'form'), P)).toMatchObject({
        namespace: 'page',
        tenant: '7',
      });
      expect(classifyKey(keys.profileCatalog('orders'), P)).toMatchObject({
        namespace: 'profile',
        tenant: undefined,
      });
    });

    it('should not take keys of another prefix or without a namespace part', () => {
      expect(classifyKey('mtb2:list:1:x:h', P)).toBeUndefined();
      expect(classifyKey('mtb:lonely', P)).toBeUndefined();
    });
  });

  describe('clearDecision', () => {
    it('should remove each scope’s namespaces only', () => {
      expect(namespacesOf('profiles')).toEqual(['profile', 'prf']);
      expect(namespacesOf('lists')).toEqual(['list']);
      expect(namespacesOf('config')).toEqual(
        expect.arrayContaining(['registry', 'page', 'dataview', 'navigation', 'valueset', 'config']),
      );
      expect(clearDecision(keys.entityList('1', 'c', 'h'), P, 'lists', undefined)).toBe(true);
      expect(clearDecision(keys.entityList('1', 'c', 'h'), P, 'config', undefined)).toBe(false);
      expect(clearDecision(keys.config('valueset', '1', 'tiers'), P, 'config', undefined)).toBe(true);
      expect(clearDecision(keys.profileCatalog('orders'), P, 'profiles', undefined)).toBe(true);
      expect(clearDecision(keys.tenant('1'), P, 'profiles', undefined)).toBe(false);
      expect(clearDecision(keys.tenant('1'), P, 'all', undefined)).toBe(true);
    });

    it('should never remove security state, whatever the scope or tenant', () => {
      const security = [
        keys.revokedToken('jti'),
        keys.signupOtp('1', 'hash'),
        `${keys.signupOtp('1', 'hash')}:attempts:0123`,
        keys.signupSession('hash'),
        `${P}:rate:1`,
        `${P}:rate-public:addr`,
        `${P}:rate-fail-addr:addr`,
        `${P}:signin-fail-addr:1:e:a`,
        `${P}:signin-fail-acct:1:e`,
        `${P}:rate-new-limiter:x`,
      ];
      for (const key of security)
        for (const scope of ['all', 'profiles', 'config', 'lists'] as const)
          for (const tenant of [undefined, '1'])
            expect([key, scope, tenant, clearDecision(key, P, scope, tenant)]).toEqual([
              key,
              scope,
              tenant,
              false,
            ]);
    });

    it('should list the limiter and revocation namespaces the service uses as security namespaces', () => {
      for (const ns of ['revoked', 'otp', 'signup-session', 'rate', 'rate-public', 'rate-fail-addr'])
        expect(isSecurityNamespace(ns)).toBe(true);
      expect(SECURITY_NAMESPACES).toEqual(expect.arrayContaining(['signin-fail-addr', 'signin-fail-acct']));
      expect(isSecurityNamespace('list')).toBe(false);
    });

    it('should remove only the named tenant’s keys in a tenant-scoped clear', () => {
      expect(clearDecision(keys.entityList('1', 'c', 'h'), P, 'all', '1')).toBe(true);
      expect(clearDecision(keys.entityList('2', 'c', 'h'), P, 'all', '1')).toBe(false);
      expect(clearDecision(keys.entityConfig('c', '1'), P, 'config', '1')).toBe(true);
      expect(clearDecision(keys.entityConfig('c', '2'), P, 'config', '1')).toBe(false);
      expect(clearDecision(keys.userState('1', 2), P, 'all', '2')).toBe(false);
      // The catalog's owner is in the entry, not the key; unknown namespaces have no known owner.
      expect(clearDecision(keys.profileCatalog('orders'), P, 'profiles', '1')).toBe('catalog');
      expect(clearDecision(`${P}:future-cache:1:x`, P, 'all', '1')).toBe(false);
      expect(clearDecision(`${P}:future-cache:1:x`, P, 'all', undefined)).toBe(true);
    });

    it('should leave the event channels alone', () => {
      expect(clearDecision(keys.collectionEvents(), P, 'all', undefined)).toBe(false);
    });
  });
});
