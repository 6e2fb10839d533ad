/**
 * A token bucket that delays callers instead of failing them, so a burst of reconciles
 * spreads its provider calls out rather than tripping the provider's own throttling.
 */

/** Options of {@link TokenBucket}. */
export interface TokenBucketOptions {
  /** Tokens added per second. */
  readonly qps: number;
  /** Largest number of tokens held. */
  readonly burst: number;
  /** Injectable clock for tests. @default Date.now */
  readonly now?: () => number;
}

/** Token bucket with FIFO waiting. */
export class TokenBucket {
  private tokens: number;
  private last: number;
  private readonly now: () => number;
  private tail: Promise<void> = Promise.resolve();

  constructor(private readonly opts: TokenBucketOptions) {
    if (!(opts.qps > 0) || !(opts.burst >= 1)) {
      throw new Error(`TokenBucket: qps must be > 0 and burst >= 1, got qps=${opts.qps} burst=${opts.burst}`);
    }
    this.now = opts.now ?? Date.now;
    this.tokens = opts.burst;
    this.last = this.now();
  }

  /** Ms to wait before a token is available, taking it if the wait is zero. */
  tryTake(): number {
    const t = this.now();
    this.tokens = Math.min(this.opts.burst, this.tokens + ((t - this.last) / 1000) * this.opts.qps);
    this.last = t;
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return 0;
    }
    return Math.ceil(((1 - this.tokens) / this.opts.qps) * 1000);
  }

  /** Resolves when a token has been taken; callers are served in arrival order. */
  take(signal?: AbortSignal): Promise<void> {
    const run = async (): Promise<void> => {
      for (;;) {
        signal?.throwIfAborted();
        const wait = this.tryTake();
        if (wait === 0) return;
        await new Promise<void>((resolve) => setTimeout(resolve, wait));
      }
    };
    const next = this.tail.then(run);
    this.tail = next.catch(() => undefined);
    return next;
  }
}
