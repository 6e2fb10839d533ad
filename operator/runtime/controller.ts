/**
 * Controllers, after controller-runtime's: informer events become keys in a workqueue, and
 * N workers run the reconciler on them; builder.ts assembles one from its sources. The
 * runner owns the reconcile id, backoff, metrics, error logging and recovery from
 * reconcilers that throw.
 *
 * Queue priorities (new work first): creations seen after start, real updates and deletes
 * are queued at `Priority.Normal`; the initial list, updates that changed nothing (resyncs)
 * and `requeueAfter` re-checks at `Priority.Low` unless the reconciler names a priority;
 * an error retry keeps the priority its key was handed out with.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { isConflict } from './api-errors';
import { realClock, type Clock, type TimerHandle } from './clock';
import type { ControllerMetrics, Metrics } from './metrics';
import { allowCreate, allowDelete, allowUpdate, type Predicate } from './predicates';
import type { RateLimiter } from './rate-limiter';
import { isAction, isTerminalError, type Action, type Reconciler, type Request } from './reconcile';
import {
  keyOf,
  keyString,
  type Informer,
  type InformerOptions,
  type InformerSource,
  type KubeObject,
  type ObjectKey,
  type ResourceKind,
} from './types';
import { Priority, WorkQueue } from './workqueue';

/** What a controller needs from its surroundings; a `Manager` satisfies it. */
export interface ControllerDeps {
  readonly informers: InformerSource;
  readonly logger: Logger;
  /** @default no metrics */
  readonly metrics?: Metrics;
  /** Default namespace of every informer the controller asks for; all when unset. */
  readonly namespace?: string;
  /** @default realClock */
  readonly clock?: Clock;
}

/** Options of `for`, `owns` and `watches`. */
export interface EventSourceOptions<T extends KubeObject = KubeObject> {
  /** All must pass for an event to enqueue. */
  readonly predicates?: readonly Predicate<T>[];
  readonly informerOptions?: InformerOptions;
  /**
   * Watch this informer instead of asking the InformerSource for one, like
   * controller-runtime's `source.Kind` on a cache of one's own.
   */
  readonly informer?: Informer<T>;
  /**
   * Enqueue this long after the event instead of at once. The queue keeps a key once with its
   * earliest ready time, so a burst of events (say, 1,000 buckets deleted together) coalesces
   * into one reconcile of each mapped key per window instead of one per event.
   * @default 0
   */
  readonly delayMs?: number;
}

/** Runner options, with controller-runtime's defaults. */
export interface ControllerOptions {
  /** @default 1 */
  readonly maxConcurrentReconciles?: number;
  /** Aborts `ctx.signal` and counts the reconcile as failed after this long; 0 disables. @default 0 */
  readonly reconcileTimeoutMs?: number;
  /** @default defaultControllerRateLimiter() */
  readonly rateLimiter?: RateLimiter;
  /**
   * The largest fraction of the workers one namespace may hold while another namespace waits,
   * below its equal share when that is smaller; see `WorkQueueOptions.maxFlowShare`. @default 1
   */
  readonly maxFlowShare?: number;
}

/**
 * A built controller. `ControllerBuilder.complete` registers it with its manager, which
 * starts and stops it; tests may drive one themselves with `start` and `stop`.
 */
export interface Controller {
  readonly name: string;
  /** Informers this controller reads; the manager starts them and waits for their sync. */
  readonly informers: readonly Informer<KubeObject>[];
  /** The controller's queue (exposed for health checks and tests). */
  readonly queue: WorkQueue;
  /**
   * Waits for the informers to sync, enqueues every primary object (at low priority, so
   * anything created from then on goes first), then runs the workers;
   * resolves once they have all exited. Aborting `signal` is `stop()` without a deadline.
   */
  start(signal: AbortSignal): Promise<void>;
  /**
   * Stops taking work and waits up to `graceMs` for in-flight reconciles; past it (or at
   * once when 0) their signals are aborted. Resolves true when everything drained in time.
   */
  stop(graceMs?: number): Promise<boolean>;
}

/** Raised (as the reconcile's error) when a reconcile outlives `reconcileTimeoutMs`. */
export class ReconcileTimeoutError extends Error {
  override readonly name = 'ReconcileTimeoutError';
}

/** Reason given to in-flight reconciles when the controller stops without waiting. */
export class ControllerStoppedError extends Error {
  override readonly name = 'ControllerStoppedError';
}

/**
 * Keys sent from outside the informers, e.g. by a periodic check against an external system
 * (controller-runtime's `source.Channel`). A controller built with `watchesChannel` enqueues
 * what is sent while it runs; keys sent before it started or after it stopped are dropped,
 * as informer events are, since the reconcile is level-based.
 */
export class KeyChannel {
  private readonly receivers = new Set<(key: ObjectKey) => void>();

  /** Enqueues `key` in every running controller watching this channel. */
  send(key: ObjectKey): void {
    for (const receive of this.receivers) receive(key);
  }

  /** Registers `receive`; returns the function that unregisters it. */
  subscribe(receive: (key: ObjectKey) => void): () => void {
    this.receivers.add(receive);
    return () => this.receivers.delete(receive);
  }
}

/** One watched kind and how its objects map to the keys of primaries. */
export interface ControllerSource {
  readonly kind: ResourceKind;
  readonly map: (obj: KubeObject) => readonly ObjectKey[];
  readonly options: EventSourceOptions;
}

/**
 * Everything a controller is made of, as `ControllerBuilder` collects it. Kept as data so the
 * builder (builder.ts) and the runner here stay separate: the builder decides what to
 * watch, the runner how work flows.
 */
export interface ControllerSpec {
  /** The reconciled kind; its events enqueue the object's own key. */
  readonly primary: { readonly kind: ResourceKind; readonly options: EventSourceOptions };
  readonly secondary: readonly ControllerSource[];
  readonly channels: readonly KeyChannel[];
  readonly options: ControllerOptions;
}

/**
 * Creates the informers (so the manager starts them) and the controller, not registered
 * anywhere: `ControllerBuilder.complete` registers it with its manager. Events are ignored
 * until `start`, which enqueues every primary from the cache instead: the reconcile is
 * level-based, so nothing seen before then is lost.
 */
export function newController(name: string, deps: ControllerDeps, reconciler: Reconciler, spec: ControllerSpec): Controller {
  const workers = spec.options.maxConcurrentReconciles ?? 1;
  if (!Number.isInteger(workers) || workers < 1) {
    throw new Error(`controller "${name}": maxConcurrentReconciles must be a positive integer, got ${workers}`);
  }
  const runner = new ControllerRunner(name, deps, reconciler, {
    workers,
    timeoutMs: spec.options.reconcileTimeoutMs ?? 0,
    rateLimiter: spec.options.rateLimiter,
    maxFlowShare: spec.options.maxFlowShare,
  });
  const primaryInformer = runner.watch({ kind: spec.primary.kind, map: (o) => [keyOf(o)], options: spec.primary.options });
  runner.setPrimary(primaryInformer, spec.primary.options.predicates ?? []);
  for (const source of spec.secondary) runner.watch(source);
  for (const channel of spec.channels) runner.watchChannel(channel);
  return runner;
}

/** An add from the initial list is startup work; one seen later is a creation someone waits on. */
function addPriority(isInInitialList: boolean): number {
  return isInInitialList ? Priority.Low : Priority.Normal;
}

/**
 * An update that changed nothing (same resourceVersion: a resync) is routine work; any real
 * change is news. After controller-runtime's `handler.WithLowPriorityWhenUnchanged`.
 */
function updatePriority(oldObj: KubeObject, newObj: KubeObject): number {
  const before = oldObj.metadata?.resourceVersion;
  return before !== undefined && before === newObj.metadata?.resourceVersion ? Priority.Low : Priority.Normal;
}

/** Inverse of `keyString`: namespaces and names never contain '/'. */
function parseKey(key: string): Request {
  const slash = key.indexOf('/');
  return slash < 0 ? { namespace: '', name: key } : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

interface RunnerOptions {
  readonly workers: number;
  readonly timeoutMs: number;
  readonly rateLimiter: RateLimiter | undefined;
  readonly maxFlowShare: number | undefined;
}

type Outcome = { readonly ok: true; readonly action: Action } | { readonly ok: false; readonly err: unknown };

const noControllerMetrics: ControllerMetrics = {
  reconciled: () => undefined,
  incErrors: () => undefined,
  incTerminalErrors: () => undefined,
  setActiveWorkers: () => undefined,
  setMaxConcurrentReconciles: () => undefined,
};

class ControllerRunner implements Controller {
  readonly queue: WorkQueue;
  private readonly informerList: Informer<KubeObject>[] = [];
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly metrics: ControllerMetrics;
  private primaryInformer?: Informer<KubeObject>;
  private primaryPredicates: readonly Predicate[] = [];
  /** Aborted when in-flight reconciles must give up (stop past its grace period). */
  private readonly hardStop = new AbortController();
  private running = false;
  private activeWorkers = 0;

  constructor(
    readonly name: string,
    private readonly deps: ControllerDeps,
    private readonly reconciler: Reconciler,
    private readonly opts: RunnerOptions,
  ) {
    this.clock = deps.clock ?? realClock;
    this.logger = deps.logger.child({ controller: name });
    this.metrics = deps.metrics?.controller(name) ?? noControllerMetrics;
    this.queue = new WorkQueue({
      name,
      clock: this.clock,
      // The queue shares these workers out between namespaces by the time each holds them.
      workers: opts.workers,
      ...(opts.maxFlowShare !== undefined ? { maxFlowShare: opts.maxFlowShare } : {}),
      ...(opts.rateLimiter ? { rateLimiter: opts.rateLimiter } : {}),
      ...(deps.metrics ? { metrics: deps.metrics } : {}),
    });
  }

  get informers(): readonly Informer<KubeObject>[] {
    return this.informerList;
  }

  /** Subscribes to a source's informer; returns it. */
  watch(source: ControllerSource): Informer<KubeObject> {
    const informerOptions: InformerOptions = {
      ...(this.deps.namespace ? { namespace: this.deps.namespace } : {}),
      ...source.options.informerOptions,
    };
    const informer = source.options.informer ?? this.deps.informers.informerFor<KubeObject>(source.kind, informerOptions);
    if (!this.informerList.includes(informer)) this.informerList.push(informer);
    const predicates = source.options.predicates ?? [];
    const delayMs = source.options.delayMs ?? 0;
    const enqueue = (obj: KubeObject, priority: number): void => {
      if (!this.running) return;
      for (const key of source.map(obj)) this.queue.addWithOptions(keyString(key), { priority, ...(delayMs > 0 ? { afterMs: delayMs } : {}) });
    };
    informer.addEventHandler({
      onAdd: (obj, isInInitialList) => {
        if (predicates.every((p) => allowCreate(p, obj))) enqueue(obj, addPriority(isInInitialList));
      },
      onUpdate: (oldObj, newObj) => {
        if (!predicates.every((p) => allowUpdate(p, oldObj, newObj))) return;
        // Both: an owner or mapping may have changed, and the old target must hear of it.
        const priority = updatePriority(oldObj, newObj);
        enqueue(oldObj, priority);
        enqueue(newObj, priority);
      },
      onDelete: (obj) => {
        if (predicates.every((p) => allowDelete(p, obj))) enqueue(obj, Priority.Normal);
      },
    });
    return informer;
  }

  /** Enqueues keys sent on `channel` while running. */
  watchChannel(channel: KeyChannel): void {
    channel.subscribe((key) => {
      if (this.running) this.queue.add(keyString(key));
    });
  }

  setPrimary(informer: Informer<KubeObject>, predicates: readonly Predicate[]): void {
    this.primaryInformer = informer;
    this.primaryPredicates = predicates;
  }

  async start(signal: AbortSignal): Promise<void> {
    if (this.running || this.queue.isShuttingDown()) throw new Error(`controller "${this.name}" was already started`);
    if (signal.aborted) return;
    const onAbort = (): void => {
      this.stop().catch((err: unknown) => this.logger.error({ err }, 'Failed to stop controller'));
    };
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      await Promise.all(this.informerList.map((i) => i.waitForSync(signal)));
    } catch (err) {
      signal.removeEventListener('abort', onAbort);
      if (signal.aborted) return;
      throw err;
    }
    if (this.queue.isShuttingDown()) return;
    this.running = true;
    // The initial list, as controller-runtime enqueues it: behind anything created from now on.
    for (const obj of this.primaryInformer?.cache.list() ?? []) {
      if (this.primaryPredicates.every((p) => allowCreate(p, obj))) {
        this.queue.addWithOptions(keyString(keyOf(obj)), { priority: Priority.Low });
      }
    }
    this.metrics.setMaxConcurrentReconciles(this.opts.workers);
    this.logger.info({ workers: this.opts.workers }, 'Starting workers');
    try {
      await Promise.all(Array.from({ length: this.opts.workers }, () => this.worker()));
    } finally {
      signal.removeEventListener('abort', onAbort);
      this.running = false;
      this.logger.info('All workers finished');
    }
  }

  async stop(graceMs = Infinity): Promise<boolean> {
    const drained = this.queue.shutDownWithDrain().then(() => true);
    if (graceMs <= 0) {
      this.abortInFlight();
      return this.queue.inFlight() === 0;
    }
    let timer: TimerHandle | undefined;
    const deadline = Number.isFinite(graceMs)
      ? new Promise<boolean>((resolve) => {
          timer = this.clock.setTimeout(() => resolve(false), graceMs);
        })
      : new Promise<boolean>(() => undefined);
    const inTime = await Promise.race([drained, deadline]);
    if (timer !== undefined) this.clock.clearTimeout(timer);
    if (!inTime) this.abortInFlight();
    return inTime;
  }

  private abortInFlight(): void {
    if (!this.hardStop.signal.aborted) {
      this.hardStop.abort(new ControllerStoppedError(`controller "${this.name}" stopped`));
    }
  }

  private async worker(): Promise<void> {
    for (;;) {
      const item = await this.queue.getWithPriority();
      if (item === undefined) return;
      const { key, priority } = item;
      try {
        await this.reconcileKey(key, priority);
      } catch (err) {
        // Only a bug in the runner itself gets here; the worker must live on regardless.
        this.logger.error({ err, key }, 'Unexpected failure in controller runner');
      } finally {
        this.queue.done(key);
      }
    }
  }

  /** `priority` is the one the key was queued at; a retry keeps it. */
  private async reconcileKey(key: string, priority: number): Promise<void> {
    const req = parseKey(key);
    const reconcileID = randomUUID();
    const logger = this.logger.child({ namespace: req.namespace, name: req.name, reconcileID });
    const abort = new AbortController();
    const onHardStop = (): void => abort.abort(this.hardStop.signal.reason);
    if (this.hardStop.signal.aborted) onHardStop();
    else this.hardStop.signal.addEventListener('abort', onHardStop, { once: true });
    let timedOut = false;
    const timer =
      this.opts.timeoutMs > 0
        ? this.clock.setTimeout(() => {
            timedOut = true;
            abort.abort(new ReconcileTimeoutError(`reconcile timed out after ${this.opts.timeoutMs} ms`));
          }, this.opts.timeoutMs)
        : undefined;

    this.metrics.setActiveWorkers(++this.activeWorkers);
    const startedAt = this.clock.now();
    let outcome: Outcome;
    try {
      // Inside try, so a synchronous throw is caught like a rejection.
      const action: unknown = await this.reconciler.reconcile(req, { logger, reconcileID, signal: abort.signal, priority });
      outcome = isAction(action)
        ? { ok: true, action }
        : { ok: false, err: new TypeError('reconciler resolved with something that is not an Action') };
    } catch (err) {
      outcome = { ok: false, err };
    } finally {
      if (timer !== undefined) this.clock.clearTimeout(timer);
      this.hardStop.signal.removeEventListener('abort', onHardStop);
      this.metrics.setActiveWorkers(--this.activeWorkers);
    }
    if (timedOut) {
      const cause = outcome.ok ? undefined : outcome.err;
      outcome = {
        ok: false,
        err: new ReconcileTimeoutError(`reconcile timed out after ${this.opts.timeoutMs} ms`, { cause }),
      };
    }
    this.handleOutcome(key, priority, outcome, (this.clock.now() - startedAt) / 1000, logger);
  }

  private handleOutcome(key: string, priority: number, outcome: Outcome, seconds: number, logger: Logger): void {
    if (outcome.ok) {
      this.queue.forget(key);
      switch (outcome.action.type) {
        case 'done':
          this.metrics.reconciled('success', seconds);
          return;
        case 'requeueAfter':
          this.metrics.reconciled('requeue_after', seconds);
          // A re-check is routine unless the reconciler says someone is waiting on it.
          this.queue.addWithOptions(key, {
            afterMs: outcome.action.afterMs,
            priority: outcome.action.priority ?? Priority.Low,
          });
          return;
        default: {
          const unreachable: never = outcome.action;
          throw new Error(`unknown action ${JSON.stringify(unreachable)}`);
        }
      }
    }
    this.metrics.reconciled('error', seconds);
    this.metrics.incErrors();
    const err = outcome.err instanceof Error ? outcome.err : new Error(String(outcome.err));
    if (isTerminalError(err)) {
      this.metrics.incTerminalErrors();
      this.queue.forget(key);
      logger.error({ err, terminal: true }, 'Reconciler error');
      return;
    }
    if (this.hardStop.signal.aborted) {
      // Expected while stopping; the next leader or process picks the key up again.
      logger.info({ err }, 'Reconcile aborted by controller stop');
      return;
    }
    // A retry keeps its priority, as in controller-runtime: a failing new object is still new
    // work, and a failing backlog object must not jump the queue by failing.
    this.queue.addWithOptions(key, { rateLimited: true, priority });
    // A conflict is a stale cache or a concurrent writer: routine, retried with backoff.
    if (isConflict(err)) logger.debug({ err, requeues: this.queue.numRequeues(key) }, 'Conflict; retrying with backoff');
    else logger.error({ err, requeues: this.queue.numRequeues(key) }, 'Reconciler error');
  }
}
