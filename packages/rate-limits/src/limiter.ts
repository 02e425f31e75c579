/** Milliseconds on a clock that only has to move forward (tests move one by hand). */
export type Clock = () => number;

export interface RateLimiterOptions {
  /** Requests per minute, sustained. */
  perMinute: number;
  /** Requests an idle key may make at once; one minute's worth by default. */
  burst?: number;
  /** Keys remembered at most (memory is O(maxKeys)); see `take` for what happens beyond. */
  maxKeys: number;
  /** Monotonic by default, so a wall-clock step never refills or drains every bucket at once. */
  now?: Clock;
}

export interface RateDecision {
  allowed: boolean;
  /** The bucket's size: what an idle key may make at once. */
  limit: number;
  /** Requests that would still be allowed right now, after this one. */
  remaining: number;
  /** Until the bucket is full again. */
  resetMs: number;
  /** Until the next request is allowed (0 when this one was). */
  retryAfterMs: number;
}

// Rounding slack: intervals like 60000/7 ms are not exact in floating point.
const EPS = 1e-6;

/**
 * Token buckets by string key, as GCRA: one number per key (the time at which its bucket would be full again), so
 * a check is O(1) with no timers. Keys live in a Map in order of last charge; a key whose bucket has refilled holds
 * nothing worth remembering and is dropped. At `maxKeys`, a new key may only take the place of such an idle one;
 * while every remembered key is still refilling, new keys share one overflow bucket of the same size. So a flood of
 * fresh keys (rotated addresses or credentials) neither grows memory nor resets anyone's bucket, and the flood
 * itself is throttled as one caller.
 */
export class RateLimiter {
  readonly perMinute: number;
  readonly limit: number;
  /** Seconds an empty bucket takes to fill: the window of `limit` requests. */
  readonly windowSeconds: number;
  private readonly intervalMs: number;
  private readonly toleranceMs: number;
  private readonly maxKeys: number;
  private readonly now: Clock;
  /** key → the time its bucket is full again ("theoretical arrival time"); insertion order = last charge. */
  private readonly full = new Map<string, number>();
  private overflow = Number.NEGATIVE_INFINITY;

  constructor(o: RateLimiterOptions) {
    if (!(o.perMinute > 0)) throw new Error('perMinute must be positive');
    this.perMinute = o.perMinute;
    this.limit = Math.max(1, Math.floor(o.burst ?? o.perMinute));
    this.intervalMs = 60_000 / o.perMinute;
    this.toleranceMs = this.intervalMs * this.limit;
    this.windowSeconds = Math.ceil(this.toleranceMs / 1000 - EPS);
    this.maxKeys = Math.max(1, o.maxKeys);
    this.now = o.now ?? (() => performance.now());
  }

  /** Charges one request to `key`; a denied request charges nothing. */
  take(key: string): RateDecision {
    const now = this.now();
    this.dropOldestIfIdle(now);
    const known = this.full.get(key);
    const pooled = known === undefined && this.full.size >= this.maxKeys;
    const base = Math.max(pooled ? this.overflow : (known ?? now), now);
    const next = base + this.intervalMs;
    if (next - now > this.toleranceMs + EPS) {
      return { allowed: false, limit: this.limit, remaining: 0, resetMs: base - now, retryAfterMs: next - this.toleranceMs - now };
    }
    if (pooled) {
      this.overflow = next;
    } else {
      // Delete first so the key moves to the back: the front is always the one charged longest ago.
      this.full.delete(key);
      this.full.set(key, next);
    }
    const remaining = Math.floor((this.toleranceMs - (next - now)) / this.intervalMs + EPS);
    return { allowed: true, limit: this.limit, remaining, resetMs: next - now, retryAfterMs: 0 };
  }

  /** Gives back one request that `take(key)` allowed (a reservation that turned out not to be needed). */
  refund(key: string): void {
    const now = this.now();
    const known = this.full.get(key);
    if (known === undefined) {
      // Charged to the overflow bucket (or refilled and dropped since, when this changes nothing that matters).
      this.overflow = Math.max(this.overflow - this.intervalMs, now);
      return;
    }
    const back = known - this.intervalMs;
    if (back <= now + EPS) this.full.delete(key);
    else this.full.set(key, back);
  }

  /** Keys remembered now (at most `maxKeys`). */
  get size(): number {
    return this.full.size;
  }

  /** The front key was charged longest ago, so it is the first to have refilled; one check per call keeps up. */
  private dropOldestIfIdle(now: number): void {
    const oldest = this.full.entries().next();
    if (!oldest.done && oldest.value[1] <= now) this.full.delete(oldest.value[0]);
  }
}
