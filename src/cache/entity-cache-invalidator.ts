import { Injectable, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { CacheService } from './cache.service';
import { CollectionEvent, CollectionEventSource, CollectionEventsService } from './collection-events';

/**
 * Cache invalidation after an entity mutation (spec §4.3 create 6, update 6, delete 7): the entity's
 * list entries of the tenant (`{prefix}:list:{tenantId}:{entityCode}:*`, D27) and, for `users`, the
 * user-state entries the JWT guard keeps, so a deactivated or deleted user is locked out at once.
 * Then the collection event of D37 tells every instance, which drops the same keys and runs the
 * reload hooks (spec §4.5: the affected catalog reloads).
 * Cache failures are logged by CacheService and never fail the (already committed) mutation.
 */
@Injectable()
export class EntityCacheInvalidator implements OnModuleInit, OnModuleDestroy {
  /** List-key drops of received events that have not started yet, by tenant and entity. */
  private readonly pendingListDrops = new Map<string, Promise<void>>();
  private unsubscribe?: () => void;

  constructor(
    private readonly cache: CacheService,
    private readonly events: CollectionEventsService,
  ) {}

  onModuleInit(): void {
    this.unsubscribe = this.events.subscribe((event, source) => this.received(event, source));
  }

  onModuleDestroy(): void {
    this.unsubscribe?.();
  }

  /**
   * One event per record id, even for a cascade of thousands: D37's event names one record, and a
   * subscriber may need each one (the user-state key of every deleted user). They go out in one
   * round trip, and receivers drop the list keys once per burst (dropListsOnce), so the count of
   * events costs little. A mutation without ids publishes nothing: an event needs an id.
   */
  async invalidate(
    tenantId: string,
    entityCode: string,
    recordIds: readonly number[] = [],
    type: CollectionEvent['type'] = 'updated',
  ): Promise<void> {
    await this.dropKeys(tenantId, entityCode, recordIds);
    const at = new Date().toISOString();
    await this.events.publishAll(recordIds.map((id) => ({ type, entityCode, tenantId, id, at })));
  }

  private async dropKeys(tenantId: string, entityCode: string, recordIds: readonly number[]): Promise<void> {
    await this.cache.deletePattern(this.cache.keys.entityListAll(tenantId, entityCode));
    if (entityCode === 'users' && recordIds.length > 0) {
      await this.cache.delete(recordIds.map((id) => this.cache.keys.userState(tenantId, id)));
    }
  }

  private async received(event: CollectionEvent, source: CollectionEventSource): Promise<void> {
    // The publisher dropped these keys before publishing (invalidate) and, in the embedded
    // default, is the only instance; only the other instances' events need the drop here.
    if (!source.own) {
      await this.dropListsOnce(event.tenantId, event.entityCode);
      if (event.entityCode === 'users')
        await this.cache.delete([this.cache.keys.userState(event.tenantId, event.id)]);
    }
    await this.events.runReloadHooks(event, source);
  }

  /**
   * A cascade arrives as a burst of events of one tenant and entity; a pattern delete (SCAN on
   * Redis) per event would be wasteful. Events that arrive before a pending drop has started share
   * it; one that arrives after it started gets a drop of its own, so every event is followed by a
   * drop that began after it arrived.
   */
  private dropListsOnce(tenantId: string, entityCode: string): Promise<void> {
    const key = JSON.stringify([tenantId, entityCode]);
    const pending = this.pendingListDrops.get(key);
    if (pending) return pending;
    const drop = new Promise<void>((resolve) => setImmediate(resolve)).then(async () => {
      this.pendingListDrops.delete(key);
      await this.cache.deletePattern(this.cache.keys.entityListAll(tenantId, entityCode));
    });
    this.pendingListDrops.set(key, drop);
    return drop;
  }
}
