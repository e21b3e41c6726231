import { Logger } from '@nestjs/common';
import type { AppConfig } from '../config/config.schema';
import type { BootstrapStep, StartupService } from '../health/startup.service';
import type { RegistryService } from '../registry/registry.service';
import { CacheService } from '../cache/cache.service';
import { CollectionEventsService } from '../cache/collection-events';
import type { CatalogProfileRow, ProfileCatalogRepository } from './profile-catalog.repository';
import { CATALOG_RELOAD_ENTITY, ProfileCatalogService } from './profile-catalog.service';

const row = (code: string, over: Partial<CatalogProfileRow> = {}): CatalogProfileRow => ({
  prf_id: 1,
  prf_tenant_id: null,
  prf_code: code,
  prf_description: null,
  prf_object_code: code,
  prf_mode_code: 'READ',
  prf_policy: null,
  prf_payload: null,
  prf_policy_tenantpolicy: null,
  prf_policy_projection: null,
  prf_policy_encryption_required: null,
  prf_policy_audit_level: null,
  ...over,
});

describe(ProfileCatalogService.name, () => {
  let cache: CacheService;
  let events: CollectionEventsService;
  let rows: () => Promise<CatalogProfileRow[]>;
  let steps: BootstrapStep[];
  let service: ProfileCatalogService;
  let warn: jest.SpyInstance;

  beforeEach(() => {
    warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
    jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    cache = new CacheService({ cache: { url: undefined, keyPrefix: 'spec' } } as unknown as AppConfig);
    events = new CollectionEventsService(cache);
    rows = async () => [row('a'), row('b')];
    steps = [];
    const repository = {
      activeProfiles: () => rows(),
      catalogEntityCodes: async () => ['object_profiles'],
    } as unknown as ProfileCatalogRepository;
    const registry = { invalidateAll: async () => 0 } as unknown as RegistryService;
    const startup = {
      registerBootstrapStep: (s: BootstrapStep) => steps.push(s),
    } as unknown as StartupService;
    service = new ProfileCatalogService(cache, events, repository, registry, startup);
    service.onModuleInit();
  });

  afterEach(async () => {
    service.onModuleDestroy();
    await events.onApplicationShutdown();
    jest.restoreAllMocks();
  });

  it('should register one bootstrap step that writes every profile without expiry', async () => {
    expect(steps.map((s) => s.name)).toEqual(['profile-catalog']);
    await steps[0].run();
    expect(await cache.store.ttl('spec:profile:a')).toBe(-1);
    expect(await service.view(undefined)).toEqual({ count: 2, keys: ['a', 'b'] });
  });

  it('should finish the start-up step when the database fails (readiness is not held back)', async () => {
    rows = () => Promise.reject(new Error('database gone'));
    await expect(steps[0].run()).resolves.toBeUndefined();
    expect(await service.view(undefined)).toEqual({ count: 0, keys: [] });
  });

  it('should store what it can and report the keys that could not be written', async () => {
    const set = cache.store.set.bind(cache.store);
    jest
      .spyOn(cache.store, 'set')
      .mockImplementation((key, value, ttl) =>
        key === 'spec:profile:b' ? Promise.reject(new Error('OOM')) : set(key, value, ttl),
      );
    const report = await service.reload();
    expect(report.keys).toEqual(['a']);
    expect(report.failed).toEqual([
      { code: 'b', tenantId: null, stage: 'store', reason: 'cache write failed' },
    ]);
    expect(warn.mock.calls.some((c) => String(c[1]).includes('b (store: cache write failed)'))).toBe(true);
  });

  it('should run a reload asked for during a load once more afterwards, not in parallel', async () => {
    let loads = 0;
    let running = 0;
    let maxRunning = 0;
    rows = async () => {
      loads++;
      running++;
      maxRunning = Math.max(maxRunning, running);
      await new Promise((r) => setTimeout(r, 20));
      running--;
      return [row('a')];
    };
    await Promise.all([service.reload(), service.reload(), service.reload(), service.reload()]);
    expect(loads).toBe(2);
    expect(maxRunning).toBe(1);
  });

  it('should reload on events of the profile tables, and skip its own reload broadcast', async () => {
    await service.reload();
    const reload = jest.spyOn(service, 'reload');
    const at = new Date().toISOString();
    const hook = (entityCode: string, id: number, own: boolean) =>
      events.runReloadHooks({ type: 'updated', entityCode, tenantId: '1', id, at }, { own });
    await hook('customers', 1, false);
    expect(reload).not.toHaveBeenCalled();
    await hook('object_profiles', 1, true);
    await hook(CATALOG_RELOAD_ENTITY, 0, false);
    expect(reload).toHaveBeenCalledTimes(2);
    await hook(CATALOG_RELOAD_ENTITY, 0, true);
    expect(reload).toHaveBeenCalledTimes(2);
  });
});
