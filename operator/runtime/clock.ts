/**
 * Time seam of the runtime. Backoff, delayed adds, timeouts and lease expiry all read time
 * through a `Clock`, so tests can drive hours of backoff without sleeping.
 */

/** Opaque handle of a scheduled callback. */
export type TimerHandle = unknown;

/** Source of monotonic-enough milliseconds plus timers. */
export interface Clock {
  /** Milliseconds since an arbitrary origin; only differences are meaningful. */
  now(): number;
  /** Runs `fn` once after `ms`. */
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

/** The wall clock backed by Node timers. */
export const realClock: Clock = {
  now: () => performance.now(),
  // Timers stay referenced, as plain Node timers are: every owner clears its timers on
  // shutdown, and an awaited sleep must keep the process alive.
  setTimeout: (fn, ms) => setTimeout(fn, Math.max(0, ms)),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/**
 * Resolves after `ms` on `clock`, or rejects with the signal's reason once `signal` aborts.
 * A non-positive delay still yields to the event loop so loops built on it cannot spin.
 */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = (): void => {
      clock.clearTimeout(handle);
      reject(signal?.reason);
    };
    const handle = clock.setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * A manually advanced clock for tests: timers fire only from `advance`, in due order, so a
 * test controls exactly which backoff or timeout has elapsed.
 */
export class FakeClock implements Clock {
  private current: number;
  private seq = 0;
  private readonly timers = new Map<number, { at: number; fn: () => void }>();

  constructor(start = 0) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const id = ++this.seq;
    this.timers.set(id, { at: this.current + Math.max(0, ms), fn });
    return id;
  }

  clearTimeout(handle: TimerHandle): void {
    this.timers.delete(handle as number);
  }

  /** Number of timers not yet fired. */
  pending(): number {
    return this.timers.size;
  }

  /** Moves time forward by `ms`, firing due timers in order (including ones they schedule). */
  advance(ms: number): void {
    const target = this.current + ms;
    for (;;) {
      let nextId: number | undefined;
      let nextAt = Infinity;
      for (const [id, t] of this.timers) {
        if (t.at <= target && t.at < nextAt) {
          nextAt = t.at;
          nextId = id;
        }
      }
      if (nextId === undefined) break;
      const timer = this.timers.get(nextId);
      this.timers.delete(nextId);
      this.current = nextAt;
      timer?.fn();
    }
    this.current = target;
  }
}
