/**
 * A rate-limited, delaying work queue of string keys with client-go's guarantees:
 * a key is queued at most once (dedup), a key is never handed to two workers at once, and a
 * key added while it is being processed is processed once more after `done`.
 */
import { realClock, type Clock, type TimerHandle } from './clock';
import { defaultControllerRateLimiter, type RateLimiter } from './rate-limiter';

/** What the queue reports; implemented by `Metrics.workqueue` (metrics.ts). */
export interface WorkQueueMetrics {
  setDepth(depth: number): void;
  incAdds(): void;
  incRetries(): void;
  /** Seconds a key waited in the queue before a worker took it. */
  observeQueueDuration(seconds: number): void;
  /** Seconds a worker held a key (from `get` to `done`). */
  observeWorkDuration(seconds: number): void;
}

/** Lets a metrics backend read in-flight work lazily, at scrape time. */
export interface UnfinishedWorkProbe {
  /** Sum of seconds that in-flight keys have been processing. */
  unfinishedWorkSeconds(): number;
  /** Seconds the longest-running in-flight key has been processing. */
  longestRunningProcessorSeconds(): number;
}

/** Creates the metrics of one named queue. */
export interface WorkQueueMetricsProvider {
  workqueue(name: string, probe: UnfinishedWorkProbe): WorkQueueMetrics;
}

/** Options of a `WorkQueue`. */
export interface WorkQueueOptions {
  /** Metric label; usually the controller name. */
  readonly name: string;
  /** @default defaultControllerRateLimiter({ clock }) */
  readonly rateLimiter?: RateLimiter;
  /** @default realClock */
  readonly clock?: Clock;
  readonly metrics?: WorkQueueMetricsProvider;
}

const noMetrics: WorkQueueMetrics = {
  setDepth: () => undefined,
  incAdds: () => undefined,
  incRetries: () => undefined,
  observeQueueDuration: () => undefined,
  observeWorkDuration: () => undefined,
};

/** The controller's queue: dedup, no concurrent processing of a key, delays and backoff. */
export class WorkQueue implements UnfinishedWorkProbe {
  readonly name: string;
  private readonly clock: Clock;
  private readonly limiter: RateLimiter;
  private readonly metrics: WorkQueueMetrics;

  /** Keys ready for a worker, in FIFO order (a Set keeps insertion order). */
  private readonly queue = new Set<string>();
  /** Keys that need processing: queued ones, plus in-flight ones re-added while processing. */
  private readonly dirty = new Set<string>();
  /** Keys held by a worker, with the time `get` handed them out. */
  private readonly processing = new Map<string, number>();
  /** When each queued key was added, for the queue-duration metric. */
  private readonly addedAt = new Map<string, number>();
  /** Delayed keys: when they become ready and the timer that will add them. */
  private readonly waiting = new Map<string, { readyAt: number; timer: TimerHandle }>();

  private readonly getters: Array<() => void> = [];
  private drainWaiters: Array<() => void> = [];
  private shuttingDown = false;

  constructor(opts: WorkQueueOptions) {
    this.name = opts.name;
    this.clock = opts.clock ?? realClock;
    this.limiter = opts.rateLimiter ?? defaultControllerRateLimiter({ clock: this.clock });
    this.metrics = opts.metrics?.workqueue(opts.name, this) ?? noMetrics;
  }

  /** Marks `key` as needing processing; a no-op when it already does or after shutdown. */
  add(key: string): void {
    if (this.shuttingDown || this.dirty.has(key)) return;
    this.metrics.incAdds();
    this.dirty.add(key);
    this.addedAt.set(key, this.clock.now());
    // An in-flight key goes back in the queue only when its worker calls done().
    if (this.processing.has(key)) return;
    this.enqueue(key);
  }

  /** Adds `key` after `ms`; when the key is already waiting, the earlier time wins. */
  addAfter(key: string, ms: number): void {
    if (this.shuttingDown) return;
    if (!(ms > 0)) {
      this.add(key);
      return;
    }
    const readyAt = this.clock.now() + ms;
    const existing = this.waiting.get(key);
    if (existing) {
      if (existing.readyAt <= readyAt) return;
      this.clock.clearTimeout(existing.timer);
    }
    const timer = this.clock.setTimeout(() => {
      this.waiting.delete(key);
      this.add(key);
    }, ms);
    this.waiting.set(key, { readyAt, timer });
  }

  /** Adds `key` once the rate limiter allows: per-key backoff, bounded by the overall bucket. */
  addRateLimited(key: string): void {
    if (this.shuttingDown) return;
    this.metrics.incRetries();
    this.addAfter(key, this.limiter.when(key));
  }

  /** Resets the backoff of `key`; call after it was processed successfully. */
  forget(key: string): void {
    this.limiter.forget(key);
  }

  /** How many times `key` was rate-limited since its last `forget`. */
  numRequeues(key: string): number {
    return this.limiter.numRequeues(key);
  }

  /**
   * Waits for the next key and marks it in flight; the caller must call `done(key)`.
   * Resolves `undefined` once the queue shuts down: queued keys are dropped then, because
   * whoever runs next relists and enqueues everything anyway.
   */
  async get(): Promise<string | undefined> {
    for (;;) {
      if (this.shuttingDown) return undefined;
      const next = this.queue.values().next();
      if (!next.done) {
        const key = next.value;
        this.queue.delete(key);
        this.dirty.delete(key);
        const now = this.clock.now();
        this.processing.set(key, now);
        const added = this.addedAt.get(key);
        this.addedAt.delete(key);
        this.metrics.setDepth(this.queue.size);
        if (added !== undefined) this.metrics.observeQueueDuration((now - added) / 1000);
        return key;
      }
      await new Promise<void>((resolve) => this.getters.push(resolve));
    }
  }

  /** Ends the processing of `key`; if it was re-added meanwhile it is queued again now. */
  done(key: string): void {
    const started = this.processing.get(key);
    if (started === undefined) return;
    this.processing.delete(key);
    this.metrics.observeWorkDuration((this.clock.now() - started) / 1000);
    if (this.dirty.has(key) && !this.shuttingDown) this.enqueue(key);
    if (this.processing.size === 0) this.releaseDrainWaiters();
  }

  /** Keys ready for a worker (not counting in-flight or delayed ones). */
  len(): number {
    return this.queue.size;
  }

  /** Keys currently held by workers. */
  inFlight(): number {
    return this.processing.size;
  }

  /** True once `shutDown` or `shutDownWithDrain` was called. */
  isShuttingDown(): boolean {
    return this.shuttingDown;
  }

  /** Stops handing out keys at once: waiting `get` calls resolve `undefined`, adds are ignored. */
  shutDown(): void {
    if (this.shuttingDown) return;
    this.shuttingDown = true;
    for (const { timer } of this.waiting.values()) this.clock.clearTimeout(timer);
    this.waiting.clear();
    this.queue.clear();
    this.dirty.clear();
    this.addedAt.clear();
    this.metrics.setDepth(0);
    for (const wake of this.getters.splice(0)) wake();
  }

  /** Shuts down, then resolves once every in-flight key has been marked `done`. */
  async shutDownWithDrain(): Promise<void> {
    this.shutDown();
    if (this.processing.size === 0) return;
    await new Promise<void>((resolve) => this.drainWaiters.push(resolve));
  }

  unfinishedWorkSeconds(): number {
    const now = this.clock.now();
    let total = 0;
    for (const started of this.processing.values()) total += now - started;
    return total / 1000;
  }

  longestRunningProcessorSeconds(): number {
    const now = this.clock.now();
    let longest = 0;
    for (const started of this.processing.values()) longest = Math.max(longest, now - started);
    return longest / 1000;
  }

  private enqueue(key: string): void {
    this.queue.add(key);
    this.metrics.setDepth(this.queue.size);
    this.getters.shift()?.();
  }

  private releaseDrainWaiters(): void {
    const waiters = this.drainWaiters;
    this.drainWaiters = [];
    for (const w of waiters) w();
  }
}
