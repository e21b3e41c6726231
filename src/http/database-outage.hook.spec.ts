import { AsyncLocalStorage } from 'node:async_hooks';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { DatabaseOutage, reachabilityProbe } from './database-outage.hook';

function recorder() {
  const log = jest.fn();
  return { log, logger: { log } };
}

describe('DatabaseOutage', () => {
  it('should count every failed request and report only the first of an outage', () => {
    const { logger } = recorder();
    const outage = new DatabaseOutage(logger, async () => undefined, 60_000);
    try {
      expect(outage.failed()).toBe(true);
      expect(outage.failed()).toBe(false);
      expect(outage.failed()).toBe(false);
      expect(outage.isDown).toBe(true);
      expect(outage.failedRequests).toBe(3);
    } finally {
      outage.stop();
    }
  });

  it('should end the outage with one info line once a quiet interval passed and the probe succeeds', async () => {
    const { log, logger } = recorder();
    const outage = new DatabaseOutage(logger, async () => undefined, 60_000);
    outage.failed(1_000);
    outage.failed();
    await outage.check(); // failures since the last check: still down, no probe
    expect(outage.isDown).toBe(true);
    expect(log).not.toHaveBeenCalled();
    await outage.check(); // a quiet interval: the probe answers
    expect(outage.isDown).toBe(false);
    expect(log).toHaveBeenCalledTimes(1);
    expect(log).toHaveBeenCalledWith(
      { event: 'database.recovered', category: 'database', failedRequests: 2, downMs: expect.any(Number) },
      'database reachable again after 2 failed requests',
    );
    // A new outage is a new first failure.
    expect(outage.failed()).toBe(true);
    outage.stop();
  });

  it('should stay down while the probe fails, and while requests keep failing', async () => {
    const { log, logger } = recorder();
    let reachable = false;
    const outage = new DatabaseOutage(
      logger,
      async () => {
        if (!reachable) throw new Error('ECONNREFUSED');
      },
      60_000,
    );
    outage.failed();
    await outage.check();
    await outage.check();
    await outage.check();
    expect(outage.isDown).toBe(true);
    reachable = true;
    outage.failed(); // a request failed meanwhile
    await outage.check();
    expect(outage.isDown).toBe(true);
    await outage.check();
    expect(outage.isDown).toBe(false);
    expect(log).toHaveBeenCalledWith(
      expect.objectContaining({ failedRequests: 2 }),
      'database reachable again after 2 failed requests',
    );
  });

  it('should not declare recovery when a request fails while the probe runs', async () => {
    const { log, logger } = recorder();
    let release!: () => void;
    const outage = new DatabaseOutage(logger, () => new Promise<void>((r) => (release = r)), 60_000);
    outage.failed();
    await outage.check(); // the failure's own interval
    const checking = outage.check(); // the probe, pending
    outage.failed();
    release();
    await checking;
    expect(outage.isDown).toBe(true);
    expect(log).not.toHaveBeenCalled();
    outage.stop();
  });

  it('should check on its own every interval, outside the async context of the failed request', async () => {
    const lines: Array<{ store: string | undefined; args: unknown[] }> = [];
    const storage = new AsyncLocalStorage<string>();
    let probedIn: string | undefined = 'not probed';
    const outage = storage.run(
      'construction',
      () =>
        new DatabaseOutage(
          { log: (...args: unknown[]) => lines.push({ store: storage.getStore(), args }) },
          async () => {
            probedIn = storage.getStore();
          },
          20,
        ),
    );
    storage.run('request-1', () => outage.failed());
    await new Promise((r) => setTimeout(r, 200));
    expect(outage.isDown).toBe(false);
    expect(probedIn).toBe('construction');
    expect(lines).toEqual([
      {
        store: 'construction',
        args: [
          expect.objectContaining({ failedRequests: 1 }),
          'database reachable again after 1 failed request',
        ],
      },
    ]);
  });

  it('should recover without a probe after a quiet interval (no database to ask)', async () => {
    const { log, logger } = recorder();
    const outage = new DatabaseOutage(logger, undefined, 60_000);
    outage.failed();
    await outage.check();
    await outage.check();
    expect(outage.isDown).toBe(false);
    expect(log).toHaveBeenCalledTimes(1);
  });
});

describe('reachabilityProbe', () => {
  it('should fail before the data source is connected', async () => {
    const ds = new DataSource({ type: 'better-sqlite3', database: ':memory:' });
    await expect(reachabilityProbe(ds)()).rejects.toThrow(/not connected/);
  });

  it('should fail on SQLite while another connection holds the write lock, and pass once it is released', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'outage-probe-'));
    const file = join(dir, 'db.sqlite');
    const ds = new DataSource({
      type: 'better-sqlite3',
      database: file,
      prepareDatabase: (db: { pragma(sql: string): unknown }) => {
        db.pragma('journal_mode = WAL');
        db.pragma('busy_timeout = 5000');
      },
    });
    await ds.initialize();
    const other = new DataSource({ type: 'better-sqlite3', database: file });
    await other.initialize();
    const holder = other.createQueryRunner();
    try {
      await ds.query('CREATE TABLE t (n integer)');
      const probe = reachabilityProbe(ds);
      await expect(probe()).resolves.toBeUndefined();
      await holder.query('BEGIN IMMEDIATE');
      const started = Date.now();
      await expect(probe()).rejects.toMatchObject({ code: expect.stringMatching(/^SQLITE_BUSY/) });
      expect(Date.now() - started).toBeLessThan(1_000); // no busy wait: the probe never blocks the process
      await holder.query('ROLLBACK');
      await expect(probe()).resolves.toBeUndefined();
      // The busy timeout of the app's connection is as before, and no transaction is left open.
      expect(await ds.query('PRAGMA busy_timeout')).toEqual([{ timeout: 5000 }]);
      const db = (ds.driver as unknown as { databaseConnection: { inTransaction: boolean } })
        .databaseConnection;
      expect(db.inTransaction).toBe(false);
    } finally {
      await holder.release();
      await other.destroy();
      await ds.destroy();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('should give no verdict on SQLite while a transaction of the service is open', async () => {
    const ds = new DataSource({ type: 'better-sqlite3', database: ':memory:' });
    await ds.initialize();
    const qr = ds.createQueryRunner();
    try {
      await qr.startTransaction();
      await expect(reachabilityProbe(ds)()).rejects.toThrow(/transaction/);
      await qr.rollbackTransaction();
      await expect(reachabilityProbe(ds)()).resolves.toBeUndefined();
    } finally {
      await qr.release();
      await ds.destroy();
    }
  });

  it('should run SELECT 1 on the server dialects', async () => {
    const query = jest.fn().mockResolvedValue([{ '?column?': 1 }]);
    const ds = { isInitialized: true, options: { type: 'postgres' }, query } as unknown as DataSource;
    await reachabilityProbe(ds)();
    expect(query).toHaveBeenCalledWith('SELECT 1');
  });
});
