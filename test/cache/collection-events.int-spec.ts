import { Logger } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { CacheService } from '../../src/cache/cache.service';
import { CollectionEvent, CollectionEventsService } from '../../src/cache/collection-events';
import { RedisCacheStore } from '../../src/cache/redis-cache.store';
import { loadConfig } from '../../src/config/config.schema';
import { waitFor } from '../support/test-app';
import { TEST_SECRETS, testCacheUrl } from '../support/test-database';

type Received = { who: string; event: CollectionEvent; own: boolean };

/** An instance of the service: a cache of its own (own connections) under the given prefix. */
function instance(prefix: string, url: string | undefined = testCacheUrl()) {
  const cache = new CacheService(
    loadConfig({
      ...TEST_SECRETS,
      NODE_ENV: 'test',
      CACHE_KEY_PREFIX: prefix,
      ...(url ? { CACHE_URL: url } : {}),
    }),
  );
  const events = new CollectionEventsService(cache);
  return {
    cache,
    events,
    close: async () => {
      await events.onApplicationShutdown();
      await cache.onApplicationShutdown();
    },
  };
}

const event = (id: number, type: CollectionEvent['type'] = 'updated'): CollectionEvent => ({
  type,
  entityCode: 'customers',
  tenantId: '1',
  id,
  at: new Date().toISOString(),
});

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (!address || typeof address === 'string') throw new Error('no port');
  return address.port;
}

/** D37 over the cache the run targets (TEST_CACHE=redis: the real Redis; else in-process). */
describe(`${CollectionEventsService.name} (${testCacheUrl() ? 'Redis' : 'in-process'})`, () => {
  let warn: jest.SpyInstance;

  beforeEach(() => {
    warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
  });

  afterEach(() => {
    warn.mockRestore();
  });

  const prefix = () => `test-events-${randomBytes(4).toString('hex')}`;

  if (testCacheUrl()) {
    describe('on Redis', () => {
      const shared = prefix();
      let a: ReturnType<typeof instance>;
      let b: ReturnType<typeof instance>;
      const received: Received[] = [];

      beforeAll(async () => {
        a = instance(shared);
        b = instance(shared);
        a.events.subscribe((e, source) => {
          received.push({ who: 'a', event: e, own: source.own });
        });
        b.events.subscribe((e, source) => {
          received.push({ who: 'b', event: e, own: source.own });
        });
        await waitFor(async () => a.events.listening && b.events.listening, 10000, 20);
      });

      beforeEach(() => {
        received.length = 0;
      });

      afterAll(async () => {
        await a?.close();
        await b?.close();
      });

      it('should PUBLISH on {prefix}:events:collection', async () => {
        const store = a.cache.store as RedisCacheStore;
        const channel = `${shared}:events:collection`;
        expect(a.cache.keys.collectionEvents()).toBe(channel);
        const [, count] = (await store.client.pubsub('NUMSUB', channel)) as [string, number];
        expect(Number(count)).toBe(2);
      });

      it('should deliver an event published on one instance to both, the publisher marked as own', async () => {
        const e = event(11, 'created');
        await a.events.publish(e);
        await waitFor(async () => received.length >= 2, 5000, 10);
        expect(received.sort((x, y) => x.who.localeCompare(y.who))).toEqual([
          { who: 'a', event: e, own: true },
          { who: 'b', event: e, own: false },
        ]);
      });

      it('should deliver the events of one publishAll in order, in one round trip', async () => {
        const events = [1, 2, 3, 4, 5].map((id) => event(id, 'deleted'));
        await b.events.publishAll(events);
        await waitFor(async () => received.length >= 10, 5000, 10);
        expect(received.filter((r) => r.who === 'a').map((r) => r.event)).toEqual(events);
        expect(received.filter((r) => r.who === 'b').map((r) => r.event)).toEqual(events);
        expect(received.every((r) => r.own === (r.who === 'b'))).toBe(true);
      });

      it('should ignore malformed messages on the channel with a warning', async () => {
        const client = (a.cache.store as RedisCacheStore).client;
        const channel = a.cache.keys.collectionEvents();
        await client.publish(channel, 'not json');
        await client.publish(channel, JSON.stringify({ ...event(1), type: 'purged' }));
        const valid = event(99);
        await a.events.publish(valid);
        await waitFor(async () => received.length >= 2, 5000, 10);
        expect(received.map((r) => r.event)).toEqual([valid, valid]);
        expect(warn).toHaveBeenCalledWith(expect.anything(), 'Malformed collection event ignored');
      });

      it('should subscribe again after the connection is lost', async () => {
        const client = (a.cache.store as RedisCacheStore).client;
        const name = `${b.cache.keys.collectionEvents()}:${b.events.instanceId}`;
        const list = (await client.call('CLIENT', 'LIST', 'TYPE', 'pubsub')) as string;
        const line = list.split('\n').find((l) => l.includes(` name=${name} `));
        const id = /(?:^|\s)id=(\d+)/.exec(line ?? '')?.[1];
        expect(id).toBeDefined();
        await client.client('KILL', 'ID', id!);
        await waitFor(async () => !b.events.listening, 5000, 5);
        await waitFor(async () => b.events.listening, 10000, 20);
        const e = event(77);
        await a.events.publish(e);
        await waitFor(async () => received.length >= 2, 5000, 10);
        expect(received.map((r) => [r.who, r.event.id]).sort()).toEqual([
          ['a', 77],
          ['b', 77],
        ]);
      });

      it('should not deliver to an instance under another prefix', async () => {
        const other = instance(prefix());
        const heard: CollectionEvent[] = [];
        other.events.subscribe((e) => {
          heard.push(e);
        });
        await waitFor(async () => other.events.listening, 10000, 20);
        await a.events.publish(event(5));
        await waitFor(async () => received.length >= 2, 5000, 10);
        await other.events.publish(event(6));
        await waitFor(async () => heard.length >= 1, 5000, 10);
        expect(heard.map((e) => e.id)).toEqual([6]);
        await other.close();
      });
    });
  } else {
    describe('in-process', () => {
      it('should deliver a published event to the subscribers of the same store, asynchronously', async () => {
        const a = instance(prefix());
        const received: Received[] = [];
        a.events.subscribe((e, source) => {
          received.push({ who: 'a', event: e, own: source.own });
        });
        expect(a.events.listening).toBe(true);
        const e = event(3, 'created');
        await a.events.publish(e);
        await waitFor(async () => received.length >= 1, 5000, 5);
        expect(received).toEqual([{ who: 'a', event: e, own: true }]);
        await a.close();
      });

      it('should not deliver across stores (separate processes share nothing)', async () => {
        const shared = prefix();
        const a = instance(shared);
        const b = instance(shared);
        const heard: string[] = [];
        a.events.subscribe(() => {
          heard.push('a');
        });
        b.events.subscribe(() => {
          heard.push('b');
        });
        await a.events.publish(event(1));
        await waitFor(async () => heard.length >= 1, 5000, 5);
        await new Promise((resolve) => setTimeout(resolve, 50));
        expect(heard).toEqual(['a']);
        await a.close();
        await b.close();
      });
    });
  }

  describe('with Redis down', () => {
    it('should neither block nor throw, and close cleanly', async () => {
      const down = instance(prefix(), `redis://127.0.0.1:${await closedPort()}/0`);
      const started = Date.now();
      down.events.subscribe(() => undefined);
      await expect(down.events.publish(event(1))).resolves.toBeUndefined();
      expect(Date.now() - started).toBeLessThan(3000);
      expect(down.events.listening).toBe(false);
      expect(warn).toHaveBeenCalledWith(
        expect.objectContaining({ events: 1 }),
        expect.stringContaining('Collection event publish failed'),
      );
      await down.close();
    });
  });
});
