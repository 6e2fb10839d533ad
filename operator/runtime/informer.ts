/**
 * A shared informer: a reflector keeps an indexed cache current, then handlers hear about
 * each change. Handlers run synchronously after the cache write, so a handler reading the
 * cache sees the object it is told about; they should only enqueue keys and return.
 */
import type { Logger } from 'pino';
import { diffRelist, IndexedCache } from './cache';
import type { ListerWatcher } from './client';
import { realClock, type Clock, type TimerHandle } from './clock';
import { Reflector, type ReflectorTuning } from './reflector';
import {
  keyOf,
  keyString,
  type Informer,
  type InformerEventHandler,
  type InformerOptions,
  type KubeObject,
  type ResourceKind,
  type Transform,
} from './types';

/** Everything a `SharedInformer` needs. */
export interface SharedInformerOptions extends InformerOptions {
  readonly lw: ListerWatcher;
  readonly kind: ResourceKind;
  readonly logger: Logger;
  readonly clock?: Clock;
  readonly reflector?: ReflectorTuning;
}

/** `Informer` backed by a `Reflector` and an `IndexedCache`. */
export class SharedInformer<T extends KubeObject> implements Informer<T> {
  readonly kind: ResourceKind;
  readonly cache: IndexedCache<T>;
  private readonly handlers: InformerEventHandler<T>[] = [];
  private readonly reflector: Reflector<T>;
  private readonly log: Logger;
  private readonly clock: Clock;
  /** What this informer stores of each object; the identity when none was given. */
  readonly transform: Transform | undefined;
  private resyncMs: number;
  private resyncTimer: TimerHandle | undefined;
  private synced = false;
  private started = false;
  private stopped = false;
  private readonly syncWaiters = new Map<() => void, (reason: unknown) => void>();

  constructor(opts: SharedInformerOptions) {
    this.kind = opts.kind;
    this.clock = opts.clock ?? opts.reflector?.clock ?? realClock;
    this.resyncMs = opts.resyncPeriodMs ?? 0;
    this.transform = opts.transform;
    this.log = opts.logger.child({ informer: opts.kind.plural, namespace: opts.namespace ?? '' });
    this.cache = new IndexedCache<T>({
      onIndexError: (index, key, err) => this.log.error({ err, index, key }, 'index function failed'),
    });
    this.reflector = new Reflector<T>({
      ...opts.reflector,
      clock: this.clock,
      lw: opts.lw,
      kind: opts.kind,
      namespace: opts.namespace,
      labelSelector: opts.labelSelector,
      fieldSelector: opts.fieldSelector,
      logger: opts.logger,
      sink: { replace: (items) => this.replace(items), apply: (type, obj) => this.apply(type, obj) },
    });
  }

  /**
   * Adds a handler. One added after objects are cached first hears of each as an add, so a
   * controller registering late on a shared informer still sees everything.
   */
  addEventHandler(handler: InformerEventHandler<T>): void {
    this.handlers.push(handler);
    for (const obj of this.cache.list()) this.invoke(handler, 'add', (h) => h.onAdd?.(obj, true));
  }

  start(): void {
    if (this.started) return;
    if (this.stopped) throw new Error(`informer for ${this.kind.plural} was stopped; create a new one`);
    this.started = true;
    this.reflector.start();
    this.scheduleResync();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.resyncTimer !== undefined) this.clock.clearTimeout(this.resyncTimer);
    this.resyncTimer = undefined;
    await this.reflector.stop();
    // A caller still waiting would otherwise wait forever: this informer will never sync.
    for (const fail of [...this.syncWaiters.values()]) fail(new Error(`informer for ${this.kind.plural} stopped before it synced`));
  }

  hasSynced(): boolean {
    return this.synced;
  }

  waitForSync(signal?: AbortSignal): Promise<void> {
    if (this.synced) return Promise.resolve();
    return new Promise((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const done = (): void => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      const fail = (reason: unknown): void => {
        this.syncWaiters.delete(done);
        signal?.removeEventListener('abort', onAbort);
        reject(reason);
      };
      const onAbort = (): void => fail(signal?.reason);
      this.syncWaiters.set(done, fail);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  isWatching(): boolean {
    return this.reflector.isWatching();
  }

  /**
   * Asks for a resync at least this often; a shared informer resyncs at the shortest
   * period any of its users asked for (0 asks for none).
   */
  requestResync(periodMs: number): void {
    if (periodMs <= 0 || (this.resyncMs > 0 && this.resyncMs <= periodMs)) return;
    this.resyncMs = periodMs;
    if (this.started && !this.stopped) {
      if (this.resyncTimer !== undefined) this.clock.clearTimeout(this.resyncTimer);
      this.scheduleResync();
    }
  }

  private replace(listed: T[]): void {
    // Only the first list is the initial list: a relist announces just what changed while
    // the watch was down, so its adds are creations that were missed, i.e. news.
    const initial = !this.synced;
    // One the transform refuses keeps the version cached before, as on a watch event.
    const items = listed.map((obj) => this.stored(obj) ?? this.cache.get(keyOf(obj))).filter((obj): obj is T => obj !== undefined);
    const diff = diffRelist(this.cache.list(), items);
    // Deletes first: an object recreated under the same name is in both lists.
    for (const obj of diff.deleted) this.cache.remove(keyOf(obj));
    for (const obj of diff.added) this.cache.upsert(obj);
    for (const { newObj } of diff.updated) this.cache.upsert(newObj);
    for (const obj of diff.unchanged) this.cache.upsert(obj);
    if (!this.synced) {
      this.synced = true;
      for (const done of this.syncWaiters.keys()) done();
      this.syncWaiters.clear();
    }
    // Unchanged objects are not re-announced: nothing about them is news, and a relist
    // after every watch hiccup would otherwise look like a resync to every controller.
    for (const obj of diff.deleted) this.dispatch('delete', (h) => h.onDelete?.(obj));
    for (const obj of diff.added) this.dispatch('add', (h) => h.onAdd?.(obj, initial));
    for (const { oldObj, newObj } of diff.updated) this.dispatch('update', (h) => h.onUpdate?.(oldObj, newObj));
  }

  private apply(type: 'ADDED' | 'MODIFIED' | 'DELETED', received: T): void {
    if (type === 'DELETED') {
      // Deleted objects too: a delete handler sees the same shape as every other handler.
      const key = keyOf(received);
      const obj = this.stored(received) ?? this.cache.get(key);
      this.cache.remove(key);
      if (obj) this.dispatch('delete', (h) => h.onDelete?.(obj));
      return;
    }
    // As client-go: an object the transform refuses is not stored; the cache keeps what it had.
    const obj = this.stored(received);
    if (!obj) return;
    const old = this.cache.upsert(obj);
    if (old) this.dispatch('update', (h) => h.onUpdate?.(old, obj));
    else this.dispatch('add', (h) => h.onAdd?.(obj, false));
  }

  /**
   * The form an object is stored and announced in; undefined when the transform threw. One
   * object a transform cannot take is left out with an error, rather than failing the list it
   * came in: a list that failed would fail again on every relist, and the informer would never
   * sync for the sake of one object.
   */
  private stored(obj: T): T | undefined {
    if (!this.transform) return obj;
    try {
      // The transform keeps the object's kind (it only drops or condenses fields).
      return this.transform(obj) as T;
    } catch (err) {
      // The error's class only: a transform's message may quote the field it choked on, and
      // the transforms are there to keep such fields (a Secret's data) out of memory and logs.
      const errorClass = err instanceof Error ? err.name : typeof err;
      this.log.error({ key: keyString(keyOf(obj)), errorClass }, 'informer transform failed; the object is left out of the cache');
      return undefined;
    }
  }

  private scheduleResync(): void {
    if (this.resyncMs <= 0) return;
    this.resyncTimer = this.clock.setTimeout(() => {
      if (this.stopped) return;
      if (this.synced) {
        for (const obj of this.cache.list()) this.dispatch('resync', (h) => h.onUpdate?.(obj, obj));
      }
      this.scheduleResync();
    }, this.resyncMs);
  }

  private dispatch(what: string, call: (h: InformerEventHandler<T>) => void): void {
    // A copy: a handler registered from inside a handler gets its replay, not this event too.
    for (const h of [...this.handlers]) this.invoke(h, what, call);
  }

  private invoke(h: InformerEventHandler<T>, what: string, call: (h: InformerEventHandler<T>) => void): void {
    try {
      call(h);
    } catch (err) {
      // A handler bug must not take the informer (and every other controller) down with it.
      this.log.error({ err, event: what }, 'informer event handler threw');
    }
  }
}
