import { Injectable, Logger } from '@nestjs/common';
import { CacheService } from '../cache/cache.service';
import { NotFoundError } from '../common/errors/app-error';
import { ConfigDeliveryRepository } from './config-delivery.repository';
import {
  answerOf,
  assertConfigCode,
  CONFIG_KINDS,
  ConfigAnswer,
  ConfigKind,
  ConfigKindDef,
  isAnswer,
} from './config-kinds';

/** Seconds an unknown code is remembered as unknown (a burst of lookups of it costs one query). */
export const CONFIG_NEGATIVE_TTL_S = 60;

/** What a key holds: the answer, or null for a code the tenant has no usable row of. */
interface CachedConfig {
  answer: ConfigAnswer | null;
}

const TENANT_ID = /^\d{1,15}$/;

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Configuration for SPA clients (D41, D50): pages, navigation and value sets, the tenant's row over
 * the system row, live and active rows only. Each answer is cached per tenant under
 * `{prefix}:{page|navigation|valueset}:{tenantId}:{code}` with the TTLs of spec §8 (5 h, 8 h,
 * 12 h); unknown codes for CONFIG_NEGATIVE_TTL_S. Cache failures fall through to the database
 * (CacheService). The tables are not registered entities, so no entity route writes them: a change
 * made in the database is served once its key expires or is dropped (invalidate, or a cache clear).
 */
@Injectable()
export class ConfigDeliveryService {
  private readonly logger = new Logger('ConfigDelivery');

  constructor(
    private readonly repository: ConfigDeliveryRepository,
    private readonly cache: CacheService,
  ) {}

  /** The configuration `code` of a kind as tenant `tenantId` sees it: 400 for a bad code, 404 for none. */
  async get(tenantId: string, kind: ConfigKind, code: string): Promise<ConfigAnswer> {
    assertConfigCode(code);
    const def = CONFIG_KINDS[kind];
    const answer = await this.find(tenantId, def, code);
    if (!answer) throw new NotFoundError(`${def.label} ${code} not found`);
    return answer;
  }

  /**
   * Drops the cached answers of a code: one tenant's (its row changed) or every tenant's (a system
   * row changed, which every tenant without its own row sees). Returns the number of keys removed.
   */
  async invalidate(kind: ConfigKind, code: string, tenantId?: string): Promise<number> {
    const def = CONFIG_KINDS[kind];
    if (tenantId !== undefined)
      return this.cache.delete([this.cache.keys.config(def.cacheType, tenantId, code)]);
    return this.cache.deletePattern(this.allTenantsPattern(def, code));
  }

  private async find(tenantId: string, def: ConfigKindDef, code: string): Promise<ConfigAnswer | undefined> {
    if (!TENANT_ID.test(tenantId)) return undefined;
    const key = this.cache.keys.config(def.cacheType, tenantId, code);
    const cached = await this.cache.getJson<unknown>(key);
    if (isObject(cached) && cached.answer === null) return undefined;
    if (isObject(cached) && isAnswer(def, code, cached.answer)) return cached.answer;
    // Concurrent misses of one key read the database once (issue 13 #3).
    return this.cache.singleFlight(key, () => this.load(tenantId, def, code, key));
  }

  private async load(
    tenantId: string,
    def: ConfigKindDef,
    code: string,
    key: string,
  ): Promise<ConfigAnswer | undefined> {
    const [row] = await this.repository.findCandidates(def, tenantId, code);
    const answer = row ? answerOf(def, row) : undefined;
    if (row && !answer)
      this.logger.error(
        { kind: def.kind, code, rowId: row.id, tenantId: row.tenantId },
        `${def.bodyColumn} is not a JSON ${def.bodyShape}; the ${def.label.toLowerCase()} is treated as not found`,
      );
    await this.cache.setJson(
      key,
      { answer: answer ?? null } satisfies CachedConfig,
      answer ? def.ttl : CONFIG_NEGATIVE_TTL_S,
    );
    return answer;
  }

  /** `{prefix}:{type}:*:{code}`, the code escaped exactly as the key builder escapes it. */
  private allTenantsPattern(def: ConfigKindDef, code: string): string {
    const head = `${this.cache.keys.prefix}:${def.cacheType}:0:`;
    const escapedCode = this.cache.keys.config(def.cacheType, '0', code).slice(head.length);
    return `${this.cache.keys.prefix}:${def.cacheType}:*:${escapedCode}`;
  }
}
