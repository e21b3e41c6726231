import { errorMessage } from '../common/errors/error-message';
import { Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { StartupService } from '../health/startup.service';
import { RegistryService } from '../registry/registry.service';
import { CACHE_TTL } from '../cache/cache-keys';
import { CacheService } from '../cache/cache.service';
import { CollectionEvent, CollectionEventSource, CollectionEventsService } from '../cache/collection-events';
import { CatalogEntry, catalogEntry, CatalogFailure, isCatalogEntry } from './catalog-entry';
import { CATALOG_SOURCE_TABLES, ProfileCatalogRepository } from './profile-catalog.repository';

/**
 * The entity code of the message a reload publishes on the collection channel (D37) so that every
 * other instance reloads too. It is the profiles' table name: to any other subscriber the message
 * reads as what it is, "object profiles changed".
 */
export const CATALOG_RELOAD_ENTITY = CATALOG_SOURCE_TABLES[0];

/** A start-up load that takes longer no longer holds the `cache` flag back (it goes on in the background). */
export const CATALOG_STARTUP_TIMEOUT_MS = 30_000;

/** What a load wrote: the codes whose keys hold their profile now, and what failed. */
export interface CatalogReport {
  count: number;
  keys: string[];
  failed: CatalogFailure[];
  reloadedAt: string;
  /** PRF_CODE → prf_tenant_id (null = system-wide) of every key in `keys`. */
  owners: Record<string, string | null>;
}

/** The part of a report a user may see: the system-wide profiles and `tenantId`'s (undefined = all). */
export function reportFor(report: CatalogReport, tenantId: string | undefined): CatalogReport {
  if (tenantId === undefined) return report;
  const visible = (owner: string | null | undefined): boolean => owner === null || owner === tenantId;
  const keys = report.keys.filter((k) => visible(report.owners[k]));
  const owners = Object.fromEntries(keys.map((k) => [k, report.owners[k]]));
  const failed = report.failed.filter((f) => visible(f.tenantId));
  return { ...report, count: keys.length, keys, failed, owners };
}

/** The catalog as it is in the store (GET /api/cache/catalog). */
export interface CatalogView {
  count: number;
  keys: string[];
}

/**
 * The start-up profile catalog (spec §4.5, §3.3): every live, active profile of every tenant in
 * `{prefix}:profile:{PRF_CODE}` without expiry, loaded as a bootstrap step before the `cache`
 * readiness flag, and reloaded whole:
 *  - by `POST /api/cache/reload`, which then publishes a collection event (entityCode
 *    `app_object_profiles`) so that every other instance reloads as well;
 *  - on every instance, by a collection event of an entity whose registry table is
 *    app_object_profiles or app_object_registries (a write through the entity routes, D37).
 * A reload also drops the profile loader's per-request entries (`{prefix}:prf:*`) and the registry
 * cache, which hold copies of the same rows.
 *
 * Partial outcomes (a row that does not parse, a key that cannot be written) are logged with the
 * codes and reasons and never fail the load; a load that fails as a whole (the database) is logged
 * and leaves the previous catalog in place. Loads of one instance run one at a time; a reload asked
 * for while one runs is run once more after it, so the last load always starts after the last change.
 */
@Injectable()
export class ProfileCatalogService implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('ProfileCatalog');
  /** Registry codes whose events reload the catalog; refreshed by every load. */
  private sourceCodes = new Set<string>();
  private running?: Promise<CatalogReport>;
  private queued?: Promise<CatalogReport>;
  private removeHook?: () => void;
  private stopped = false;

  constructor(
    private readonly cache: CacheService,
    private readonly events: CollectionEventsService,
    private readonly repository: ProfileCatalogRepository,
    private readonly registry: RegistryService,
    private readonly startup: StartupService,
  ) {}

  onModuleInit(): void {
    this.startup.registerBootstrapStep({ name: 'profile-catalog', run: () => this.loadAtStartup() });
    this.removeHook = this.events.onCollectionEvent((event, source) => this.onEvent(event, source));
  }

  onModuleDestroy(): void {
    this.stopped = true;
    this.removeHook?.();
  }

  /** Reloads the whole catalog on this instance (serialised and coalesced, see the class comment). */
  reload(): Promise<CatalogReport> {
    if (!this.running) {
      this.running = this.load().finally(() => {
        this.running = undefined;
      });
      return this.running;
    }
    this.queued ??= this.running
      .catch(() => undefined)
      .then(() => {
        this.queued = undefined;
        return this.reload();
      });
    return this.queued;
  }

  /** `POST /api/cache/reload`: reload here, then tell every other instance to reload. */
  async reloadEverywhere(tenantId: string): Promise<CatalogReport> {
    const report = await this.reload();
    await this.events.publish({
      type: 'updated',
      entityCode: CATALOG_RELOAD_ENTITY,
      tenantId,
      id: 0,
      at: report.reloadedAt,
    });
    return report;
  }

  /**
   * The catalog keys in the store, as codes; `tenantId` limits them to the system-wide profiles
   * and that tenant's. A store that cannot be read answers an empty catalog (logged by CacheService).
   */
  async view(tenantId: string | undefined): Promise<CatalogView> {
    let keys: string[];
    try {
      keys = (await this.cache.store.keys(this.cache.keys.profileCatalogAll())).sort();
    } catch (err) {
      this.logger.warn({ err: errorMessage(err) }, 'Profile catalog keys could not be listed');
      return { count: 0, keys: [] };
    }
    const entries = keys.length > 0 ? await this.cache.getManyJson<unknown>(keys) : [];
    const head = this.cache.keys.profileCatalog('');
    const codes: string[] = [];
    keys.forEach((key, i) => {
      const entry = entries[i];
      if (!isCatalogEntry(entry)) {
        // An entry that cannot be read is shown to system administrators only (its owner is unknown).
        if (tenantId === undefined) codes.push(key.slice(head.length));
        return;
      }
      if (tenantId === undefined || entry.tenantId === null || entry.tenantId === tenantId)
        codes.push(entry.code);
    });
    codes.sort();
    return { count: codes.length, keys: codes };
  }

  /** The catalog entry of a code in the store, if any. */
  async entry(code: string): Promise<CatalogEntry | undefined> {
    const value = await this.cache.getJson<unknown>(this.cache.keys.profileCatalog(code));
    return isCatalogEntry(value) ? value : undefined;
  }

  /** True when events of `entityCode` reload the catalog. */
  isSourceEntity(entityCode: string): boolean {
    return entityCode === CATALOG_RELOAD_ENTITY || this.sourceCodes.has(entityCode);
  }

  private async onEvent(event: CollectionEvent, source: CollectionEventSource): Promise<void> {
    if (this.stopped || !this.isSourceEntity(event.entityCode)) return;
    // The reload route reloaded the publishing instance before it published.
    if (source.own && event.entityCode === CATALOG_RELOAD_ENTITY && event.id === 0) return;
    await this.reload();
  }

  private async loadAtStartup(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), CATALOG_STARTUP_TIMEOUT_MS);
      timer.unref();
    });
    const load = this.reload().then(
      () => 'done' as const,
      (err: unknown) => {
        // Start-up goes on without a catalog (spec §3.3: partial outcomes count as finished); the
        // next reload (route or collection event) builds it.
        this.logger.error({ err: errorMessage(err) }, 'Profile catalog not loaded at start-up');
        return 'failed' as const;
      },
    );
    const outcome = await Promise.race([load, timeout]);
    clearTimeout(timer);
    if (outcome === 'timeout')
      this.logger.warn(
        { timeoutMs: CATALOG_STARTUP_TIMEOUT_MS },
        'Profile catalog still loading; readiness does not wait for it any longer',
      );
  }

  private async load(): Promise<CatalogReport> {
    const started = Date.now();
    const reloadedAt = new Date().toISOString();
    // Copies of the same rows elsewhere in the cache go first, so nothing older outlives the load.
    await this.cache.deletePattern(this.cache.keys.profileRequestAll());
    await this.registry.invalidateAll();

    const rows = await this.repository.activeProfiles();
    await this.refreshSourceCodes();

    const failed: CatalogFailure[] = [];
    const entries: CatalogEntry[] = [];
    for (const row of rows) {
      const built = catalogEntry(row, reloadedAt);
      if ('entry' in built) entries.push(built.entry);
      else failed.push(built.failure);
    }
    const stored = await Promise.all(
      entries.map((e) =>
        this.cache.setJson(this.cache.keys.profileCatalog(e.code), e, CACHE_TTL.profileCatalog),
      ),
    );
    const keys: string[] = [];
    const owners: Record<string, string | null> = {};
    entries.forEach((e, i) => {
      if (stored[i]) {
        keys.push(e.code);
        owners[e.code] = e.tenantId;
      } else
        failed.push({ code: e.code, tenantId: e.tenantId, stage: 'store', reason: 'cache write failed' });
    });
    await this.dropStale(new Set(keys.map((code) => this.cache.keys.profileCatalog(code))));

    keys.sort();
    const report: CatalogReport = { count: keys.length, keys, failed, reloadedAt, owners };
    const ms = Date.now() - started;
    if (failed.length > 0)
      this.logger.warn(
        { loaded: keys.length, failed, ms },
        `Profile catalog loaded partially: ${keys.length} of ${rows.length} profiles; failed: ${failed
          .map((f) => `${f.code} (${f.stage}: ${f.reason})`)
          .join('; ')}`,
      );
    else this.logger.log({ loaded: keys.length, ms }, `Profile catalog loaded: ${keys.length} profiles`);
    return report;
  }

  /** Removes the catalog keys of profiles that are no longer live and active (or failed now). */
  private async dropStale(current: Set<string>): Promise<void> {
    try {
      const existing = await this.cache.store.keys(this.cache.keys.profileCatalogAll());
      const stale = existing.filter((k) => !current.has(k));
      if (stale.length > 0) await this.cache.delete(stale);
    } catch (err) {
      this.logger.warn({ err: errorMessage(err) }, 'Stale profile catalog keys could not be listed');
    }
  }

  private async refreshSourceCodes(): Promise<void> {
    try {
      this.sourceCodes = new Set(await this.repository.catalogEntityCodes());
    } catch (err) {
      this.logger.warn({ err: errorMessage(err) }, 'Registry codes of the profile tables not read; kept');
    }
  }
}
