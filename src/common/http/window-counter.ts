/** What one consume answers. */
export interface WindowVerdict {
  allowed: boolean;
  /** Points left in the window (0 once over). */
  remaining: number;
  /** Until the window ends. */
  msBeforeNext: number;
}

/** Keys counted at once; past it, ended windows are swept, then the oldest dropped. */
export const MAX_WINDOWS = 100_000;

/**
 * A fixed-window counter in process memory, synchronous: `points` per `durationMs` per key, the
 * window starting at the key's first point — rate-limiter-flexible's RateLimiterMemory semantics
 * (over when more than `points` were consumed, msBeforeNext the rest of the window), without a
 * promise and a timer per key. The limits of the embedded default (in-process cache) use it; with
 * Redis the limits are shared through RateLimiterRedis as before (D39).
 */
export class WindowCounter {
  private readonly windows = new Map<string, { count: number; resetAt: number }>();

  constructor(
    private readonly points: number,
    private readonly durationMs: number,
    private readonly now: () => number = Date.now,
    private readonly maxWindows = MAX_WINDOWS,
  ) {}

  get size(): number {
    return this.windows.size;
  }

  consume(key: string): WindowVerdict {
    const now = this.now();
    let window = this.windows.get(key);
    if (!window || window.resetAt <= now) {
      if (!window && this.windows.size >= this.maxWindows) this.makeRoom(now);
      window = { count: 0, resetAt: now + this.durationMs };
      this.windows.set(key, window);
    }
    window.count++;
    return {
      allowed: window.count <= this.points,
      remaining: Math.max(this.points - window.count, 0),
      msBeforeNext: window.resetAt - now,
    };
  }

  /** Ended windows go; if that is not enough, the oldest tenth (a flood of keys stays bounded). */
  private makeRoom(now: number): void {
    for (const [key, w] of this.windows) if (w.resetAt <= now) this.windows.delete(key);
    if (this.windows.size < this.maxWindows) return;
    let drop = Math.ceil(this.maxWindows / 10);
    for (const key of this.windows.keys()) {
      if (drop-- <= 0) break;
      this.windows.delete(key);
    }
  }
}
