import { errorMessage } from '../../common/errors/error-message';
import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import type Redis from 'ioredis';
import { CacheService } from '../../cache/cache.service';
import type { CacheStore } from '../../cache/cache-store';
import { RedisCacheStore } from '../../cache/redis-cache.store';

/** The embedded default's channel: every bus on one in-process store hears every wake-up. */
const localListeners = new WeakMap<CacheStore, Set<() => void>>();

/**
 * Wakes idle workflow workers when work is queued (D49, issue 12 #5): a message on
 * `{prefix}:events:workflow` (Redis pub/sub, or in-process for the embedded default). It only
 * shortens the wait: a worker polls anyway, so a lost message delays a step by one poll at most.
 */
@Injectable()
export class WorkflowWakeBus implements OnApplicationShutdown {
  private readonly logger = new Logger('WorkflowWakeBus');
  private readonly listeners = new Set<() => void>();
  private readonly channel: string;
  private readonly onMessage = (): void => {
    for (const listener of [...this.listeners]) listener();
  };
  private subscriber?: Redis;
  private closed = false;

  constructor(private readonly cache: CacheService) {
    this.channel = cache.keys.workflowEvents();
  }

  /** Calls `listener` on every wake-up published by any instance; returns its removal. */
  listen(listener: () => void): () => void {
    this.listeners.add(listener);
    this.subscribe();
    return () => {
      this.listeners.delete(listener);
    };
  }

  /** Tells every instance's worker that work is due now. Never fails the caller. */
  wake(): void {
    if (this.closed) return;
    const store = this.cache.store;
    if (!(store instanceof RedisCacheStore)) {
      const listeners = [...(localListeners.get(store) ?? [])];
      setImmediate(() => listeners.forEach((l) => l()));
      return;
    }
    store.client.publish(this.channel, '1').catch((err: unknown) => {
      this.logger.debug({ err: errorMessage(err) }, 'Workflow wake-up not published; workers poll');
    });
  }

  onApplicationShutdown(): void {
    this.closed = true;
    this.listeners.clear();
    localListeners.get(this.cache.store)?.delete(this.onMessage);
    this.subscriber?.disconnect(false);
    this.subscriber = undefined;
  }

  private subscribe(): void {
    if (this.closed) return;
    const store = this.cache.store;
    if (!(store instanceof RedisCacheStore)) {
      const set = localListeners.get(store) ?? new Set<() => void>();
      localListeners.set(store, set);
      set.add(this.onMessage);
      return;
    }
    if (this.subscriber) return;
    const sub = store.client.duplicate({ autoResubscribe: false, connectionName: this.channel });
    this.subscriber = sub;
    sub.on('error', () => undefined);
    sub.on('ready', () => {
      sub.subscribe(this.channel).catch(() => undefined);
    });
    sub.on('message', (channel: string) => {
      if (channel === this.channel && !this.closed) this.onMessage();
    });
    sub.connect().catch(() => undefined);
  }
}
