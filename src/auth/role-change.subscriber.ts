import { Injectable, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { CacheService } from '../cache/cache.service';
import { CollectionEvent, CollectionEventsService } from '../cache/collection-events';

/** The entity whose writes change what a role grants (D9). */
export const ROLES_ENTITY_CODE = 'roles';

/**
 * Makes a role's change reach the tokens already issued: JwtAuthGuard enforces the permissions of
 * the user state it caches (CacheKeys.userState, CACHE_TTL.userState seconds), so on every `roles`
 * collection event (D37) the user-state entries of the event's tenant are dropped, and the next
 * request of each of its users reads the role again. A role's users are not known without a
 * query, and a role write is rare, so the whole tenant's entries go (one pattern delete).
 *
 * It hears every event, this instance's own included: the entity write path drops the user-state
 * entries of `users` writes itself (EntityCacheInvalidator), not those of `roles` writes. A cache
 * failure is a warning of CacheService; the entries then expire with their TTL.
 */
@Injectable()
export class RoleChangeSubscriber implements OnModuleInit, OnModuleDestroy {
  private unsubscribe?: () => void;

  constructor(
    private readonly cache: CacheService,
    private readonly events: CollectionEventsService,
  ) {}

  onModuleInit(): void {
    this.unsubscribe = this.events.subscribe((event) => this.handle(event));
  }

  onModuleDestroy(): void {
    this.unsubscribe?.();
  }

  /** Drops the tenant's user-state entries for a `roles` event; other events are not its business. */
  async handle(event: Pick<CollectionEvent, 'entityCode' | 'tenantId'>): Promise<void> {
    if (event.entityCode !== ROLES_ENTITY_CODE) return;
    await this.cache.deletePattern(this.cache.keys.userStateAll(event.tenantId));
  }
}
