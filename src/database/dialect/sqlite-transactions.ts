import type { DataSource } from 'typeorm';

/**
 * SQLite (the embedded default) has one connection per database file, shared by every request:
 * a read that runs while a write transaction is open on it sees that transaction's uncommitted
 * rows. What such a read answers is only as current as the write; what must never happen is that
 * it is kept (a cached list page) when the write then rolls back — no write follows to drop it,
 * and the rows it shows never existed. A `ReadMark` taken before a read and checked after it tells
 * whether every statement of the read saw committed data only: no transaction was open when it
 * began, none began meanwhile, none is open when it ends. The other dialects read committed data
 * on pooled connections: their marks always pass.
 */
export interface ReadMark {
  /** The connection's transaction count when the read began; undefined when it needs no check. */
  readonly begun?: number;
}

interface Tracked {
  begun: number;
  connection: { inTransaction: boolean };
}

const tracked = new WeakMap<DataSource, Tracked>();

/**
 * Counts the transactions begun on a better-sqlite3 data source (every TypeORM transaction on
 * SQLite runs on the driver's one shared query runner). Other data sources are left as they are.
 */
export function trackSqliteTransactions(ds: DataSource): DataSource {
  if (ds.options.type !== 'better-sqlite3') return ds;
  const driver = ds.driver as unknown as {
    createQueryRunner(mode: string): { startTransaction(...args: unknown[]): Promise<void> };
    databaseConnection: { inTransaction: boolean };
  };
  const create = driver.createQueryRunner.bind(driver);
  const wrapped = new WeakSet<object>();
  driver.createQueryRunner = (mode: string) => {
    const runner = create(mode);
    if (!wrapped.has(runner)) {
      wrapped.add(runner);
      const start = runner.startTransaction.bind(runner);
      runner.startTransaction = (...args: unknown[]) => {
        const state = tracked.get(ds);
        if (state) state.begun += 1;
        return start(...args);
      };
    }
    return runner;
  };
  tracked.set(ds, {
    begun: 0,
    get connection() {
      return driver.databaseConnection;
    },
  });
  return ds;
}

/** A mark to take before a read on `ds` (see ReadMark). */
export function readMark(ds: DataSource): ReadMark {
  const state = tracked.get(ds);
  if (!state) return {};
  // A transaction open now makes the read unclean from the start: -1 never matches.
  return { begun: state.connection?.inTransaction ? -1 : state.begun };
}

/** Whether the read since `mark` saw committed data only (always on a non-SQLite data source). */
export function readCommitted(ds: DataSource, mark: ReadMark): boolean {
  const state = tracked.get(ds);
  if (!state || mark.begun === undefined) return true;
  return mark.begun === state.begun && !state.connection?.inTransaction;
}
