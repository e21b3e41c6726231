import { Logger } from '@nestjs/common';
import { loadConfig } from '../config/config.schema';
import { CacheService } from './cache.service';
import {
  CollectionEvent,
  CollectionEventsService,
  decodeCollectionMessage,
  encodeCollectionMessage,
} from './collection-events';

const SECRETS = {
  JWT_SECRET: 'unit-jwt-secret-that-is-long-enough-0123456789',
  TENANT_ENCRYPTION_KEY: '7f3a1c9e5b2d4f6a8c0e1b3d5f7a9c2e4b6d8f0a1c3e5b7d9f2a4c6e8b0d1f3a',
};

const event = (id: number, extra: Partial<CollectionEvent> = {}): CollectionEvent => ({
  type: 'created',
  entityCode: 'customers',
  tenantId: '1',
  id,
  at: new Date().toISOString(),
  ...extra,
});

/** Waits for the in-process delivery (setImmediate) to have run. */
const delivered = (): Promise<void> => new Promise((resolve) => setImmediate(() => setImmediate(resolve)));

describe(CollectionEventsService.name, () => {
  let cache: CacheService;
  let events: CollectionEventsService;
  let warn: jest.SpyInstance;

  beforeEach(() => {
    warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    cache = new CacheService(loadConfig({ ...SECRETS, NODE_ENV: 'test', CACHE_KEY_PREFIX: 'unit' }));
    events = new CollectionEventsService(cache);
  });

  afterEach(async () => {
    await events.onApplicationShutdown();
    await cache.onApplicationShutdown();
    warn.mockRestore();
  });

  describe('in-process store', () => {
    it('should deliver a published event to a handler, asynchronously, marked as its own', async () => {
      const got: Array<[CollectionEvent, boolean]> = [];
      events.subscribe((e, source) => {
        got.push([e, source.own]);
      });
      expect(events.listening).toBe(true);
      const e = event(7, { type: 'deleted' });
      await events.publish(e);
      expect(got).toEqual([]);
      await delivered();
      expect(got).toEqual([[e, true]]);
    });

    it('should put only the five fields of D37 in the event', async () => {
      const got: CollectionEvent[] = [];
      events.subscribe((e) => {
        got.push(e);
      });
      await events.publish({ ...event(1), secret: 'x' } as CollectionEvent);
      await delivered();
      expect(Object.keys(got[0]).sort()).toEqual(['at', 'entityCode', 'id', 'tenantId', 'type']);
    });

    it('should keep delivering to other handlers when one throws or rejects', async () => {
      const got: number[] = [];
      events.subscribe(() => {
        throw new Error('sync failure');
      });
      events.subscribe(async () => {
        throw new Error('async failure');
      });
      events.subscribe((e) => {
        got.push(e.id);
      });
      await expect(events.publishAll([event(1), event(2)])).resolves.toBeUndefined();
      await delivered();
      expect(got).toEqual([1, 2]);
      expect(warn.mock.calls.filter(([, msg]) => msg === 'Collection event handler failed')).toHaveLength(4);
    });

    it('should stop delivering to a handler once unsubscribed', async () => {
      const got: number[] = [];
      const unsubscribe = events.subscribe((e) => {
        got.push(e.id);
      });
      await events.publish(event(1));
      await delivered();
      unsubscribe();
      await events.publish(event(2));
      await delivered();
      expect(got).toEqual([1]);
    });

    it('should deliver to every service on the same store, like instances on one Redis', async () => {
      const other = new CollectionEventsService(cache);
      const got: Array<[string, boolean]> = [];
      events.subscribe((_e, source) => {
        got.push(['events', source.own]);
      });
      other.subscribe((_e, source) => {
        got.push(['other', source.own]);
      });
      await events.publish(event(1));
      await delivered();
      expect(got.sort()).toEqual([
        ['events', true],
        ['other', false],
      ]);
      await other.onApplicationShutdown();
    });

    it('should not publish an invalid event, and not throw either', async () => {
      const got: CollectionEvent[] = [];
      events.subscribe((e) => {
        got.push(e);
      });
      await expect(events.publish(event(1.5))).resolves.toBeUndefined();
      await expect(events.publish(event(1, { at: 'yesterday' }))).resolves.toBeUndefined();
      await delivered();
      expect(got).toEqual([]);
      expect(warn).toHaveBeenCalledWith({ dropped: 1 }, 'Invalid collection events not published');
    });

    it('should run reload hooks in order, past a failing one, until removed', async () => {
      const ran: string[] = [];
      const removeA = events.onCollectionEvent(() => {
        ran.push('a');
      });
      events.onCollectionEvent(() => {
        throw new Error('reload failed');
      });
      events.onCollectionEvent(async (e) => {
        ran.push(`c${e.id}`);
      });
      await events.runReloadHooks(event(3), { own: true });
      removeA();
      await events.runReloadHooks(event(4), { own: false });
      expect(ran).toEqual(['a', 'c3', 'c4']);
      expect(warn).toHaveBeenCalledWith(expect.anything(), 'Collection reload hook failed');
    });

    it('should deliver nothing after shutdown', async () => {
      const got: CollectionEvent[] = [];
      events.subscribe((e) => {
        got.push(e);
      });
      await events.onApplicationShutdown();
      expect(events.listening).toBe(false);
      await events.publish(event(1));
      await delivered();
      expect(got).toEqual([]);
    });
  });

  describe('messages', () => {
    it('should round-trip an event with its origin', () => {
      const e = event(42, { type: 'updated', tenantId: '12' });
      expect(decodeCollectionMessage(encodeCollectionMessage(e, 'me'))).toEqual({ event: e, origin: 'me' });
    });

    it.each([
      ['not JSON', '{'],
      ['not an object', '"x"'],
      ['an unknown type', JSON.stringify({ ...event(1), type: 'purged' })],
      ['a missing entity', JSON.stringify({ ...event(1), entityCode: undefined })],
      ['a numeric tenant id', JSON.stringify({ ...event(1), tenantId: 1 })],
      ['a text id', JSON.stringify({ ...event(1), id: '1' })],
      ['a date that is not ISO 8601', JSON.stringify({ ...event(1), at: 'Tue, 01 Jan 2030 00:00:00 GMT' })],
    ])('should refuse %s', (_what, raw) => {
      expect(decodeCollectionMessage(raw)).toBeUndefined();
    });
  });
});
