import { LRUCache } from 'lru-cache';
import { RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';

/** What one take answers: allowed or not, what is left of the window, and until when. */
export interface LeaseVerdict {
  allowed: boolean;
  /** Points left in the shared window, as far as this instance knows (its unused lease included). */
  remaining: number;
  msBeforeNext: number;
}

/** Keys with a lease at once in one process (an LRU: a flood of keys stays bounded). */
const MAX_LEASES = 100_000;

/** The points one instance takes from the shared count at a time: 1 % of the limit, 1 to 20. */
export function leaseSize(points: number): number {
  return Math.max(1, Math.min(20, Math.floor(points / 100)));
}

interface Lease {
  /** Points this instance holds and has not spent. */
  left: number;
  /** The shared window's end (epoch ms): a lease never outlives its window. */
  until: number;
  /** What the shared count had left when the lease was taken. */
  sharedRemaining: number;
  /** A take of the shared count in flight: concurrent requests of the key wait for it. */
  pending?: Promise<void>;
}

/**
 * A shared fixed-window limit (rate-limiter-flexible, on Redis) spent a lease at a time (issue 29:
 * one Redis round trip per request for the limits alone). An instance takes `leaseSize(points)`
 * points of a key's window in one consume and spends them in memory, synchronously; the next
 * consume happens when they are spent or the window ends. The limit stays shared across
 * instances and is never exceeded: a lease counts in Redis when it is taken. What it costs is
 * precision the other way — points an instance leased but did not spend before the window ended
 * were counted, so with n instances a key may be refused up to n × (lease − 1) points early; the
 * lease is 1 % of the limit (at most 20), and 1 — exact, a round trip each — for limits under 200.
 */
export class LeasedLimiter {
  private readonly leases = new LRUCache<string, Lease>({ max: MAX_LEASES });
  private readonly size: number;

  constructor(
    private readonly shared: RateLimiterAbstract,
    private readonly points: number,
    private readonly now: () => number = Date.now,
  ) {
    this.size = leaseSize(points);
  }

  /** Spends one point of `key`: synchronously while this instance holds a lease of it. */
  take(key: string): LeaseVerdict | Promise<LeaseVerdict> {
    const lease = this.leases.get(key);
    const now = this.now();
    if (lease && !lease.pending && lease.until > now) {
      if (lease.left > 0) {
        lease.left--;
        return { allowed: true, remaining: lease.sharedRemaining + lease.left, msBeforeNext: lease.until - now };
      }
      if (lease.sharedRemaining <= 0)
        return { allowed: false, remaining: 0, msBeforeNext: lease.until - now };
    }
    if (lease?.pending) return lease.pending.then(() => this.take(key));
    return this.renew(key);
  }

  /** Gives back a point taken by `take` (the request was refused by another limit). */
  giveBack(key: string): void {
    const lease = this.leases.get(key);
    if (lease && lease.until > this.now()) lease.left++;
  }

  private renew(key: string): Promise<LeaseVerdict> {
    const lease: Lease = { left: 0, until: 0, sharedRemaining: 0 };
    let verdict: LeaseVerdict = { allowed: true, remaining: 0, msBeforeNext: 0 };
    lease.pending = this.shared.consume(key, this.size).then(
      (res) => {
        lease.left = this.size - 1;
        lease.until = this.now() + res.msBeforeNext;
        lease.sharedRemaining = res.remainingPoints;
        verdict = { allowed: true, remaining: res.remainingPoints + lease.left, msBeforeNext: res.msBeforeNext };
      },
      (rejection: unknown) => {
        // A store error that is no refusal lets the request through, as the limiter itself does
        // with its insurance limiter (all but impossible then).
        if (!(rejection instanceof RateLimiterRes)) return;
        // Over the limit with this lease: what was left before it may still be granted.
        const before = rejection.consumedPoints - this.size;
        const grantable = Math.min(this.size, this.points - before);
        lease.until = this.now() + rejection.msBeforeNext;
        lease.sharedRemaining = 0;
        if (grantable > 0) {
          lease.left = grantable - 1;
          verdict = { allowed: true, remaining: lease.left, msBeforeNext: rejection.msBeforeNext };
        } else {
          verdict = { allowed: false, remaining: 0, msBeforeNext: rejection.msBeforeNext };
        }
      },
    );
    this.leases.set(key, lease);
    return lease.pending.then(() => {
      lease.pending = undefined;
      return verdict;
    });
  }
}
