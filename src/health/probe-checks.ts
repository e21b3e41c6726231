import { errorMessage } from '../common/errors/error-message';
import { Injectable } from '@nestjs/common';
import { CacheService } from '../cache/cache.service';
import { DatabaseService } from '../database/database.service';
import { ReadinessService } from './readiness.service';

/** How long a check's result is served from memory (issue 9, finding 5). */
export const PROBE_RESULT_TTL_MS = 1000;

/** What a dependency check found; never a rejection. */
export interface CheckOutcome {
  ok: boolean;
  /** The error of a failed check (kept for logs and debugging, not shown by the probes). */
  error?: string;
}

/**
 * One cached, single-flight computation: concurrent callers share the call in flight, and a result
 * younger than `ttlMs` (counted from when it was obtained) is answered from memory — as long as
 * `epoch()` has not changed since the call started (the readiness flags: a state change is seen at
 * once). `compute` must not reject.
 */
export class SingleFlight<T> {
  private last?: { at: number; epoch: number; value: T };
  private inFlight?: { epoch: number; run: Promise<T> };

  constructor(
    private readonly compute: () => Promise<T>,
    private readonly ttlMs: number,
    private readonly epoch: () => number = () => 0,
    private readonly now: () => number = Date.now,
  ) {}

  get(): Promise<T> {
    const epoch = this.epoch();
    const last = this.last;
    if (last && last.epoch === epoch && this.now() - last.at < this.ttlMs) return Promise.resolve(last.value);
    if (this.inFlight?.epoch === epoch) return this.inFlight.run;
    const run = this.compute().then((value) => {
      this.last = { at: this.now(), epoch, value };
      return value;
    });
    const flight = { epoch, run };
    this.inFlight = flight;
    void run.finally(() => {
      if (this.inFlight === flight) this.inFlight = undefined;
    });
    return run;
  }
}

/**
 * The checks behind the probes (/livez, /health, /api/v1/health, /health/db, /health/redis) and
 * the `cache_up` gauge that touch the database or the cache: `SELECT 1` on the configuration
 * database and the cache PING. Each runs at most once per PROBE_RESULT_TTL_MS per instance, with
 * single flight, so a flood of probes costs at most one query and one PING a second — a probe
 * flood once took every database connection. A change of the readiness flags (start-up steps
 * done, shutdown) makes the next probe check again, so /livez agrees with /readyz at once.
 */
@Injectable()
export class ProbeChecks {
  private readonly db: SingleFlight<CheckOutcome>;
  private readonly cacheCheck: SingleFlight<CheckOutcome>;

  constructor(database: DatabaseService, cache: CacheService, readiness: ReadinessService) {
    const epoch = (): number => readiness.epoch;
    this.db = new SingleFlight(() => outcomeOf(database.ping()), PROBE_RESULT_TTL_MS, epoch);
    this.cacheCheck = new SingleFlight(
      () =>
        outcomeOf(
          cache.ping().then((pong) => {
            if (pong !== 'PONG') throw new Error(`PING answered ${pong}`);
          }),
        ),
      PROBE_RESULT_TTL_MS,
      epoch,
    );
  }

  /** `SELECT 1` on the configuration database, at most once a second. */
  database(): Promise<CheckOutcome> {
    return this.db.get();
  }

  /** PING on the cache (Redis or in-process), at most once a second. */
  cache(): Promise<CheckOutcome> {
    return this.cacheCheck.get();
  }
}

function outcomeOf(check: Promise<unknown>): Promise<CheckOutcome> {
  return check.then(
    () => ({ ok: true }),
    (err: unknown) => ({ ok: false, error: errorMessage(err) }),
  );
}
