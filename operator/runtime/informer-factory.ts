/**
 * Hands out shared informers: one per (kind, namespace, label selector, field selector), so
 * controllers that watch the same objects share one watch connection and one cache. Every
 * informer strips what no reader uses (managedFields by default) before storing an object.
 */
import type { Logger } from 'pino';
import { Gauge, type Registry } from 'prom-client';
import type { ListerWatcher } from './client';
import { SharedInformer } from './informer';
import type { ReflectorTuning } from './reflector';
import { chainTransforms, stripManagedFields } from './transforms';
import type { Informer, InformerOptions, InformerSource, KubeObject, ResourceKind, Transform } from './types';

/** Name of the gauge that counts cached objects per kind. */
export const CACHED_OBJECTS_METRIC = 'bucketoperator_informer_cached_objects';

/** Dependencies of an `InformerFactory`. */
export interface InformerFactoryOptions {
  readonly lw: ListerWatcher;
  readonly logger: Logger;
  /** Applied to every informer the factory creates. */
  readonly reflector?: ReflectorTuning;
  /**
   * Applied to every object of every informer, before the informer's own transform; `null`
   * stores objects as they arrive. @default stripManagedFields
   */
  readonly defaultTransform?: Transform | null;
  /** Registers {@link CACHED_OBJECTS_METRIC} here, computed from the caches at scrape time. */
  readonly registry?: Registry;
}

/** Identity of a shared informer: kind, namespace, label selector and field selector. */
export function informerKey(kind: ResourceKind, opts: InformerOptions = {}): string {
  const gv = kind.group === '' ? kind.version : `${kind.group}/${kind.version}`;
  return `${gv}/${kind.plural}|${opts.namespace ?? ''}|${opts.labelSelector ?? ''}|${opts.fieldSelector ?? ''}`;
}

interface Entry {
  // Stored without their object type: one map holds informers of every kind.
  readonly informer: SharedInformer<KubeObject>;
  /** The transform the first caller asked for, to catch callers that disagree. */
  readonly requested: Transform | undefined;
}

/** `InformerSource` that shares informers and starts late-comers once it has started. */
export class InformerFactory implements InformerSource {
  private readonly entries = new Map<string, Entry>();
  private readonly defaultTransform: Transform | undefined;
  private started = false;

  constructor(private readonly opts: InformerFactoryOptions) {
    this.defaultTransform = opts.defaultTransform === null ? undefined : (opts.defaultTransform ?? stripManagedFields);
    if (opts.registry) this.registerMetrics(opts.registry);
  }

  /**
   * The shared informer for `kind` under `opts`. Callers sharing it get the shortest resync
   * period any of them asked for. `T` is the caller's claim about the kind's shape (after
   * its transform).
   */
  informerFor<T extends KubeObject>(kind: ResourceKind, opts: InformerOptions = {}): Informer<T> {
    const key = informerKey(kind, opts);
    let entry = this.entries.get(key);
    if (!entry) {
      const informer = new SharedInformer<KubeObject>({
        ...opts,
        transform: chainTransforms(this.defaultTransform, opts.transform),
        lw: this.opts.lw,
        kind,
        logger: this.opts.logger,
        reflector: this.opts.reflector,
      });
      entry = { informer, requested: opts.transform };
      this.entries.set(key, entry);
      if (this.started) informer.start();
    } else {
      if (opts.transform !== undefined && opts.transform !== entry.requested) {
        // Two callers would each believe the cache holds their shape of the object.
        throw new Error(`informer ${key} is shared with a different transform`);
      }
      if (opts.resyncPeriodMs) entry.informer.requestResync(opts.resyncPeriodMs);
    }
    return entry.informer as unknown as Informer<T>;
  }

  /**
   * Stops the informer for `kind` under `opts` and forgets it, so its cache is freed and a
   * later `informerFor` starts afresh. Only for informers a single owner handed out (e.g.
   * one per named object): anyone else still holding it would read a frozen cache.
   */
  async removeInformer(kind: ResourceKind, opts: InformerOptions = {}): Promise<void> {
    const key = informerKey(kind, opts);
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    await entry.informer.stop();
  }

  /** Every informer handed out and not removed, for inspection (metrics, tests). */
  informers(): Informer<KubeObject>[] {
    return [...this.entries.values()].map((e) => e.informer);
  }

  /** Number of cached objects per kind, summed over that kind's informers. */
  cachedObjectCounts(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const { informer } of this.entries.values()) {
      counts.set(informer.kind.kind, (counts.get(informer.kind.kind) ?? 0) + informer.cache.size);
    }
    return counts;
  }

  /** Starts every informer handed out so far and any handed out later. */
  start(): void {
    this.started = true;
    for (const { informer } of this.entries.values()) informer.start();
  }

  /** Stops every informer. */
  async stop(): Promise<void> {
    this.started = false;
    await Promise.all([...this.entries.values()].map((e) => e.informer.stop()));
  }

  /** Resolves once every informer handed out so far has synced. */
  async waitForSync(signal?: AbortSignal): Promise<void> {
    await Promise.all([...this.entries.values()].map((e) => e.informer.waitForSync(signal)));
  }

  /** True when every informer handed out has synced and holds an open watch. */
  allWatching(): boolean {
    return [...this.entries.values()].every((e) => e.informer.hasSynced() && e.informer.isWatching());
  }

  private registerMetrics(registry: Registry): void {
    // A registry outlives factories in tests; the newest factory is the one to report.
    if (registry.getSingleMetric(CACHED_OBJECTS_METRIC)) registry.removeSingleMetric(CACHED_OBJECTS_METRIC);
    const counts = () => this.cachedObjectCounts();
    new Gauge({
      name: CACHED_OBJECTS_METRIC,
      help: 'Number of objects held in the informer caches, per kind.',
      // One series per watched kind: bounded by the code, not by the cluster.
      labelNames: ['kind'],
      registers: [registry],
      collect() {
        this.reset();
        for (const [kind, n] of counts()) this.set({ kind }, n);
      },
    });
  }
}
