/**
 * A token bucket that delays callers instead of failing them, so a burst of reconciles
 * spreads its provider calls out rather than tripping the provider's own throttling.
 *
 * Reservations, as Go's `x/time/rate` makes them: `take` takes its token at once (the count
 * may go below zero) and sleeps for exactly as long as that token needs to refill, so callers
 * are served in arrival order without a chain of pollers, and an aborted caller stops
 * sleeping at once and gives its token back.
 *
 * How long a caller can wait is bounded by how many callers share the bucket, not by how much
 * work is queued: each waiter holds one reservation, so with `n` concurrent callers (the
 * bucket controller's workers plus the drift scan of that account) the longest wait is about
 * `n / qps` seconds per call. ProviderClients keeps one bucket per provider account, so the
 * callers of a noisy account wait behind each other only, and a worker is never held longer
 * than its own calls' share of its own account's rate.
 *
 * A rate bounds how often calls start, not how long they last: an endpoint that answers in 55 s
 * takes a token per call like one that answers in 5 ms, and holds a socket all along. So each
 * account also has an {@link InFlightLimit}, as the API server's Priority and Fairness bounds the
 * seats a flow occupies rather than the requests it sends: a call waits for a free seat of its
 * account before it takes a token. ProviderClients pools sockets in one keep-alive Agent per
 * scheme with `maxSockets` per origin (32); with {@link DEFAULT_MAX_IN_FLIGHT_PER_ACCOUNT} seats,
 * one slow account holds at most a quarter of the sockets of a provider it shares with other
 * tenants, and never a socket to anyone else's endpoint.
 */

/** Options of {@link TokenBucket}. */
export interface TokenBucketOptions {
  /** Tokens added per second. */
  readonly qps: number;
  /** Largest number of tokens held. */
  readonly burst: number;
  /** Injectable clock for tests. @default Date.now */
  readonly now?: () => number;
  /**
   * Waits `ms` (on the same clock as `now`), rejecting with the signal's reason once it aborts.
   * @default a Node timer
   */
  readonly sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/** Token bucket with FIFO waiting. */
export class TokenBucket {
  /** Tokens available; below zero while callers wait on reservations. */
  private tokens: number;
  private last: number;
  private readonly now: () => number;
  private readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  private waiters = 0;

  constructor(private readonly opts: TokenBucketOptions) {
    if (!(opts.qps > 0) || !(opts.burst >= 1)) {
      throw new Error(`TokenBucket: qps must be > 0 and burst >= 1, got qps=${opts.qps} burst=${opts.burst}`);
    }
    this.now = opts.now ?? Date.now;
    this.sleep = opts.sleep ?? timerSleep;
    this.tokens = opts.burst;
    this.last = this.now();
  }

  /** Callers currently waiting for their token. */
  get waiting(): number {
    return this.waiters;
  }

  /** True when the bucket is full and nobody waits: dropping it now loses no state. */
  isIdle(): boolean {
    this.refill();
    return this.waiters === 0 && this.tokens >= this.opts.burst;
  }

  /** Ms to wait before a token is available, taking it if the wait is zero. */
  tryTake(): number {
    this.refill();
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return 0;
    }
    return Math.ceil(((1 - this.tokens) / this.opts.qps) * 1000);
  }

  /**
   * Resolves, with the ms it waited, once a token has been taken; callers are served in
   * arrival order. Rejects with the signal's reason as soon as `signal` aborts, returning
   * the token it had reserved.
   */
  async take(signal?: AbortSignal): Promise<number> {
    signal?.throwIfAborted();
    this.refill();
    this.tokens -= 1;
    if (this.tokens >= 0) return 0;
    const wait = Math.ceil((-this.tokens / this.opts.qps) * 1000);
    this.waiters++;
    try {
      await this.sleep(wait, signal);
      return wait;
    } catch (err) {
      // Later reservations keep their (now slightly pessimistic) times; the token is not lost.
      this.tokens = Math.min(this.opts.burst, this.tokens + 1);
      throw err;
    } finally {
      this.waiters--;
    }
  }

  private refill(): void {
    const t = this.now();
    this.tokens = Math.min(this.opts.burst, this.tokens + ((t - this.last) / 1000) * this.opts.qps);
    this.last = t;
  }
}

/**
 * Default of an account's {@link InFlightLimit}: 8 calls, the bucket controller's default
 * workers, so a lone tenant is never slowed by it, and a quarter of the 32 sockets the agent
 * keeps per origin.
 */
export const DEFAULT_MAX_IN_FLIGHT_PER_ACCOUNT = 8;

/** A caller waiting for a seat of an {@link InFlightLimit}. */
interface SeatWaiter {
  readonly wake: () => void;
}

/**
 * Seats of one account: at most `limit` calls in flight, the others wait in arrival order. A
 * waiting caller whose signal aborts leaves the line at once with the signal's reason; it never
 * held a seat, so it gives none back.
 */
export class InFlightLimit {
  private active = 0;
  private readonly line: SeatWaiter[] = [];

  constructor(readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`InFlightLimit: limit must be a positive integer, got ${limit}`);
  }

  /** Calls holding a seat. */
  get inFlight(): number {
    return this.active;
  }

  /** Callers waiting for a seat. */
  get waiting(): number {
    return this.line.length;
  }

  /**
   * Resolves once the caller holds a seat; it must call {@link release} exactly once after.
   * Rejects with the signal's reason when `signal` aborts first.
   */
  acquire(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason as unknown);
    if (this.active < this.limit && this.line.length === 0) {
      this.active++;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void => {
        const at = this.line.indexOf(waiter);
        if (at >= 0) this.line.splice(at, 1);
        reject(signal?.reason);
      };
      const waiter: SeatWaiter = {
        wake: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      this.line.push(waiter);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** Gives a seat back: the longest waiting caller takes it. */
  release(): void {
    const next = this.line.shift();
    if (next)
      next.wake(); // the seat passes on: `active` stays
    else this.active = Math.max(0, this.active - 1);
  }
}

function timerSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
