/**
 * Hands out shared informers: one per (kind, namespace, label selector), so controllers that
 * watch the same objects share one watch connection and one cache.
 */
import type { Logger } from 'pino';
import type { ListerWatcher } from './client';
import { SharedInformer } from './informer';
import type { ReflectorTuning } from './reflector';
import type { Informer, InformerOptions, InformerSource, KubeObject, ResourceKind } from './types';

/** Dependencies of an `InformerFactory`. */
export interface InformerFactoryOptions {
  readonly lw: ListerWatcher;
  readonly logger: Logger;
  /** Applied to every informer the factory creates. */
  readonly reflector?: ReflectorTuning;
}

/** Identity of a shared informer: kind, namespace and label selector. */
export function informerKey(kind: ResourceKind, opts: InformerOptions = {}): string {
  const gv = kind.group === '' ? kind.version : `${kind.group}/${kind.version}`;
  return `${gv}/${kind.plural}|${opts.namespace ?? ''}|${opts.labelSelector ?? ''}`;
}

/** `InformerSource` that shares informers and starts late-comers once it has started. */
export class InformerFactory implements InformerSource {
  // Stored without their object type: one map holds informers of every kind.
  private readonly informers = new Map<string, SharedInformer<KubeObject>>();
  private started = false;

  constructor(private readonly opts: InformerFactoryOptions) {}

  /**
   * The shared informer for `kind` under `opts`. Callers sharing it get the shortest resync
   * period any of them asked for. `T` is the caller's claim about the kind's shape.
   */
  informerFor<T extends KubeObject>(kind: ResourceKind, opts: InformerOptions = {}): Informer<T> {
    const key = informerKey(kind, opts);
    let informer = this.informers.get(key);
    if (!informer) {
      informer = new SharedInformer<KubeObject>({
        ...opts,
        lw: this.opts.lw,
        kind,
        logger: this.opts.logger,
        reflector: this.opts.reflector,
      });
      this.informers.set(key, informer);
      if (this.started) informer.start();
    } else if (opts.resyncPeriodMs) {
      informer.requestResync(opts.resyncPeriodMs);
    }
    return informer as unknown as Informer<T>;
  }

  /** Starts every informer handed out so far and any handed out later. */
  start(): void {
    this.started = true;
    for (const informer of this.informers.values()) informer.start();
  }

  /** Stops every informer. */
  async stop(): Promise<void> {
    this.started = false;
    await Promise.all([...this.informers.values()].map((i) => i.stop()));
  }

  /** Resolves once every informer handed out so far has synced. */
  async waitForSync(signal?: AbortSignal): Promise<void> {
    await Promise.all([...this.informers.values()].map((i) => i.waitForSync(signal)));
  }

  /** True when every informer handed out has synced and holds an open watch. */
  allWatching(): boolean {
    return [...this.informers.values()].every((i) => i.hasSynced() && i.isWatching());
  }
}
