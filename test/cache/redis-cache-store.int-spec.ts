import { RedisCacheStore } from '../../src/cache/redis-cache.store';
import { realRedisUrl } from '../support/test-database';

/**
 * RedisCacheStore against the machine's real Redis (on every set-up): the start-up loop can wait for the
 * connection the constructor begins, while commands keep failing fast (spec §4.3 rule 9).
 */
const url = realRedisUrl();
describe('RedisCacheStore connection (real Redis)', () => {
  const stores: RedisCacheStore[] = [];
  const store = (u: string = url) => {
    const s = new RedisCacheStore(u);
    stores.push(s);
    return s;
  };

  /**
   * ioredis' disconnect leaves a 2 s timer behind when the socket is already gone (closed, or
   * waiting to reconnect) or still connecting; close each store while it has a socket instead.
   */
  async function closeStore(s: RedisCacheStore): Promise<void> {
    const client = s.client;
    if (client.status === 'end') return;
    if (client.status === 'reconnecting') await new Promise((r) => client.once('connecting', r));
    else if (client.status !== 'ready') await s.whenReady().catch(() => undefined);
    await s.close();
  }

  afterEach(async () => {
    await Promise.all(stores.splice(0).map(closeStore));
  });

  it('should still fail a command at once while the connection is being made (no offline queue)', async () => {
    const s = store();
    // Had it waited for the connection (a few ms away on this machine), it would have answered PONG.
    await expect(s.ping()).rejects.toThrow(/Stream isn't writeable/);
  });

  it('should wait for the connection it has begun, after which PING answers at once', async () => {
    const s = store();
    await s.whenReady();
    expect(s.client.status).toBe('ready');
    await expect(s.ping()).resolves.toBe('PONG');
    await expect(s.whenReady()).resolves.toBeUndefined(); // already ready: at once
  });

  it('should give the connection error when Redis cannot be reached', async () => {
    const s = store('redis://127.0.0.1:1/0');
    await expect(s.whenReady()).rejects.toThrow(/ECONNREFUSED/);
  });

  it('should give up after the time given', async () => {
    const s = store();
    const started = Date.now();
    await expect(s.whenReady(0)).rejects.toThrow(/not ready within 0 ms/);
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('should refuse at once once closed', async () => {
    const s = store();
    await s.whenReady();
    const ended = new Promise((r) => s.client.once('end', r));
    await s.close();
    await ended;
    await expect(s.whenReady()).rejects.toThrow(/closed/);
  });
});
