/**
 * A rate-limited, delaying priority work queue of string keys, after controller-runtime's
 * priority queue (the default since v0.23) on client-go's guarantees: a key is queued at
 * most once (dedup keeps the higher priority and the earlier ready time), a key is never
 * handed to two workers at once, and a key added while it is being processed is processed
 * once more after `done`.
 *
 * Within a priority, keys are served fairly by flow, as the API server's Priority and
 * Fairness serves its queues: the flow of a key is its namespace (the part before the first
 * '/'), and the non-empty flows take turns, one key per turn, each flow in FIFO order. So a
 * namespace that queues 5,000 keys delays another namespace's one key by at most one hand-out
 * per other waiting flow, not by 5,000. A key without a '/' (a cluster-scoped object) belongs
 * to the flow of the empty namespace: cluster-scoped objects share one turn, as they share one
 * scope. With a single flow (every key in one namespace, or none with a '/') the order is
 * plain FIFO, as before.
 *
 * Higher priorities go first, with one rule against starvation: after `starvationLimit`
 * hand-outs in a row that passed over a waiting lower-priority key, the next hand-out goes to
 * the priority whose longest-waiting key has waited longest, whatever that priority is, and is
 * taken there by the same turn of flows. Low-priority work therefore keeps at least one
 * hand-out in `starvationLimit + 1` however much high-priority work arrives, and one
 * namespace's backlog cannot take the low-priority share of the others either.
 *
 * Cost: add, get, done and a priority raise are amortised O(1) plus the handful of distinct
 * priorities, however many keys and namespaces are queued. Nothing walks the keys or the
 * flows: each priority keeps its keys in FIFOs (one per flow, one in age order) and its
 * non-empty flows in a FIFO of turns, all with O(1) push, head and removal (`KeyFifo`). A get
 * takes the head of the next flow and moves that flow to the back of the turns (or drops it
 * from them once empty); a flow that refills joins at the back.
 */
import { realClock, type Clock, type TimerHandle } from './clock';
import { flowOf } from './flow';
import { defaultControllerRateLimiter, type RateLimiter } from './rate-limiter';

/**
 * Well-known priorities, as in controller-runtime; any integer works and higher is served
 * first.
 */
export const Priority = {
  /** User-visible changes (create, spec or annotation edit, delete), and any add naming none. */
  Normal: 0,
  /** Work nobody is waiting for: the initial list, resyncs, periodic re-checks. */
  Low: -100,
} as const;

/** What the queue reports; implemented by `Metrics.workqueue` (metrics.ts). */
export interface WorkQueueMetrics {
  /** Keys ready for a worker, over all priorities. */
  setDepth(depth: number): void;
  /** Keys ready for a worker at one priority; optional so simple sinks can skip it. */
  setPriorityDepth?(priority: number, depth: number): void;
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
  /**
   * Hand-outs in a row that may pass over a ready lower-priority key before the priority of
   * the longest waiting key is served instead (by turns of its flows); 0 always serves the
   * priority whose oldest key is oldest (plain FIFO when there is one flow). @default 9
   */
  readonly starvationLimit?: number;
}

/** How to add a key; see `WorkQueue.addWithOptions`. */
export interface AddOptions {
  /** Higher is served first. @default Priority.Normal */
  readonly priority?: number;
  /** Becomes ready only after this many ms. @default 0 */
  readonly afterMs?: number;
  /** Also wait as long as the rate limiter says (and count a retry). @default false */
  readonly rateLimited?: boolean;
}

/** A key handed out by `getWithPriority`, with the priority it was queued at. */
export interface QueueItem {
  readonly key: string;
  readonly priority: number;
}

const noMetrics: WorkQueueMetrics = {
  setDepth: () => undefined,
  incAdds: () => undefined,
  incRetries: () => undefined,
  observeQueueDuration: () => undefined,
  observeWorkDuration: () => undefined,
};

/** A key that needs processing. At most one per key: adds merge into it. */
interface Entry {
  priority: number;
  /** Set while the key waits for a delay to pass; cleared when it becomes ready. */
  delay?: { readyAt: number; timer: TimerHandle };
  /** When it became ready, for the queue-duration metric. */
  readySince: number;
  /** Order of entry into its ready level: the starvation rule compares the levels' oldest keys by it. */
  seq: number;
}

/** The controller's queue: priorities, dedup, no concurrent processing of a key, delays and backoff. */
export class WorkQueue implements UnfinishedWorkProbe {
  readonly name: string;
  private readonly clock: Clock;
  private readonly limiter: RateLimiter;
  private readonly metrics: WorkQueueMetrics;
  private readonly starvationLimit: number;

  /** Every key that needs processing: waiting for its delay, ready, or parked while in flight. */
  private readonly entries = new Map<string, Entry>();
  /** Ready keys not in flight, one fair level per priority. */
  private readonly buckets = new Map<number, FairLevel>();
  /** Priorities of the non-empty levels, highest first; a handful, so a sorted array is enough. */
  private priorities: number[] = [];
  /** Number of keys across all buckets. */
  private ready = 0;
  /** Keys held by a worker, with the time `get` handed them out. */
  private readonly processing = new Map<string, number>();
  private seq = 0;
  /** Hand-outs in a row that passed over a ready lower-priority key. */
  private passedOver = 0;

  private readonly getters: Array<() => void> = [];
  private drainWaiters: Array<() => void> = [];
  private shuttingDown = false;

  constructor(opts: WorkQueueOptions) {
    this.name = opts.name;
    this.clock = opts.clock ?? realClock;
    this.limiter = opts.rateLimiter ?? defaultControllerRateLimiter({ clock: this.clock });
    this.metrics = opts.metrics?.workqueue(opts.name, this) ?? noMetrics;
    this.starvationLimit = opts.starvationLimit ?? 9;
    if (!Number.isInteger(this.starvationLimit) || this.starvationLimit < 0) {
      throw new RangeError(`starvationLimit must be a non-negative integer, got ${this.starvationLimit}`);
    }
  }

  /** Marks `key` as needing processing at `Priority.Normal`; see `addWithOptions`. */
  add(key: string): void {
    this.addWithOptions(key, {});
  }

  /** Adds `key` after `ms` at `Priority.Normal`; see `addWithOptions`. */
  addAfter(key: string, ms: number): void {
    this.addWithOptions(key, { afterMs: ms });
  }

  /** Adds `key` once the rate limiter allows: per-key backoff, bounded by the overall bucket. */
  addRateLimited(key: string): void {
    this.addWithOptions(key, { rateLimited: true });
  }

  /**
   * Marks `key` as needing processing, at `priority`, once `afterMs` (and, when
   * `rateLimited`, the limiter's delay: whichever is later) has passed. A key that already
   * needs processing is not queued twice: it keeps the higher of the two priorities and the
   * earlier of the two ready times. A no-op after shutdown.
   */
  addWithOptions(key: string, opts: AddOptions): void {
    if (this.shuttingDown) return;
    const priority = opts.priority ?? Priority.Normal;
    // Priorities key the buckets and are compared and sorted: NaN or Infinity would corrupt that.
    if (!Number.isSafeInteger(priority)) throw new RangeError(`priority must be an integer, got ${priority}`);
    let delayMs = opts.afterMs ?? 0;
    if (opts.rateLimited) {
      this.metrics.incRetries();
      delayMs = Math.max(delayMs, this.limiter.when(key));
    }
    const entry = this.entries.get(key);
    if (!entry) {
      const fresh: Entry = { priority, readySince: 0, seq: 0 };
      this.entries.set(key, fresh);
      if (delayMs > 0) this.delay(key, fresh, delayMs);
      else this.becomeReady(key, fresh);
      return;
    }
    if (priority > entry.priority) this.raise(key, entry, priority);
    if (!entry.delay) return; // already ready: nothing is earlier than now
    if (!(delayMs > 0)) {
      this.clock.clearTimeout(entry.delay.timer);
      entry.delay = undefined;
      this.becomeReady(key, entry);
    } else if (this.clock.now() + delayMs < entry.delay.readyAt) {
      this.clock.clearTimeout(entry.delay.timer);
      this.delay(key, entry, delayMs);
    }
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
    return (await this.getWithPriority())?.key;
  }

  /** `get`, also telling the priority the key was queued at (so a retry can keep it). */
  async getWithPriority(): Promise<QueueItem | undefined> {
    for (;;) {
      if (this.shuttingDown) return undefined;
      const item = this.take();
      if (item) return item;
      await new Promise<void>((resolve) => this.getters.push(resolve));
    }
  }

  /** Ends the processing of `key`; if it was re-added meanwhile it is queued again now. */
  done(key: string): void {
    const started = this.processing.get(key);
    if (started === undefined) return;
    this.processing.delete(key);
    this.metrics.observeWorkDuration((this.clock.now() - started) / 1000);
    const entry = this.entries.get(key);
    if (entry && !entry.delay && !this.shuttingDown) this.enqueue(key, entry);
    if (this.processing.size === 0) this.releaseDrainWaiters();
  }

  /** Keys ready for a worker (not counting in-flight or delayed ones). */
  len(): number {
    return this.ready;
  }

  /** Keys ready for a worker, by priority (only priorities with any). */
  lenByPriority(): Map<number, number> {
    return new Map(this.priorities.map((p) => [p, this.buckets.get(p)?.size ?? 0]));
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
    for (const entry of this.entries.values()) {
      if (entry.delay) this.clock.clearTimeout(entry.delay.timer);
    }
    this.entries.clear();
    for (const p of this.priorities) this.metrics.setPriorityDepth?.(p, 0);
    this.buckets.clear();
    this.priorities = [];
    this.ready = 0;
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

  private delay(key: string, entry: Entry, ms: number): void {
    const timer = this.clock.setTimeout(() => {
      entry.delay = undefined;
      this.becomeReady(key, entry);
    }, ms);
    entry.delay = { readyAt: this.clock.now() + ms, timer };
  }

  /** The key needs processing now: queue it, or park it until its worker calls done(). */
  private becomeReady(key: string, entry: Entry): void {
    this.metrics.incAdds();
    entry.readySince = this.clock.now();
    if (!this.processing.has(key)) this.enqueue(key, entry);
  }

  private raise(key: string, entry: Entry, priority: number): void {
    const queued = this.buckets.get(entry.priority)?.has(key) ?? false;
    if (queued) this.removeFromBucket(key, entry.priority);
    entry.priority = priority;
    // To the back of its new bucket: among equals it is as new as the add that raised it.
    if (queued) this.enqueue(key, entry);
  }

  private enqueue(key: string, entry: Entry): void {
    let bucket = this.buckets.get(entry.priority);
    if (!bucket) {
      bucket = new FairLevel();
      this.buckets.set(entry.priority, bucket);
      this.priorities.push(entry.priority);
      this.priorities.sort((a, b) => b - a);
    }
    entry.seq = ++this.seq;
    bucket.push(key);
    this.ready++;
    this.metrics.setPriorityDepth?.(entry.priority, bucket.size);
    this.metrics.setDepth(this.ready);
    this.getters.shift()?.();
  }

  private removeFromBucket(key: string, priority: number): void {
    const bucket = this.buckets.get(priority);
    if (!bucket?.delete(key)) return;
    this.afterRemoval(bucket, priority);
  }

  /** Bookkeeping after one key left the level of `priority`. */
  private afterRemoval(bucket: FairLevel, priority: number): void {
    this.ready--;
    this.metrics.setPriorityDepth?.(priority, bucket.size);
    if (bucket.size === 0) {
      this.buckets.delete(priority);
      this.priorities = this.priorities.filter((p) => p !== priority);
    }
  }

  /** Hands out the next key by the rule in the file comment, or undefined when none is ready. */
  private take(): QueueItem | undefined {
    const top = this.priorities[0];
    if (top === undefined) return undefined;
    let priority = top;
    if (this.priorities.length === 1) {
      this.passedOver = 0;
    } else if (this.passedOver < this.starvationLimit) {
      this.passedOver++;
    } else {
      priority = this.oldestBucket();
      this.passedOver = 0;
    }
    const bucket = this.buckets.get(priority);
    const key = bucket?.shift();
    if (bucket === undefined || key === undefined) return undefined;
    this.afterRemoval(bucket, priority);
    const entry = this.entries.get(key);
    this.entries.delete(key);
    const now = this.clock.now();
    this.processing.set(key, now);
    this.metrics.setDepth(this.ready);
    if (entry) this.metrics.observeQueueDuration((now - entry.readySince) / 1000);
    return { key, priority };
  }

  /** Priority of the level whose longest-waiting key has been ready longest. */
  private oldestBucket(): number {
    let best = this.priorities[0] ?? Priority.Normal;
    let bestSeq = Infinity;
    for (const p of this.priorities) {
      const oldest = this.buckets.get(p)?.oldest();
      const seq = oldest === undefined ? undefined : this.entries.get(oldest)?.seq;
      if (seq !== undefined && seq < bestSeq) {
        bestSeq = seq;
        best = p;
      }
    }
    return best;
  }

  private releaseDrainWaiters(): void {
    const waiters = this.drainWaiters;
    this.drainWaiters = [];
    for (const w of waiters) w();
  }
}

/**
 * The ready keys of one priority, served round robin over their flows. Every operation is
 * amortised O(1): `turns` holds each non-empty flow once, next to serve first, so neither a
 * hand-out nor a removal looks at any other flow or key.
 */
class FairLevel {
  /** Every key of the level in the order it became ready, for the starvation rule. */
  private readonly byAge = new KeyFifo();
  /** Keys of each non-empty flow, FIFO. */
  private readonly flows = new Map<string, KeyFifo>();
  /** Non-empty flows, the one to serve next first. */
  private readonly turns = new KeyFifo();

  get size(): number {
    return this.byAge.size;
  }

  has(key: string): boolean {
    return this.byAge.has(key);
  }

  push(key: string): void {
    if (this.byAge.has(key)) return;
    this.byAge.push(key);
    const flow = flowOf(key);
    let keys = this.flows.get(flow);
    if (!keys) {
      keys = new KeyFifo();
      this.flows.set(flow, keys);
      // A new or refilled flow waits for one turn of every flow already waiting.
      this.turns.push(flow);
    }
    keys.push(key);
  }

  /** The key that has been ready longest, whatever its flow. */
  oldest(): string | undefined {
    return this.byAge.peek();
  }

  /** Removes and returns the head of the flow whose turn it is; that flow goes to the back. */
  shift(): string | undefined {
    const flow = this.turns.peek();
    if (flow === undefined) return undefined;
    const key = this.flows.get(flow)?.peek();
    if (key === undefined) return undefined;
    this.delete(key);
    // Still waiting: to the back of the turns (delete kept it at the front).
    if (this.flows.has(flow)) {
      this.turns.delete(flow);
      this.turns.push(flow);
    }
    return key;
  }

  /** Removes `key` from wherever it waits; its flow keeps its turn unless it emptied. */
  delete(key: string): boolean {
    if (!this.byAge.delete(key)) return false;
    const flow = flowOf(key);
    const keys = this.flows.get(flow);
    keys?.delete(key);
    if (keys && keys.size === 0) {
      this.flows.delete(flow);
      this.turns.delete(flow);
    }
    return true;
  }
}

/**
 * FIFO of distinct keys with amortised O(1) push, peek, shift and removal from anywhere.
 * Not a Set: V8 leaves a deleted Set entry as a hole that every later iteration from the
 * start walks past, so taking the head of a Set used as a queue of n keys costs O(n^2).
 * Here a removed key leaves a hole too, but `head` passes each hole once.
 */
class KeyFifo {
  private slots: Array<string | undefined> = [];
  /** Index of the first live key in `slots` (or its length when empty). */
  private head = 0;
  /** Absolute position of `slots[0]`, so stored positions survive compaction. */
  private base = 0;
  private readonly positions = new Map<string, number>();

  get size(): number {
    return this.positions.size;
  }

  has(key: string): boolean {
    return this.positions.has(key);
  }

  push(key: string): void {
    if (this.positions.has(key)) return;
    this.positions.set(key, this.base + this.slots.length);
    this.slots.push(key);
  }

  peek(): string | undefined {
    return this.slots[this.head];
  }

  delete(key: string): boolean {
    const at = this.positions.get(key);
    if (at === undefined) return false;
    this.positions.delete(key);
    this.slots[at - this.base] = undefined;
    while (this.head < this.slots.length && this.slots[this.head] === undefined) this.head++;
    if (this.head === this.slots.length) {
      this.base += this.slots.length;
      this.slots = [];
      this.head = 0;
    } else if (this.head >= 1024 && this.head * 2 >= this.slots.length) {
      // Drop the consumed front once it is most of the array; amortised over the shifts that made it.
      this.slots = this.slots.slice(this.head);
      this.base += this.head;
      this.head = 0;
    }
    return true;
  }
}
