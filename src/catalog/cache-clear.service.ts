import { errorMessage } from '../common/errors/error-message';
import { Injectable, Logger } from '@nestjs/common';
import { CacheService } from '../cache/cache.service';
import { isCatalogEntry } from './catalog-entry';
import { ClearScope, clearDecision, namespacesOf } from './cache-clear';

/**
 * `POST /api/v1/admin/cache/clear` (D38): removes the keys of a scope, of one tenant or of all,
 * never the security namespaces (cache-clear.ts). Cache failures answer `cleared: 0` with a warning
 * (spec §4.3 rule 9: a cache failure is never an HTTP error).
 */
@Injectable()
export class CacheClearService {
  private readonly logger = new Logger('CacheClear');

  constructor(private readonly cache: CacheService) {}

  /** The number of keys removed; `tenantId` undefined = every tenant's keys. */
  async clear(scope: ClearScope, tenantId: string | undefined): Promise<number> {
    const prefix = this.cache.keys.prefix;
    let candidates: string[];
    try {
      candidates = await this.candidates(scope);
    } catch (err) {
      this.logger.warn({ scope, tenantId, err: errorMessage(err) }, 'Cache clear: keys could not be listed');
      return 0;
    }
    const remove: string[] = [];
    const catalog: string[] = [];
    for (const key of candidates) {
      const decision = clearDecision(key, prefix, scope, tenantId);
      if (decision === 'catalog') catalog.push(key);
      else if (decision) remove.push(key);
    }
    if (catalog.length > 0) {
      // Start-up catalog keys carry no tenant; the entry says whose profile it is.
      const entries = await this.cache.getManyJson<unknown>(catalog);
      catalog.forEach((key, i) => {
        const entry = entries[i];
        if (isCatalogEntry(entry) && entry.tenantId === tenantId) remove.push(key);
      });
    }
    const cleared = remove.length > 0 ? await this.cache.delete(remove) : 0;
    this.logger.log({ event: 'cache_cleared', scope, tenantId: tenantId ?? 'all', cleared }, 'cache_cleared');
    return cleared;
  }

  /** The keys a scope may remove, listed per namespace (one SCAN of the whole prefix for `all`). */
  private async candidates(scope: ClearScope): Promise<string[]> {
    const { keys } = this.cache;
    if (scope === 'all') return this.cache.store.keys(keys.all());
    const found: string[] = [];
    for (const namespace of namespacesOf(scope))
      found.push(...(await this.cache.store.keys(keys.namespaceAll(namespace))));
    return found;
  }
}
