import { errorMessage } from '../common/errors/error-message';
import { Injectable, Logger } from '@nestjs/common';
import { CacheService } from '../cache/cache.service';
import { CACHE_TTL } from '../cache/cache-keys';
import { AppError, NotFoundError, ValidationError } from '../common/errors/app-error';
import { RegistryService } from '../registry/registry.service';
import type { EntityInfo } from '../registry/registry.types';
import { EntityPolicy, normalisePolicy } from './policy/policy.model';
import { ProfileRepository, ProfileRow } from './profile.repository';

/** Spec §4.3 rule 8: what the loader attaches to the request. */
export interface LoadedProfile {
  /** The profile row with its JSON columns parsed. */
  profile: Omit<
    ProfileRow,
    'prf_policy' | 'prf_payload' | 'prf_policy_tenantpolicy' | 'prf_policy_projection'
  > & {
    prf_policy: unknown;
    prf_payload: unknown;
    prf_policy_tenantpolicy: unknown;
    prf_policy_projection: unknown;
  };
  /** The one normalised policy model (D23). */
  policy: EntityPolicy;
  entity: EntityInfo;
  meta: {
    source: 'redis' | 'database';
    cached: boolean;
    loadedAt: string;
    entityCode: string;
    tenantId: string;
  };
}

export interface LoadProfileOptions {
  entityCode: string;
  tenantId: string;
  /** The entity already resolved for this tenant (the request chain's step 2), so it is not looked up twice. */
  entity?: EntityInfo;
  /** Rule 3 / 11: default true. */
  cacheEnabled?: boolean;
  /** Rule 10 / 11: seconds, default 3600. */
  cacheTTL?: number;
}

function parseJson(value: unknown): unknown {
  if (typeof value !== 'string' || value === '') return null;
  try {
    return JSON.parse(value) as unknown;
  } catch {
    return null;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The shape load() writes to the cache: {profile, policy, meta}, all objects. */
function isCachedProfile(value: unknown): value is Omit<LoadedProfile, 'entity'> {
  return isObject(value) && isObject(value.profile) && isObject(value.policy) && isObject(value.meta);
}

/** Rule 11 `middleware(options)`. */
export interface ProfileMiddlewareOptions {
  /** Default true. */
  cacheEnabled?: boolean;
  /** Seconds, default 3600. */
  cacheTTL?: number;
}

/** What the loader reads from and writes to a request of an entity route (structurally typed). */
export interface ProfileRequest {
  params?: unknown;
  query?: unknown;
  user?: unknown;
  tenant?: { id: string };
  /** The entity resolved by the chain's step 2, when it ran. */
  entity?: EntityInfo;
  profile?: LoadedProfile;
}

/** The entity code of a request: the `:entity_code` path parameter, or `?entity=` (D28's /records). */
export function entityCodeOf(request: Pick<ProfileRequest, 'params' | 'query'>): string | undefined {
  const params = (request.params ?? {}) as Record<string, unknown>;
  const query = (request.query ?? {}) as Record<string, unknown>;
  const code = params.entity_code ?? query.entity;
  return typeof code === 'string' ? code : undefined;
}

/** Thrown for spec §4.3 rule 4/5 misses: 404 with `entityCode` beside the envelope (D17). */
export function profileNotFound(message: string, entityCode: string): AppError {
  return new NotFoundError(message, null, { entityCode });
}

/**
 * The profile loader of spec §4.3 (rules 3-11, with D20): registry row, then the lowest-id live
 * profile among system and own-tenant rows, cached per tenant and entity.
 */
@Injectable()
export class ProfileLoaderService {
  private readonly logger = new Logger('ProfileLoader');

  constructor(
    private readonly registry: RegistryService,
    private readonly profiles: ProfileRepository,
    private readonly cache: CacheService,
  ) {}

  /**
   * Rule 11 `middleware(options)`: rules 1-10 as a request step — 400 without an entity code, 401
   * without a user context, then the profile (cached per the options) attached as
   * `request.profile`. ProfileLoaderGuard runs it with the defaults; a route or an HTTP hook
   * elsewhere can run it with its own options.
   */
  middleware(options: ProfileMiddlewareOptions = {}): (request: ProfileRequest) => Promise<void> {
    const { cacheEnabled, cacheTTL } = options;
    return async (request) => {
      // The chain's step 2 already resolved the entity; only a bare use of the middleware reads the path.
      const entityCode = request.entity?.code ?? entityCodeOf(request);
      if (!entityCode) throw new ValidationError('Entity code is required in the path');
      if (!request.user || !request.tenant) throw new AppError('UNAUTHORIZED', 'Authentication required');
      request.profile = await this.load({
        entityCode,
        tenantId: request.tenant.id,
        entity: request.entity,
        cacheEnabled,
        cacheTTL,
      });
    };
  }

  /**
   * load() with the defaults (cache on) for a resolved entity, without a promise, when this
   * process's cache holds a usable profile entry; undefined when only load() can tell (a miss, or
   * an entry load() would warn about).
   */
  peekLoaded(entity: EntityInfo, tenantId: string): LoadedProfile | undefined {
    if (!tenantId) return undefined;
    const hit = this.cache.peekShared<unknown>(this.cache.keys.profileRequest(tenantId, entity.code));
    if (hit === undefined || !isCachedProfile(hit)) return undefined;
    return { ...hit, entity, meta: { ...hit.meta, source: 'redis', cached: true } };
  }

  /** Rule 11 `loadProfile`: the profile, or null when the entity or its profile does not exist. */
  async loadProfile(options: LoadProfileOptions): Promise<LoadedProfile | null> {
    try {
      return await this.load(options);
    } catch (err) {
      if (err instanceof AppError && err.code === 'NOT_FOUND') return null;
      throw err;
    }
  }

  /** Like loadProfile, but a missing entity or profile is a 404 (the request path). */
  async load(options: LoadProfileOptions): Promise<LoadedProfile> {
    const { entityCode, tenantId } = options;
    const cacheEnabled = options.cacheEnabled ?? true;
    const ttl = options.cacheTTL ?? CACHE_TTL.profileRequest;
    const key = this.cache.keys.profileRequest(tenantId, entityCode);

    // Rule 3: the cache only when enabled and a tenant is known; rule 9: failures fall through.
    if (cacheEnabled && tenantId) {
      const hit = await this.readCache(key);
      if (hit) {
        const entity = options.entity ?? (await this.registry.resolve(tenantId, entityCode));
        if (entity) {
          // `source: 'redis'` names the cache, whichever store backs it (spec §4.3 rule 8).
          return { ...hit, entity, meta: { ...hit.meta, source: 'redis', cached: true } };
        }
      }
    }

    // Concurrent misses of one tenant's profile load it once (issue 13 #3).
    const fromDatabase = () => this.loadFromDatabase(options, key, ttl, cacheEnabled);
    return cacheEnabled && tenantId ? this.cache.singleFlight(key, fromDatabase) : fromDatabase();
  }

  private async loadFromDatabase(
    options: LoadProfileOptions,
    key: string,
    ttl: number,
    cacheEnabled: boolean,
  ): Promise<LoadedProfile> {
    const { entityCode, tenantId } = options;
    const entity = options.entity ?? (await this.registry.resolve(tenantId, entityCode));
    if (!entity) throw profileNotFound(`Entity ${entityCode} not found`, entityCode);
    const row = await this.profiles.findForEntity(tenantId, entityCode);
    if (!row) throw profileNotFound(`No active profile for entity ${entityCode}`, entityCode);

    const profile: LoadedProfile['profile'] = {
      ...row,
      prf_policy: parseJson(row.prf_policy),
      prf_payload: parseJson(row.prf_payload),
      prf_policy_tenantpolicy: parseJson(row.prf_policy_tenantpolicy),
      prf_policy_projection: parseJson(row.prf_policy_projection),
    };
    const policy = normalisePolicy({
      modeCode: row.prf_mode_code,
      policy: profile.prf_policy,
      tenantPolicy: profile.prf_policy_tenantpolicy,
      projection: profile.prf_policy_projection,
    });
    const loaded: LoadedProfile = {
      profile,
      policy,
      entity,
      meta: { source: 'database', cached: false, loadedAt: new Date().toISOString(), entityCode, tenantId },
    };
    if (cacheEnabled && tenantId) {
      // The registry part is cached by the registry itself; only the profile goes here (rule 10).
      await this.cache.setJson(key, { profile, policy, meta: loaded.meta }, ttl);
    }
    return loaded;
  }

  /** Rule 11 `loadBulk`: entity code → profile; failures are logged and skipped. */
  async loadBulk(tenantId: string, entityCodes: string[]): Promise<Map<string, LoadedProfile>> {
    const result = new Map<string, LoadedProfile>();
    for (const code of entityCodes) {
      try {
        const loaded = await this.loadProfile({ entityCode: code, tenantId });
        if (loaded) result.set(code, loaded);
        else this.logger.warn({ entityCode: code, tenantId }, 'loadBulk: no profile');
      } catch (err) {
        this.logger.warn({ entityCode: code, tenantId, err: errorMessage(err) }, 'loadBulk: profile failed');
      }
    }
    return result;
  }

  /** Rule 11 `invalidateCache`: one tenant's entry of one entity. */
  async invalidateCache(entityCode: string, tenantId: string): Promise<void> {
    await this.cache.delete([this.cache.keys.profileRequest(tenantId, entityCode)]);
  }

  /** Rule 11 `invalidateEntityCache`: every tenant's entry of one entity, by scanning keys. */
  async invalidateEntityCache(entityCode: string): Promise<number> {
    return this.cache.deletePattern(this.cache.keys.profileRequestAllTenants(entityCode));
  }

  private async readCache(key: string): Promise<Omit<LoadedProfile, 'entity'> | undefined> {
    try {
      const hit = await this.cache.getShared<unknown>(key);
      if (hit === undefined) return undefined;
      // Rule 9: a value that parses but is not a cached profile is unusable, hence a miss.
      if (!isCachedProfile(hit)) {
        this.logger.warn({ key }, 'Unusable profile cache entry; loading from the database');
        return undefined;
      }
      return hit;
    } catch (err) {
      this.logger.warn(
        { key, err: errorMessage(err) },
        'Profile cache unavailable; loading from the database',
      );
      return undefined;
    }
  }
}
