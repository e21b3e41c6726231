import { errorMessage } from '../common/errors/error-message';
import { Injectable, Logger } from '@nestjs/common';
import { CACHE_TTL } from '../cache/cache-keys';
import { CacheService } from '../cache/cache.service';
import { buildEntityInfo, columnOf, fieldByName, RegistryRow } from './registry-entity';
import { isEntityCode, RegistryConfigError } from './registry-payload';
import { RegistryRepository } from './registry.repository';
import type { EntityInfo, FieldDef } from './registry.types';

/** Seconds an unknown (or unusable) code is remembered as not found. */
export const REGISTRY_NEGATIVE_TTL_S = 60;

/** Cache value: `info: null` is the negative entry. */
interface CachedEntity {
  info: EntityInfo | null;
}

const TENANT_ID = /^\d{1,15}$/;

/**
 * Entity info resolution (spec §4.3 read rules 1-2, D20, D21, D26): the system-wide registry row
 * merged with the caller's tenant row, validated, cached per tenant and code.
 */
@Injectable()
export class RegistryService {
  private readonly logger = new Logger(RegistryService.name);
  /** D26: one warning per entity code per process. */
  private readonly warnedUnsupported = new Set<string>();
  /** Bumped by every invalidation, so a load that read older rows does not refill the cache. */
  private generation = 0;

  constructor(
    private readonly repository: RegistryRepository,
    private readonly cache: CacheService,
  ) {}

  /**
   * resolve() without a promise when this process's cache holds the entry: the entity, null when it
   * is known to be unknown or unusable, undefined when only resolve() can tell.
   */
  peek(tenantId: string, code: string): EntityInfo | null | undefined {
    if (!TENANT_ID.test(tenantId) || !isEntityCode(code)) return null;
    const cached = this.cache.peekShared<CachedEntity>(this.cache.keys.config('registry', tenantId, code));
    if (cached && typeof cached === 'object' && 'info' in cached) return cached.info ?? null;
    return undefined;
  }

  /** The entity `code` as tenant `tenantId` sees it; undefined when unknown or unusable. */
  async resolve(tenantId: string, code: string): Promise<EntityInfo | undefined> {
    // Codes come from URLs: one that cannot be a registry code neither reaches the database nor
    // takes a cache entry.
    if (!TENANT_ID.test(tenantId) || !isEntityCode(code)) return undefined;
    const key = this.cache.keys.config('registry', tenantId, code);
    const cached = await this.cache.getShared<CachedEntity>(key);
    if (cached && typeof cached === 'object' && 'info' in cached) return cached.info ?? undefined;

    // Concurrent misses of one entry read the registry once (issue 13 #3).
    return this.cache.singleFlight(key, async () => {
      const generation = this.generation;
      const info = this.build(tenantId, code, await this.repository.findCandidates(tenantId, code));
      if (generation === this.generation) {
        await this.cache.setJson(
          key,
          { info: info ?? null } satisfies CachedEntity,
          info ? CACHE_TTL.registry : REGISTRY_NEGATIVE_TTL_S,
        );
      }
      return info;
    });
  }

  /** Codes of the live, active registry rows the tenant can see (system-wide and its own). */
  async listCodes(tenantId: string): Promise<string[]> {
    return this.repository.listCodes(tenantId);
  }

  /**
   * Drops the cached entries of a code: every tenant's (a system row changed), or one tenant's.
   * Returns the number of keys removed.
   */
  async invalidate(code: string, tenantId?: string): Promise<number> {
    this.generation++;
    if (tenantId !== undefined)
      return this.cache.delete([this.cache.keys.config('registry', tenantId, code)]);
    return this.cache.deletePattern(this.allTenantsPattern(code));
  }

  /** Drops every cached registry entry. */
  async invalidateAll(): Promise<number> {
    this.generation++;
    return this.cache.deletePattern(`${this.cache.keys.prefix}:registry:*`);
  }

  fieldByName(info: EntityInfo, name: string): FieldDef | undefined {
    return fieldByName(info, name);
  }

  columnOf(info: EntityInfo, name: string): string | undefined {
    return columnOf(info, name);
  }

  private build(tenantId: string, code: string, rows: RegistryRow[]): EntityInfo | undefined {
    const system = rows.filter((r) => r.obj_tenant_id === null);
    const own = rows.filter((r) => r.obj_tenant_id !== null);
    if (system.length > 1 || own.length > 1) {
      this.logger.warn(
        { entityCode: code, tenantId, ids: rows.map((r) => r.obj_id) },
        'Several live registry rows of one level; the lowest obj_id of each is used',
      );
    }
    if (system.length === 0 && own.length === 0) return undefined;
    let info: EntityInfo;
    try {
      info = buildEntityInfo(system[0], own[0]);
    } catch (err) {
      if (!(err instanceof RegistryConfigError)) throw err;
      this.logger.error(
        { entityCode: code, tenantId, registryIds: rows.map((r) => r.obj_id), err: errorMessage(err) },
        'Invalid registry configuration; the entity is treated as not found',
      );
      return undefined;
    }
    if (!info.supported && !this.warnedUnsupported.has(code)) {
      this.warnedUnsupported.add(code);
      this.logger.warn(
        { entityCode: code, dbType: info.dbType },
        'Unsupported obj_db_type: default configuration used, data operations answer 501 (D26)',
      );
    }
    return info;
  }

  /** `{prefix}:registry:*:{code}`, the code escaped exactly as the key builder escapes it. */
  private allTenantsPattern(code: string): string {
    const head = `${this.cache.keys.prefix}:registry:0:`;
    const escapedCode = this.cache.keys.config('registry', '0', code).slice(head.length);
    return `${this.cache.keys.prefix}:registry:*:${escapedCode}`;
  }
}
