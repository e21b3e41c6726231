import { CACHE_TTL, CacheKeys } from './cache-keys';
import { globToRegExp } from './memory-cache.store';

describe(CacheKeys.name, () => {
  const keys = new CacheKeys('mtb');

  it('should build the profile-loader key {prefix}:prf:{tenantId}:{entityCode}', () => {
    expect(keys.profileRequest(7, 'customers')).toBe('mtb:prf:7:customers');
  });

  it('should build the catalog key {prefix}:profile:{PRF_CODE}', () => {
    expect(keys.profileCatalog('customers')).toBe('mtb:profile:customers');
  });

  it('should build configuration keys {entityType}:{tenantId}:{code} with system rows as "system"', () => {
    expect(keys.config('page', 1, 'home')).toBe('mtb:page:1:home');
    expect(keys.config('valueset', null, 'order_status')).toBe('mtb:valueset:system:order_status');
  });

  it('should build the entity list key of D27 with tenant and entity', () => {
    expect(keys.entityList(2, 'orders', 'abc')).toBe('mtb:list:2:orders:abc');
    expect(keys.entityListAll(2, 'orders')).toBe('mtb:list:2:orders:*');
  });

  it('should name the collection event channel {prefix}:events:collection (D37)', () => {
    expect(keys.collectionEvents()).toBe('mtb:events:collection');
    expect(new CacheKeys('test-1a2b').collectionEvents()).toBe('test-1a2b:events:collection');
  });

  it('should escape separators and glob characters so one tenant pattern cannot match another', () => {
    const crafted = keys.entityList('1:*', 'orders', 'h');
    expect(crafted).not.toMatch(globToRegExp(keys.entityListAll(1, 'orders')));
    expect(keys.profileRequest(1, 'a*b')).toBe('mtb:prf:1:a%2ab');
  });

  it('should match invalidateEntityCache over every tenant of one entity only', () => {
    const re = globToRegExp(keys.profileRequestAllTenants('orders'));
    expect(keys.profileRequest(1, 'orders')).toMatch(re);
    expect(keys.profileRequest(99, 'orders')).toMatch(re);
    expect(keys.profileRequest(1, 'orders_archive')).not.toMatch(re);
  });

  it('should carry the TTLs of spec §8', () => {
    expect(CACHE_TTL).toMatchObject({
      registry: 86400,
      profile: 86400,
      page: 18000,
      workflow: 86400,
      dataview: 18000,
      navigation: 28800,
      valueset: 43200,
      profileRequest: 3600,
      profileCatalog: 0,
      dataviewConfig: 3600,
      entityConfig: 300,
      entityList: 300,
    });
  });
});
