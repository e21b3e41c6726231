import { globToRegExp } from '../cache/memory-cache.store';
import { CacheService } from '../cache/cache.service';
import { CacheKeys } from '../cache/cache-keys';
import { CollectionEvent, CollectionEventsService } from '../cache/collection-events';
import { loadConfig } from '../config/config.schema';
import { RoleChangeSubscriber } from './role-change.subscriber';

const SECRETS = {
  JWT_SECRET: 'unit-jwt-secret-that-is-long-enough-0123456789',
  TENANT_ENCRYPTION_KEY: '7f3a1c9e5b2d4f6a8c0e1b3d5f7a9c2e4b6d8f0a1c3e5b7d9f2a4c6e8b0d1f3a',
};

const event = (entityCode: string, tenantId: string): CollectionEvent => ({
  type: 'updated',
  entityCode,
  tenantId,
  id: 2,
  at: new Date().toISOString(),
});

/** Waits for the in-process delivery (setImmediate) and the handler's deletes to have run. */
const delivered = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 20));

describe(RoleChangeSubscriber.name, () => {
  let cache: CacheService;
  let events: CollectionEventsService;
  let subscriber: RoleChangeSubscriber;

  beforeEach(() => {
    cache = new CacheService(loadConfig({ ...SECRETS, NODE_ENV: 'test', CACHE_KEY_PREFIX: 'unit' }));
    events = new CollectionEventsService(cache);
    subscriber = new RoleChangeSubscriber(cache, events);
    subscriber.onModuleInit();
  });

  afterEach(async () => {
    subscriber.onModuleDestroy();
    await events.onApplicationShutdown();
    await cache.onApplicationShutdown();
  });

  /** User-state entries of tenants 1 and 10 (whose id starts like 1's) and another key of tenant 1. */
  async function seed(): Promise<string[]> {
    const keys = [
      cache.keys.userState('1', 2),
      cache.keys.userState('1', 3),
      cache.keys.userState('10', 2),
      cache.keys.entityList('1', 'customers', 'h'),
    ];
    for (const key of keys) await cache.setJson(key, { active: true }, 30);
    return keys;
  }
  const present = async (keys: string[]) =>
    (await Promise.all(keys.map(async (k) => (await cache.getJson(k)) !== undefined))).map((p, i) =>
      p ? keys[i] : undefined,
    );

  it("should drop the tenant's user-state entries on a roles event, also its own", async () => {
    const [a, b, other, list] = await seed();
    await events.publishAll([event('roles', '1')]);
    await delivered();
    expect(await present([a, b, other, list])).toEqual([undefined, undefined, other, list]);
  });

  it('should leave everything alone on events of other entities', async () => {
    const keys = await seed();
    await events.publishAll([event('customers', '1'), event('users', '1'), event('role', '1')]);
    await delivered();
    expect(await present(keys)).toEqual(keys);
  });

  it('should match one tenant only with the tenant pattern of the user-state keys', () => {
    const keys = new CacheKeys('mtb');
    const re = globToRegExp(keys.userStateAll(1));
    expect(keys.userStateAll(1)).toBe('mtb:user:1:*');
    expect(keys.userState(1, 5)).toMatch(re);
    expect(keys.userState(10, 5)).not.toMatch(re);
    expect(keys.userState(2, 1)).not.toMatch(re);
    expect(keys.revokedToken('1')).not.toMatch(re);
    // A crafted tenant id cannot widen the pattern: its separators and glob characters are escaped.
    expect(keys.userState(2, 5)).not.toMatch(globToRegExp(keys.userStateAll('1:*')));
  });
});
