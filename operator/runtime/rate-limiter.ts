/**
 * Rate limiters for the workqueue, after client-go's: a per-item exponential backoff so one
 * broken object backs off alone, combined with a token bucket per namespace (flow.ts) so a
 * mass failure backs off as a whole without delaying the other namespaces' retries.
 */
import { realClock, type Clock } from './clock';
import { PerFlowTokenBucketRateLimiter } from './flow';

/** Decides how long an item waits before its next retry. */
export interface RateLimiter {
  /** Delay in ms before `key` may be processed again; counts as one more failure. */
  when(key: string): number;
  /** Clears the failure history of `key` (after a success). */
  forget(key: string): void;
  /** Failures recorded for `key` since the last `forget`. */
  numRequeues(key: string): number;
}

/** Per-item exponential backoff: base * 2^failures, capped. */
export class ItemExponentialRateLimiter implements RateLimiter {
  private readonly failures = new Map<string, number>();

  /**
   * @param baseDelayMs first delay. @default 5
   * @param maxDelayMs ceiling for any delay. @default 1_000_000 (1000 s, as controller-runtime)
   */
  constructor(
    private readonly baseDelayMs = 5,
    private readonly maxDelayMs = 1_000_000,
  ) {
    if (!(baseDelayMs > 0) || !(maxDelayMs >= baseDelayMs)) {
      throw new RangeError(`need 0 < baseDelayMs <= maxDelayMs, got ${baseDelayMs} and ${maxDelayMs}`);
    }
  }

  when(key: string): number {
    const n = this.failures.get(key) ?? 0;
    this.failures.set(key, n + 1);
    // 2 ** n overflows to Infinity past ~1023, which the min() below absorbs.
    return Math.min(this.baseDelayMs * 2 ** n, this.maxDelayMs);
  }

  forget(key: string): void {
    this.failures.delete(key);
  }

  numRequeues(key: string): number {
    return this.failures.get(key) ?? 0;
  }
}

/**
 * Overall token bucket: `qps` tokens per second, at most `burst` saved up. Like Go's
 * `rate.Limiter.Reserve`, a request always gets a reservation and the returned delay says
 * when its token will exist, so the limiter never drops work.
 */
export class TokenBucketRateLimiter implements RateLimiter {
  private tokens: number;
  private last: number;

  /**
   * @param qps tokens added per second. @default 10
   * @param burst bucket size. @default 100
   */
  constructor(
    private readonly qps = 10,
    private readonly burst = 100,
    private readonly clock: Clock = realClock,
  ) {
    if (!(qps > 0) || !(burst >= 1)) throw new RangeError(`need qps > 0 and burst >= 1, got ${qps} and ${burst}`);
    this.tokens = burst;
    this.last = clock.now();
  }

  when(_key: string): number {
    const now = this.clock.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) * this.qps) / 1000);
    this.last = now;
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : (-this.tokens * 1000) / this.qps;
  }

  forget(_key: string): void {
    // The bucket is shared by all items; one item's success refunds nothing.
  }

  numRequeues(_key: string): number {
    return 0;
  }
}

/** Waits for the slowest of its limiters, so every limit holds at once. */
export class MaxOfRateLimiter implements RateLimiter {
  private readonly limiters: readonly RateLimiter[];

  constructor(...limiters: RateLimiter[]) {
    if (limiters.length === 0) throw new RangeError('MaxOfRateLimiter needs at least one limiter');
    this.limiters = limiters;
  }

  when(key: string): number {
    // Every limiter must see the failure, so no short-circuit.
    return this.limiters.map((l) => l.when(key)).reduce((a, b) => Math.max(a, b));
  }

  forget(key: string): void {
    for (const l of this.limiters) l.forget(key);
  }

  numRequeues(key: string): number {
    return this.limiters.map((l) => l.numRequeues(key)).reduce((a, b) => Math.max(a, b));
  }
}

/** Options of `defaultControllerRateLimiter`; every field has controller-runtime's default. */
export interface ControllerRateLimiterOptions {
  /** @default 5 */
  readonly baseDelayMs?: number;
  /** @default 1_000_000 */
  readonly maxDelayMs?: number;
  /** @default 10 */
  readonly qps?: number;
  /** @default 100 */
  readonly burst?: number;
  /** @default realClock */
  readonly clock?: Clock;
}

/**
 * Per-item exponential backoff combined (max of) with controller-runtime's token bucket, kept
 * per namespace (flow.ts) so that one namespace's failures cannot delay another's retries.
 */
export function defaultControllerRateLimiter(opts: ControllerRateLimiterOptions = {}): RateLimiter {
  return new MaxOfRateLimiter(
    new ItemExponentialRateLimiter(opts.baseDelayMs ?? 5, opts.maxDelayMs ?? 1_000_000),
    new PerFlowTokenBucketRateLimiter(opts.qps ?? 10, opts.burst ?? 100, opts.clock ?? realClock),
  );
}
