/**
 * The client-side QPS/burst limit of `KubeClient`, client-go's `flowcontrol.TokenBucketRateLimiter`
 * for API requests: a bucket of `burst` tokens refilled at `qps` per second; each request takes
 * one, waiting its turn when the bucket is empty. Waiters are served in arrival order, so a
 * burst of writes cannot starve an earlier request.
 *
 * Watches are not limited (a watch is one long request, as in client-go), and the leader
 * election client has a limiter of its own so bulk writes never delay a Lease renewal.
 */
import { realClock, sleep, type Clock } from './clock';

/** Settings of a `RequestThrottle`; `qps <= 0` disables the limit (controller-runtime's -1). */
export interface ThrottleOptions {
  readonly qps: number;
  /** Requests allowed at once after a quiet period. @default max(1, ceil(qps)) */
  readonly burst?: number;
  /** @default realClock */
  readonly clock?: Clock;
}

/**
 * Pure bookkeeping of the bucket: `reserve(now)` books the next slot and says how long the
 * caller must wait for it. Booking ahead (tokens may go negative) is what makes the order FIFO.
 */
export class TokenBucket {
  private tokens: number;
  private last: number;

  constructor(
    readonly qps: number,
    readonly burst: number,
    now: number,
  ) {
    if (!(qps > 0)) throw new Error(`qps must be positive, got ${qps}`);
    if (!(burst >= 1)) throw new Error(`burst must be at least 1, got ${burst}`);
    this.tokens = burst;
    this.last = now;
  }

  /** Takes one token at `now` (ms); returns the wait in ms before the request may go (0 = now). */
  reserve(now: number): number {
    this.refill(now);
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : (-this.tokens * 1000) / this.qps;
  }

  /** Gives a reserved token back (the waiter gave up), so it does not delay later requests. */
  cancel(now: number): void {
    this.refill(now);
    this.tokens = Math.min(this.burst, this.tokens + 1);
  }

  private refill(now: number): void {
    const elapsed = Math.max(0, now - this.last);
    this.last = now;
    this.tokens = Math.min(this.burst, this.tokens + (elapsed * this.qps) / 1000);
  }
}

/** Waits for a token before each request; a no-op when disabled. */
export class RequestThrottle {
  private readonly bucket?: TokenBucket;
  private readonly clock: Clock;

  constructor(opts: ThrottleOptions) {
    this.clock = opts.clock ?? realClock;
    if (opts.qps > 0) this.bucket = new TokenBucket(opts.qps, opts.burst ?? Math.max(1, Math.ceil(opts.qps)), this.clock.now());
  }

  /** True when requests are limited. */
  get enabled(): boolean {
    return this.bucket !== undefined;
  }

  /** Resolves when the request may be sent; rejects with the signal's reason when it aborts first. */
  async wait(signal?: AbortSignal): Promise<void> {
    if (!this.bucket) return;
    signal?.throwIfAborted();
    const ms = this.bucket.reserve(this.clock.now());
    if (ms <= 0) return;
    try {
      await sleep(this.clock, ms, signal);
    } catch (err) {
      this.bucket.cancel(this.clock.now());
      throw err;
    }
  }
}
