/**
 * A rate-limited, delaying priority work queue of string keys, after controller-runtime's
 * priority queue (the default since v0.23) on client-go's guarantees: a key is queued at
 * most once (dedup keeps the higher priority and the earlier ready time), a key is never
 * handed to two workers at once, and a key added while it is being processed is processed
 * once more after `done`.
 *
 * Fairness between flows is by time held, as the API server's Priority and Fairness charges a
 * request for the seats it occupies over time, not for being dispatched. The flow of a key is
 * its namespace (the part before the first '/'; a key without one is in the flow '' that all
 * cluster-scoped objects share). Three rules:
 *
 * - A cap on workers. While another flow has a key waiting, no flow is handed a key beyond
 *   `flowShare(workers, activeFlows)`: an equal share of the workers among the flows with keys
 *   ready or in flight, rounded up and at least one. So a tenant whose endpoint answers in 60 s
 *   holds at most its share of the workers, and the next free worker goes to another tenant.
 *   The queue stays work-conserving: when every waiting key belongs to a flow at its cap, a
 *   free worker still takes one (a lone busy flow uses every worker). The price is that a flow
 *   which borrowed workers while alone keeps them until its keys are done; a newcomer waits for
 *   the first of them, which the reconcile timeout bounds. `maxFlowShare` below 1 is a ceiling
 *   no flow passes even alone, for installations that rather keep workers spare for flows yet
 *   to come than use every worker.
 * - A reserve no slow flow takes. A flow whose keys are held `slowHoldMs` or more on average
 *   (an endpoint that answers slowly, trickles or not at all) is slow, and the slow flows
 *   together hold at most `workers - slowReserve` workers, borrowing included. Equal shares
 *   alone cannot promise that: slow flows that came while the others were idle fill the workers
 *   at their share, and a newcomer would wait for one of them to end. With the reserve, a key of
 *   any other flow finds a worker at once, however many slow tenants there are.
 * - Virtual time. Each flow carries the worker time charged to it (start-time fair queuing): at
 *   a hand-out it is charged the average time its keys were held, corrected to the real time at
 *   `done`. Among the flows under their cap, the one charged least goes next; equals take turns
 *   as before (a new or refilled flow joins behind the flows waiting, a served one goes to the
 *   back). Between two flows with keys waiting, one whose keys take 60 s is handed one key for
 *   every 6,000 of one whose keys take 10 ms: equal worker time, not equal hand-outs. A flow
 *   that was idle starts at the virtual time of the latest hand-out: idleness earns no credit.
 *   A flow charged ahead of that keeps its debt while idle and is forgotten once the others
 *   catch up, so memory follows the busy flows. With a single flow the order is plain FIFO,
 *   and with keys held no time at all (a fake clock) plain round robin: one key per flow per
 *   turn.
 *
 * Higher priorities go first, with one rule against starvation: after `starvationLimit`
 * hand-outs in a row that passed over a waiting lower-priority key, the next hand-out goes to
 * the priority whose longest-waiting key has waited longest, whatever that priority is, and is
 * taken there by the same turn of flows. Low-priority work therefore keeps at least one
 * hand-out in `starvationLimit + 1` however much high-priority work arrives, and one
 * namespace's backlog cannot take the low-priority share of the others either. The cap on
 * workers comes before priorities: a priority whose waiting flows are all at their cap is passed
 * over for one with a flow under it.
 *
 * Cost: add, done and a priority raise are O(log flows) plus the handful of distinct priorities;
 * a get also looks at the flows holding workers (at most `workers` of them), and forgetting idle
 * flows is amortised O(1) (a sweep each time their number doubles). Nothing else walks the
 * queued keys or the waiting flows: each priority keeps its keys in FIFOs (one per flow, one in
 * age order, all with O(1) push, head and removal: `KeyFifo`) and its non-empty flows in a heap
 * ordered by virtual time, then turn.
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
  /**
   * Workers taking keys from this queue (the controller's `maxConcurrentReconciles`): the seats
   * the flows share. @default 1
   */
  readonly workers?: number;
  /**
   * The largest fraction of `workers` one flow may ever hold, borrowed workers included (at
   * least one). Below 1 it keeps workers free for flows that arrive later even while one flow is
   * alone (0.75 with 8 workers: a lone flow holds 6 and a newcomer's key is taken at once), at
   * the cost of idle workers. @default 1: a lone flow may use every worker
   */
  readonly maxFlowShare?: number;
  /**
   * A flow whose keys are held this long on average (a tenant whose endpoint answers slowly or
   * not at all) is slow: slow flows together never hold more than `workers - slowReserve`
   * workers, so a key of any other flow finds a worker without waiting for a slow one to end,
   * however many slow flows there are and whenever they came. @default 1000
   */
  readonly slowHoldMs?: number;
  /** Workers slow flows may never hold together. @default a quarter of `workers` (at least 1; 0 with one worker) */
  readonly slowReserve?: number;
}

/**
 * The most of `slots` one flow may hold while another flow waits: an equal share among
 * `activeFlows` (rounded up), at most `maxShare` of the slots, and never less than one. Shared
 * by the work queue (workers) and the drift scan (scan slots).
 */
export function flowShare(slots: number, activeFlows: number, maxShare = 1): number {
  return Math.max(1, Math.min(Math.ceil(slots / Math.max(1, activeFlows)), Math.floor(slots * maxShare)));
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

/** What the queue knows of one flow: the keys it has waiting and in flight, and what it was charged. */
interface FlowState {
  /** Its keys ready for a worker, over all priorities. */
  ready: number;
  /** Its keys held by workers. */
  inFlight: number;
  /** Virtual time: ms of worker time charged to it, on the queue's virtual clock. */
  vt: number;
  /** Moving average of the ms its keys were held; undefined before the first `done`. */
  estimateMs: number | undefined;
}

/** A key held by a worker. */
interface Held {
  readonly flow: string;
  /** When `get` handed it out. */
  readonly since: number;
  /** Ms charged to its flow at the hand-out, corrected at `done`. */
  readonly charged: number;
  /** Its flow was slow at the hand-out: it counts against the slow flows' workers. */
  readonly slow: boolean;
}

/** Weight of the latest hold time in a flow's moving average: a few keys show a change of pace. */
const ESTIMATE_WEIGHT = 0.25;

/** The controller's queue: priorities, dedup, no concurrent processing of a key, delays and backoff. */
export class WorkQueue implements UnfinishedWorkProbe {
  readonly name: string;
  private readonly clock: Clock;
  private readonly limiter: RateLimiter;
  private readonly metrics: WorkQueueMetrics;
  private readonly starvationLimit: number;
  private readonly workers: number;
  private readonly maxFlowShare: number;
  /** Workers no flow may pass, borrowing included (`maxFlowShare`); Infinity when it is 1. */
  private readonly ceiling: number;
  private readonly slowHoldMs: number;
  /** Workers the slow flows may hold together (`workers - slowReserve`). */
  private readonly slowLimit: number;
  /** Keys of slow flows held by workers. */
  private slowInFlight = 0;

  /** Every key that needs processing: waiting for its delay, ready, or parked while in flight. */
  private readonly entries = new Map<string, Entry>();
  /** Ready keys not in flight, one fair level per priority. */
  private readonly buckets = new Map<number, FairLevel>();
  /** Priorities of the non-empty levels, highest first; a handful, so a sorted array is enough. */
  private priorities: number[] = [];
  /** Number of keys across all buckets. */
  private ready = 0;
  /** Keys held by a worker. */
  private readonly processing = new Map<string, Held>();
  /** Flows with keys ready or in flight, and idle flows charged ahead of `virtualNow`. */
  private readonly flows = new Map<string, FlowState>();
  /** Flows with keys in flight: the only ones that can be at their cap (at most `workers`). */
  private readonly busy = new Map<string, FlowState>();
  /** Flows with keys ready or in flight. */
  private activeFlows = 0;
  /** Virtual time of the latest hand-out (its flow's charge before it): where an idle flow restarts. */
  private virtualNow = 0;
  /** Average hold time over all flows: the first charge of a flow with no history. */
  private estimateMs = 0;
  /** Size of `flows` past which idle flows without debt are swept out. */
  private sweepAt = 64;
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
    this.workers = opts.workers ?? 1;
    if (!Number.isInteger(this.workers) || this.workers < 1) throw new RangeError(`workers must be a positive integer, got ${this.workers}`);
    this.maxFlowShare = opts.maxFlowShare ?? 1;
    if (!(this.maxFlowShare > 0 && this.maxFlowShare <= 1)) throw new RangeError(`maxFlowShare must be in (0, 1], got ${this.maxFlowShare}`);
    this.ceiling = this.maxFlowShare < 1 ? Math.max(1, Math.floor(this.workers * this.maxFlowShare)) : Infinity;
    this.slowHoldMs = opts.slowHoldMs ?? 1000;
    const reserve = opts.slowReserve ?? (this.workers > 1 ? Math.max(1, Math.floor(this.workers / 4)) : 0);
    if (!Number.isInteger(reserve) || reserve < 0 || reserve >= this.workers) {
      throw new RangeError(`slowReserve must be an integer from 0 to workers - 1, got ${reserve}`);
    }
    this.slowLimit = this.workers - reserve;
  }

  /** True when `flow`'s keys are held long on average (see `slowHoldMs`). */
  private isSlow(flow: FlowState | undefined): boolean {
    return flow?.estimateMs !== undefined && flow.estimateMs >= this.slowHoldMs;
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
    const held = this.processing.get(key);
    if (held === undefined) return;
    this.processing.delete(key);
    if (held.slow) this.slowInFlight--;
    const heldMs = Math.max(0, this.clock.now() - held.since);
    this.metrics.observeWorkDuration(heldMs / 1000);
    const flow = this.flows.get(held.flow);
    if (flow) {
      flow.inFlight--;
      if (flow.inFlight === 0) this.busy.delete(held.flow);
      // The real time held replaces the estimate charged at the hand-out.
      this.charge(held.flow, flow, heldMs - held.charged);
      flow.estimateMs = flow.estimateMs === undefined ? heldMs : flow.estimateMs + (heldMs - flow.estimateMs) * ESTIMATE_WEIGHT;
      this.estimateMs += (heldMs - this.estimateMs) * ESTIMATE_WEIGHT;
    }
    const entry = this.entries.get(key);
    if (entry && !entry.delay && !this.shuttingDown) this.enqueue(key, entry);
    else if (this.ready > 0 && (this.ceiling !== Infinity || held.slow)) this.getters.shift()?.(); // a flow came below a cap
    if (flow && flow.ready === 0 && flow.inFlight === 0) this.becomeIdle(held.flow, flow);
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
    this.flows.clear();
    this.busy.clear();
    this.activeFlows = 0;
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
    for (const held of this.processing.values()) total += now - held.since;
    return total / 1000;
  }

  longestRunningProcessorSeconds(): number {
    const now = this.clock.now();
    let longest = 0;
    for (const held of this.processing.values()) longest = Math.max(longest, now - held.since);
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
    // To the back of its new bucket: among equals it is as new as the add that raised it. Its
    // flow stays ready throughout, so it keeps its charge.
    if (queued) this.place(key, entry);
  }

  /** Queues a key that was not ready: its flow may become active. */
  private enqueue(key: string, entry: Entry): void {
    const name = flowOf(key);
    let flow = this.flows.get(name);
    if (!flow) {
      flow = { ready: 0, inFlight: 0, vt: this.virtualNow, estimateMs: undefined };
      this.flows.set(name, flow);
    }
    if (flow.ready === 0 && flow.inFlight === 0) {
      this.activeFlows++;
      // Idleness earns no credit; a debt stays.
      flow.vt = Math.max(flow.vt, this.virtualNow);
    }
    flow.ready++;
    this.place(key, entry);
  }

  /** Puts a key in the level of its priority and wakes a waiting worker. */
  private place(key: string, entry: Entry): void {
    let bucket = this.buckets.get(entry.priority);
    if (!bucket) {
      bucket = new FairLevel(this.vtOf);
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

  /** Hands out the next key by the rules in the file comment, or undefined when none is ready. */
  private take(): QueueItem | undefined {
    if (this.priorities.length === 0) return undefined;
    let capped = this.cappedFlows(flowShare(this.workers, this.activeFlows, this.maxFlowShare));
    let levels = this.priorities;
    if (capped) {
      levels = this.openLevels(capped);
      // Work-conserving: when only capped flows wait, a free worker still takes their key, up to
      // the ceiling; past it the worker waits for a key it may take (done() or an add wakes it).
      if (levels.length === 0) {
        capped = this.cappedFlows(this.ceiling);
        levels = capped ? this.openLevels(capped) : this.priorities;
        if (levels.length === 0) return undefined;
      }
    }
    let priority = levels[0] ?? Priority.Normal;
    if (levels.length === 1) {
      this.passedOver = 0;
    } else if (this.passedOver < this.starvationLimit) {
      this.passedOver++;
    } else {
      priority = this.oldestBucket(levels);
      this.passedOver = 0;
    }
    const bucket = this.buckets.get(priority);
    const key = bucket?.shift(capped);
    if (bucket === undefined || key === undefined) return undefined;
    this.afterRemoval(bucket, priority);
    const entry = this.entries.get(key);
    this.entries.delete(key);
    const now = this.clock.now();
    const name = flowOf(key);
    const flow = this.flows.get(name);
    let charged = 0;
    const slow = this.isSlow(flow);
    if (slow) this.slowInFlight++;
    if (flow) {
      flow.ready--;
      if (flow.inFlight++ === 0) this.busy.set(name, flow);
      this.virtualNow = Math.max(this.virtualNow, flow.vt);
      // Charged now for the time its keys usually take, so a flow that starts many slow keys at
      // once pays for them before the first one ends.
      charged = flow.estimateMs ?? this.estimateMs;
      this.charge(name, flow, charged);
    }
    this.processing.set(key, { flow: name, since: now, charged, slow });
    this.metrics.setDepth(this.ready);
    if (entry) this.metrics.observeQueueDuration((now - entry.readySince) / 1000);
    return { key, priority };
  }

  /** Priorities with a ready key of a flow not in `capped`. */
  private openLevels(capped: ReadonlySet<string>): number[] {
    return this.priorities.filter((p) => this.buckets.get(p)?.hasFlowOutside(capped));
  }

  /** Flows holding `cap` workers or more, or undefined when none does (the common case: no walk at all). */
  private cappedFlows(cap: number): Set<string> | undefined {
    let capped: Set<string> | undefined;
    if (this.busy.size > 0 && cap !== Infinity) {
      for (const [name, flow] of this.busy) {
        if (flow.inFlight >= cap) (capped ??= new Set()).add(name);
      }
    }
    // The slow flows hold all they may together: none of them takes another worker (rare, so
    // the walk over the flows with ready keys is paid only then).
    if (this.slowInFlight >= this.slowLimit) {
      for (const [name, flow] of this.flows) {
        if (flow.ready > 0 && this.isSlow(flow)) (capped ??= new Set()).add(name);
      }
    }
    return capped;
  }

  /** Adds `ms` (negative: a refund) to a flow's virtual time and reorders it wherever it waits. */
  private charge(name: string, flow: FlowState, ms: number): void {
    if (ms === 0) return;
    flow.vt += ms;
    for (let i = 0; i < this.priorities.length; i++) {
      const p = this.priorities[i];
      if (p !== undefined) this.buckets.get(p)?.reorder(name);
    }
  }

  /** A flow with nothing ready or in flight: forgotten unless it was charged ahead of the others. */
  private becomeIdle(name: string, flow: FlowState): void {
    this.activeFlows--;
    if (flow.vt <= this.virtualNow) this.flows.delete(name);
    if (this.flows.size < this.sweepAt) return;
    // Indebted idle flows are kept; once the others have caught up they go, swept in amortised O(1).
    for (const [n, f] of this.flows) {
      if (f.ready === 0 && f.inFlight === 0 && f.vt <= this.virtualNow) this.flows.delete(n);
    }
    this.sweepAt = Math.max(64, 2 * this.flows.size);
  }

  /** Virtual time of a flow, for the levels' ordering. */
  private readonly vtOf = (name: string): number => this.flows.get(name)?.vt ?? this.virtualNow;

  /** Priority, among `levels`, of the level whose longest-waiting key has been ready longest. */
  private oldestBucket(levels: readonly number[]): number {
    let best = levels[0] ?? Priority.Normal;
    let bestSeq = Infinity;
    for (const p of levels) {
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

/** A flow waiting in one level: its keys, its turn, and its place in the level's heap. */
interface LevelFlow {
  readonly name: string;
  readonly keys: KeyFifo;
  /** Higher is later: set when the flow joins the level and each time it is served. */
  turn: number;
  /** Index in the heap. */
  at: number;
}

/**
 * The ready keys of one priority, served by their flows' virtual time, then by turns. A binary
 * heap holds each non-empty flow once, least charged (then longest waiting for its turn) first,
 * so a hand-out, an add and a removal cost O(log flows) and look at no other key. With equal
 * charges (keys held no time) the order is round robin: a new or refilled flow joins behind the
 * flows waiting and a served one goes to the back.
 */
class FairLevel {
  /** Every key of the level in the order it became ready, for the starvation rule. */
  private readonly byAge = new KeyFifo();
  /** Non-empty flows by name. */
  private readonly flows = new Map<string, LevelFlow>();
  /** Non-empty flows, the one to serve next at the root. */
  private readonly heap: LevelFlow[] = [];
  private turns = 0;

  /** @param vtOf the virtual time of a flow, kept by the queue across its levels */
  constructor(private readonly vtOf: (flow: string) => number) {}

  get size(): number {
    return this.byAge.size;
  }

  has(key: string): boolean {
    return this.byAge.has(key);
  }

  push(key: string): void {
    if (this.byAge.has(key)) return;
    this.byAge.push(key);
    const name = flowOf(key);
    let flow = this.flows.get(name);
    if (!flow) {
      // A new or refilled flow waits for one turn of every flow already waiting at its charge.
      flow = { name, keys: new KeyFifo(), turn: ++this.turns, at: this.heap.length };
      this.flows.set(name, flow);
      this.heap.push(flow);
      this.siftUp(flow.at);
    }
    flow.keys.push(key);
  }

  /** The key that has been ready longest, whatever its flow. */
  oldest(): string | undefined {
    return this.byAge.peek();
  }

  /** True when a flow not in `capped` has a key here (`capped` holds at most `workers` flows). */
  hasFlowOutside(capped: ReadonlySet<string>): boolean {
    let inside = 0;
    for (const name of capped) if (this.flows.has(name)) inside++;
    return this.flows.size > inside;
  }

  /**
   * Removes and returns the head of the first flow in order that is not in `capped`; that flow
   * goes to the back of its equals. Capped flows passed over keep their place.
   */
  shift(capped?: ReadonlySet<string>): string | undefined {
    let chosen: LevelFlow | undefined;
    const passed: LevelFlow[] = [];
    while (this.heap.length > 0) {
      const top = this.heap[0] as LevelFlow;
      if (!capped?.has(top.name)) {
        chosen = top;
        break;
      }
      this.removeAt(0);
      passed.push(top);
    }
    for (let i = 0; i < passed.length; i++) this.insert(passed[i] as LevelFlow);
    const key = chosen?.keys.peek();
    if (chosen === undefined || key === undefined) return undefined;
    this.byAge.delete(key);
    chosen.keys.delete(key);
    if (chosen.keys.size === 0) {
      this.flows.delete(chosen.name);
      this.removeAt(chosen.at);
    } else {
      chosen.turn = ++this.turns;
      this.siftDown(chosen.at);
    }
    return key;
  }

  /** Removes `key` from wherever it waits; its flow keeps its turn unless it emptied. */
  delete(key: string): boolean {
    if (!this.byAge.delete(key)) return false;
    const flow = this.flows.get(flowOf(key));
    if (!flow) return true;
    flow.keys.delete(key);
    if (flow.keys.size === 0) {
      this.flows.delete(flow.name);
      this.removeAt(flow.at);
    }
    return true;
  }

  /** Restores the order after the virtual time of `name` changed. */
  reorder(name: string): void {
    const flow = this.flows.get(name);
    if (!flow) return;
    this.siftUp(flow.at);
    this.siftDown(flow.at);
  }

  private before(a: LevelFlow, b: LevelFlow): boolean {
    const va = this.vtOf(a.name);
    const vb = this.vtOf(b.name);
    return va < vb || (va === vb && a.turn < b.turn);
  }

  private insert(flow: LevelFlow): void {
    flow.at = this.heap.length;
    this.heap.push(flow);
    this.siftUp(flow.at);
  }

  private removeAt(i: number): void {
    const last = this.heap.pop();
    if (last === undefined || i >= this.heap.length) return;
    this.heap[i] = last;
    last.at = i;
    this.siftUp(i);
    this.siftDown(last.at);
  }

  private siftUp(i: number): void {
    const heap = this.heap;
    const flow = heap[i];
    if (flow === undefined) return;
    while (i > 0) {
      const parentAt = (i - 1) >> 1;
      const parent = heap[parentAt] as LevelFlow;
      if (!this.before(flow, parent)) break;
      heap[i] = parent;
      parent.at = i;
      i = parentAt;
    }
    heap[i] = flow;
    flow.at = i;
  }

  private siftDown(i: number): void {
    const heap = this.heap;
    const flow = heap[i];
    if (flow === undefined) return;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= heap.length) break;
      const right = left + 1;
      const l = heap[left] as LevelFlow;
      const r = heap[right];
      const child = r !== undefined && this.before(r, l) ? r : l;
      if (!this.before(child, flow)) break;
      heap[i] = child;
      child.at = i;
      i = child === l ? left : right;
    }
    heap[i] = flow;
    flow.at = i;
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
