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
