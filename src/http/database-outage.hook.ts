import { AsyncResource } from 'node:async_hooks';
import type { DataSource } from 'typeorm';

/** The event of the one error line an outage writes (its first failed request). */
export const DATABASE_UNAVAILABLE_EVENT = 'database.unavailable';
/** The event of the info line that ends an outage. */
export const DATABASE_RECOVERED_EVENT = 'database.recovered';
/** `Retry-After` of a 503 DATABASE_UNAVAILABLE, seconds. */
export const DATABASE_RETRY_AFTER_S = 5;

/** Resolves when the database answers, rejects when it does not. */
export type ReachabilityProbe = () => Promise<void>;

interface OutageLogger {
  log(message: unknown, ...rest: unknown[]): void;
}

/**
 * The state of a database outage, so that it is logged once and not per request (issue 9 #6).
 * `failed()` counts each request answered 503 DATABASE_UNAVAILABLE and is true for the first one of
 * an outage only (the caller logs that one at error level, with its cause). While the outage lasts
 * a check runs every `intervalMs`: once an interval has passed without a further failure, the probe
 * (a `SELECT 1`, on SQLite a write-lock attempt) runs, and when it succeeds — and no request failed
 * meanwhile — the outage ends with one info line, "database reachable again after N failed requests".
 */
export class DatabaseOutage {
  private down = false;
  private failures = 0;
  private since = 0;
  private failedSinceCheck = false;
  private checking = false;
  private timer?: NodeJS.Timeout;
  private readonly startChecks: () => void;

  constructor(
    private readonly logger: OutageLogger,
    private readonly probe?: ReachabilityProbe,
    private readonly intervalMs = 1000,
  ) {
    // Bound to the context of construction, not to the request that starts the outage: the checks
    // and the recovery line belong to no request (no requestId of the first failed one on them).
    this.startChecks = AsyncResource.bind(() => {
      this.timer = setInterval(() => void this.check(), this.intervalMs);
      this.timer.unref();
    });
  }

  get isDown(): boolean {
    return this.down;
  }

  /** Failed requests of the current outage so far (0 when there is none). */
  get failedRequests(): number {
    return this.failures;
  }

  /** Counts a request that failed on a connection-level error; true when it starts an outage. */
  failed(now = Date.now()): boolean {
    this.failures++;
    this.failedSinceCheck = true;
    if (this.down) return false;
    this.down = true;
    this.since = now;
    this.startChecks();
    return true;
  }

  /** One check (the interval's callback; public for tests). */
  async check(): Promise<void> {
    if (!this.down || this.checking) return;
    if (this.failedSinceCheck) {
      // Still failing: wait for an interval without failures before asking the database.
      this.failedSinceCheck = false;
      return;
    }
    this.checking = true;
    try {
      if (this.probe) await this.probe();
    } catch {
      return; // still down; the next interval asks again
    } finally {
      this.checking = false;
    }
    if (this.failedSinceCheck || !this.down) return;
    this.recovered();
  }

  /** Stops the checks (application shutdown); logs nothing. */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  private recovered(now = Date.now()): void {
    const failedRequests = this.failures;
    const downMs = now - this.since;
    this.stop();
    this.down = false;
    this.failures = 0;
    this.failedSinceCheck = false;
    this.logger.log(
      { event: DATABASE_RECOVERED_EVENT, category: 'database', failedRequests, downMs },
      `database reachable again after ${failedRequests} failed request${failedRequests === 1 ? '' : 's'}`,
    );
  }
}

/** better-sqlite3's connection, as far as the probe uses it. */
interface SqliteHandle {
  inTransaction: boolean;
  pragma(source: string, options?: { simple: boolean }): unknown;
  exec(source: string): unknown;
}

/**
 * Whether the configuration database answers again. Server dialects: `SELECT 1` through the pool
 * (a new connection when the old ones were lost). SQLite: its outages are a write lock held
 * elsewhere beyond the busy timeout (SQLITE_BUSY) or a file that cannot be opened, which a read does
 * not notice; so the probe takes the write lock and gives it back at once (`BEGIN IMMEDIATE;
 * ROLLBACK` with a zero busy timeout, synchronously, so no statement of the app runs in between),
 * and gives no verdict while the app's own connection is inside a transaction.
 */
export function reachabilityProbe(ds: DataSource): ReachabilityProbe {
  return async () => {
    if (!ds.isInitialized) throw new Error('The database is not connected');
    if (ds.options.type !== 'better-sqlite3') {
      await ds.query('SELECT 1');
      return;
    }
    const db = (ds.driver as unknown as { databaseConnection?: SqliteHandle }).databaseConnection;
    if (!db) throw new Error('The database is not connected');
    if (db.inTransaction) throw new Error('A transaction of the service is open; no verdict');
    const timeout = Number(db.pragma('busy_timeout', { simple: true })) || 0;
    db.pragma('busy_timeout = 0');
    try {
      db.exec('BEGIN IMMEDIATE');
      db.exec('ROLLBACK');
    } finally {
      db.pragma(`busy_timeout = ${timeout}`);
    }
  };
}
