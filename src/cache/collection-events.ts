import { errorMessage } from '../common/errors/error-message';
import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type Redis from 'ioredis';
import { CacheService } from './cache.service';
import type { CacheStore } from './cache-store';
import { RedisCacheStore } from './redis-cache.store';

export const COLLECTION_EVENT_TYPES = ['created', 'updated', 'deleted'] as const;

/** D37: published after every committed entity mutation (spec §4.5, §6), one per record. */
export interface CollectionEvent {
  type: (typeof COLLECTION_EVENT_TYPES)[number];
  entityCode: string;
  tenantId: string;
  id: number;
  /** ISO 8601. */
  at: string;
}

/** `own`: this instance published the event (Redis delivers a publisher's events to itself too). */
export interface CollectionEventSource {
  own: boolean;
}

export type CollectionEventHandler = (
  event: CollectionEvent,
  source: CollectionEventSource,
) => void | Promise<void>;

/** On the channel: the event plus the publishing instance, so that it can skip work it has done. */
interface CollectionMessage {
  event: CollectionEvent;
  origin?: string;
}

const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

export function isCollectionEvent(value: unknown): value is CollectionEvent {
  if (!value || typeof value !== 'object') return false;
  const v = value as Record<string, unknown>;
  return (
    COLLECTION_EVENT_TYPES.includes(v.type as CollectionEvent['type']) &&
    typeof v.entityCode === 'string' &&
    v.entityCode !== '' &&
    typeof v.tenantId === 'string' &&
    v.tenantId !== '' &&
    Number.isSafeInteger(v.id) &&
    typeof v.at === 'string' &&
    ISO_8601.test(v.at) &&
    Number.isFinite(Date.parse(v.at))
  );
}

/** Only the five fields of D37 (plus the origin) go on the wire, whatever else the caller's object has. */
export function encodeCollectionMessage(event: CollectionEvent, origin: string): string {
  const { type, entityCode, tenantId, id, at } = event;
  return JSON.stringify({ type, entityCode, tenantId, id, at, origin });
}

/** undefined for anything that is not a collection event (another publisher, a bad version). */
export function decodeCollectionMessage(raw: string): CollectionMessage | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return undefined;
  }
  if (!isCollectionEvent(parsed)) return undefined;
  const { type, entityCode, tenantId, id, at } = parsed;
  const origin = (parsed as { origin?: unknown }).origin;
  return {
    event: Object.freeze({ type, entityCode, tenantId, id, at }),
    origin: typeof origin === 'string' ? origin : undefined,
  };
}

/**
 * The embedded default's channel: every service on one in-process store hears every message
 * published through that store, as every instance on one Redis does.
 */
const localChannels = new WeakMap<CacheStore, Set<(raw: string) => void>>();

/**
 * The collection event of D37 on `{prefix}:events:collection`: Redis PUBLISH/SUBSCRIBE when the
 * cache is Redis (a connection of its own for SUBSCRIBE, so every instance, this one included,
 * hears every event), in-process delivery for the memory store. Publishing never fails the caller:
 * the mutation has committed by then, so a failure is a warning. Received messages that are not
 * collection events are ignored with a warning; a failing handler is logged and the others run.
 *
 * Handlers registered with `subscribe` hear the raw events (the entity cache invalidator does).
 * Reload hooks registered with `onCollectionEvent` (the profile catalog, spec §4.5) are run by the
 * invalidator once it has dropped the event's keys.
 */
@Injectable()
export class CollectionEventsService implements OnApplicationShutdown {
  private readonly logger = new Logger(CollectionEventsService.name);
  /** Tells this instance's own events from the others'. */
  readonly instanceId = randomUUID();
  private readonly handlers = new Set<CollectionEventHandler>();
  private readonly reloadHooks = new Set<CollectionEventHandler>();
  private readonly channel: string;
  private readonly onMessage = (raw: string): void => this.receive(raw);
  private subscriber?: Redis;
  private subscribed = false;
  private closed = false;
  /** Publishes failed since the last one that worked (the first is logged). */
  private publishFailures = 0;

  constructor(private readonly cache: CacheService) {
    this.channel = cache.keys.collectionEvents();
  }

  /** True once messages published from now on reach this instance's handlers. */
  get listening(): boolean {
    if (this.closed || this.handlers.size === 0) return false;
    return this.cache.store instanceof RedisCacheStore ? this.subscribed : true;
  }

  /** Registers a handler of every event (own ones included); returns its unsubscribe. */
  subscribe(handler: CollectionEventHandler): () => void {
    this.handlers.add(handler);
    this.listen();
    return () => {
      this.handlers.delete(handler);
    };
  }

  /** Registers a reload hook (spec §4.5: the affected catalog reloads); returns its removal. */
  onCollectionEvent(hook: CollectionEventHandler): () => void {
    this.reloadHooks.add(hook);
    return () => {
      this.reloadHooks.delete(hook);
    };
  }

  /** Runs every reload hook on an event, one after the other; a failing hook is logged. */
  async runReloadHooks(event: CollectionEvent, source: CollectionEventSource): Promise<void> {
    for (const hook of [...this.reloadHooks]) await this.call(hook, event, source, 'Collection reload hook');
  }

  async publish(event: CollectionEvent): Promise<void> {
    await this.publishAll([event]);
  }

  /** Many events in one round trip (a cascade delete); resolves once Redis has taken them. */
  async publishAll(events: readonly CollectionEvent[]): Promise<void> {
    const valid = events.filter((e) => isCollectionEvent(e));
    if (valid.length < events.length)
      this.logger.warn({ dropped: events.length - valid.length }, 'Invalid collection events not published');
    if (valid.length === 0 || this.closed) return;
    const messages = valid.map((e) => encodeCollectionMessage(e, this.instanceId));
    const store = this.cache.store;
    if (!(store instanceof RedisCacheStore)) {
      const listeners = [...(localChannels.get(store) ?? [])];
      // Asynchronous like Redis: the publisher never runs (or catches) a handler itself.
      setImmediate(() => {
        for (const raw of messages) for (const listener of listeners) listener(raw);
      });
      return;
    }
    try {
      const pipeline = store.client.pipeline();
      for (const raw of messages) pipeline.publish(this.channel, raw);
      const results = (await pipeline.exec()) ?? [];
      const failed = results.find(([err]) => err);
      if (failed || results.length < messages.length) throw failed?.[0] ?? new Error('PUBLISH not answered');
      if (this.publishFailures > 0) {
        this.logger.log(
          { failed: this.publishFailures },
          `Collection events publish again; ${this.publishFailures} publish${this.publishFailures === 1 ? '' : 'es'} failed during the outage`,
        );
        this.publishFailures = 0;
      }
    } catch (err) {
      // One warning per outage, not per write (issue 13 #5); the count is logged when it ends.
      if (this.publishFailures++ === 0)
        this.logger.warn(
          { channel: this.channel, events: messages.length, err: errorMessage(err) },
          'Collection event publish failed; other instances keep their caches until the TTLs run out (further failures are counted, not logged, until a publish succeeds)',
        );
    }
  }

  async onApplicationShutdown(): Promise<void> {
    this.closed = true;
    this.handlers.clear();
    this.reloadHooks.clear();
    localChannels.get(this.cache.store)?.delete(this.onMessage);
    this.subscribed = false;
    this.subscriber?.disconnect(false);
    this.subscriber = undefined;
  }

  /** Starts hearing the channel on the first subscription; never waits for Redis. */
  private listen(): void {
    if (this.closed) return;
    const store = this.cache.store;
    if (!(store instanceof RedisCacheStore)) {
      const listeners = localChannels.get(store) ?? new Set<(raw: string) => void>();
      localChannels.set(store, listeners);
      listeners.add(this.onMessage);
      return;
    }
    if (this.subscriber) return;
    // SUBSCRIBE takes a connection over, hence a duplicate. It inherits lazyConnect and the
    // background reconnects; the subscription is renewed on every (re)connect. The name shows the
    // connection in CLIENT LIST.
    const sub = store.client.duplicate({
      autoResubscribe: false,
      connectionName: `${this.channel}:${this.instanceId}`,
    });
    this.subscriber = sub;
    sub.on('error', () => undefined);
    sub.on('close', () => {
      this.subscribed = false;
    });
    sub.on('ready', () => {
      sub.subscribe(this.channel).then(
        () => {
          this.subscribed = !this.closed;
        },
        (err: unknown) => {
          // A SUBSCRIBE cut short by shutdown is no news; otherwise the next reconnect retries.
          if (!this.closed)
            this.logger.warn(
              { channel: this.channel, err: errorMessage(err) },
              'Collection SUBSCRIBE failed',
            );
        },
      );
    });
    sub.on('message', (channel: string, raw: string) => {
      if (channel === this.channel) this.receive(raw);
    });
    sub.connect().catch(() => undefined);
  }

  private receive(raw: string): void {
    if (this.closed) return;
    const message = decodeCollectionMessage(raw);
    if (!message) {
      this.logger.warn(
        { channel: this.channel, message: raw.slice(0, 200) },
        'Malformed collection event ignored',
      );
      return;
    }
    const source = { own: message.origin === this.instanceId };
    for (const handler of [...this.handlers])
      void this.call(handler, message.event, source, 'Collection event handler');
  }

  private async call(
    handler: CollectionEventHandler,
    event: CollectionEvent,
    source: CollectionEventSource,
    what: string,
  ): Promise<void> {
    try {
      await handler(event, source);
    } catch (err) {
      this.logger.warn({ event, err: errorMessage(err) }, `${what} failed`);
    }
  }
}
