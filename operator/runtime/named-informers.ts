/**
 * Informers over individually named objects, after controller-runtime's per-object caches:
 * one field-selected (`metadata.name=<name>`) informer per object something refers to,
 * started when the first reference appears and removed when the last one goes. Nothing else
 * of that kind is listed, watched or cached, so unrelated objects cost nothing.
 *
 * References come from "driver" informers: `trackReferences(configs, refsOf)` keeps the
 * objects each config names watched while that config is cached. The set behaves as one
 * `Informer` (a union cache, handlers on every member), so a controller can watch it with
 * `for`/`watches` like any informer.
 */
import type { Logger } from 'pino';
import type { IndexFunc } from './cache';
import {
  keyOf,
  keyString,
  type Cache,
  type Informer,
  type InformerEventHandler,
  type InformerOptions,
  type InformerSource,
  type KubeObject,
  type ObjectKey,
  type ResourceKind,
  type Transform,
} from './types';

/** Options of a {@link NamedInformers}. */
export interface NamedInformersOptions {
  /** Creates and removes the member informers; must implement `removeInformer`. */
  readonly source: InformerSource;
  readonly kind: ResourceKind;
  readonly logger: Logger;
  /** Applied to every member informer's objects. */
  readonly transform?: Transform;
}

/** A cache read that can first wait for the informer of one named object to fill. */
export interface NamedCache<T extends KubeObject> extends Cache<T> {
  /**
   * Resolves once the informer for `key` has synced, so a following `get` answers "absent"
   * only when the object really is; at once when nothing refers to `key`.
   */
  waitForKey(key: ObjectKey, signal?: AbortSignal): Promise<void>;
}

/** The informers of the objects currently referred to, as one informer. */
export class NamedInformers<T extends KubeObject> implements Informer<T> {
  readonly kind: ResourceKind;
  readonly cache: NamedCache<T>;
  private readonly source: InformerSource & Required<Pick<InformerSource, 'removeInformer'>>;
  private readonly log: Logger;
  private readonly transform: Transform | undefined;
  /** Member informers by `namespace/name` of the object each one watches. */
  private readonly members = new Map<string, Informer<T>>();
  /** How many references each `namespace/name` has. */
  private readonly refs = new Map<string, number>();
  /** What each referrer refers to, so an update releases what it no longer names. */
  private readonly held = new Map<string, readonly ObjectKey[]>();
  private readonly handlers: InformerEventHandler<T>[] = [];
  private readonly indexes = new Map<string, IndexFunc<T>>();
  private readonly drivers: Informer<KubeObject>[] = [];
  private started = false;
  private stopped = false;

  constructor(opts: NamedInformersOptions) {
    const { source } = opts;
    if (!source.removeInformer) throw new Error('NamedInformers needs an InformerSource that can remove informers');
    this.source = source as InformerSource & Required<Pick<InformerSource, 'removeInformer'>>;
    this.kind = opts.kind;
    this.transform = opts.transform;
    this.log = opts.logger.child({ informer: opts.kind.plural, named: true });
    this.cache = new UnionCache<T>(this.members, this.indexes, (key, signal) => this.waitForKey(key, signal));
  }

  /**
   * Keeps the objects `refsOf(obj)` watched while `obj` is in `driver`'s cache (deleting
   * objects included: they may still need what they refer to). `waitForSync` waits for the
   * driver first, so that once it resolves every object the driver's objects refer to is cached.
   */
  trackReferences<O extends KubeObject>(driver: Informer<O>, refsOf: (obj: O) => readonly ObjectKey[]): this {
    this.drivers.push(driver as unknown as Informer<KubeObject>);
    const referrer = (obj: O): string => `${driver.kind.plural}/${keyString(keyOf(obj))}`;
    driver.addEventHandler({
      onAdd: (obj) => this.hold(referrer(obj), refsOf(obj)),
      onUpdate: (_old, obj) => this.hold(referrer(obj), refsOf(obj)),
      onDelete: (obj) => this.hold(referrer(obj), []),
    });
    if (this.started) driver.start();
    return this;
  }

  /** Declares everything `referrer` refers to, replacing what it referred to before. */
  hold(referrer: string, keys: readonly ObjectKey[]): void {
    if (this.stopped) return;
    const before = this.held.get(referrer) ?? [];
    const next = dedupe(keys);
    if (next.length === 0) this.held.delete(referrer);
    else this.held.set(referrer, next);
    // Acquire first, so a reference moving between two referrers never drops to zero.
    for (const key of next) this.acquire(key);
    for (const key of before) this.release(key);
  }

  /** True when some referrer refers to `key`. */
  isTracked(key: ObjectKey): boolean {
    return this.members.has(keyString(key));
  }

  /** Adds a handler to every member, current and future (current ones replay their objects). */
  addEventHandler(handler: InformerEventHandler<T>): void {
    this.handlers.push(handler);
    for (const member of this.members.values()) member.addEventHandler(handler);
  }

  /** Starts the drivers (idempotent) and every member, and members added later. */
  start(): void {
    if (this.started) return;
    if (this.stopped) throw new Error(`named informers for ${this.kind.plural} were stopped`);
    this.started = true;
    // A driver nobody else started would leave waitForSync waiting forever.
    for (const driver of this.drivers) driver.start();
    for (const member of this.members.values()) member.start();
  }

  /** Stops every member; the drivers belong to their own users. */
  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all([...this.members.values()].map((m) => m.stop()));
  }

  /** True once the drivers and every current member have synced. */
  hasSynced(): boolean {
    return this.drivers.every((d) => d.hasSynced()) && [...this.members.values()].every((m) => m.hasSynced());
  }

  /** Resolves once the drivers have synced and then every member they led to. */
  async waitForSync(signal?: AbortSignal): Promise<void> {
    for (const driver of this.drivers) await driver.waitForSync(signal);
    // Members come and go while we wait; done when none is left unsynced.
    for (;;) {
      const pending = [...this.members.entries()].filter(([, m]) => !m.hasSynced());
      if (pending.length === 0) return;
      await Promise.all(pending.map(([key, m]) => this.waitForMember(key, m, signal)));
    }
  }

  /** True while every member holds an open watch (and trivially with no members). */
  isWatching(): boolean {
    return [...this.members.values()].every((m) => m.isWatching());
  }

  private async waitForKey(key: ObjectKey, signal?: AbortSignal): Promise<void> {
    const k = keyString(key);
    const member = this.members.get(k);
    if (member && !member.hasSynced()) await this.waitForMember(k, member, signal);
  }

  private async waitForMember(key: string, member: Informer<T>, signal?: AbortSignal): Promise<void> {
    try {
      await member.waitForSync(signal);
    } catch (err) {
      // A member removed while we waited was released: nothing refers to it any more.
      if (signal?.aborted || this.members.get(key) === member) throw err;
    }
  }

  private acquire(key: ObjectKey): void {
    const k = keyString(key);
    const count = this.refs.get(k) ?? 0;
    this.refs.set(k, count + 1);
    if (count > 0) return;
    const member = this.source.informerFor<T>(this.kind, this.memberOptions(key));
    for (const [name, fn] of this.indexes) member.cache.addIndex(name, fn);
    for (const handler of this.handlers) member.addEventHandler(handler);
    this.members.set(k, member);
    if (this.started) member.start();
    this.log.debug({ namespace: key.namespace, name: key.name }, 'watching a referenced object');
  }

  private release(key: ObjectKey): void {
    const k = keyString(key);
    const count = (this.refs.get(k) ?? 0) - 1;
    if (count > 0) {
      this.refs.set(k, count);
      return;
    }
    this.refs.delete(k);
    this.members.delete(k);
    // No delete events: nothing refers to the object any more, and the change that released
    // it (a referrer edited or deleted) is an event of its own.
    this.source.removeInformer(this.kind, this.memberOptions(key)).catch((err: unknown) => {
      this.log.error({ err, namespace: key.namespace, name: key.name }, 'stopping an informer failed');
    });
    this.log.debug({ namespace: key.namespace, name: key.name }, 'stopped watching an unreferenced object');
  }

  private memberOptions(key: ObjectKey): InformerOptions {
    return {
      ...(key.namespace ? { namespace: key.namespace } : {}),
      fieldSelector: `metadata.name=${key.name}`,
      ...(this.transform ? { transform: this.transform } : {}),
    };
  }
}

/** Reads across the member informers' caches. */
class UnionCache<T extends KubeObject> implements NamedCache<T> {
  constructor(
    private readonly members: ReadonlyMap<string, Informer<T>>,
    private readonly indexes: Map<string, IndexFunc<T>>,
    readonly waitForKey: (key: ObjectKey, signal?: AbortSignal) => Promise<void>,
  ) {}

  get(key: ObjectKey): T | undefined {
    return this.members.get(keyString(key))?.cache.get(key);
  }

  list(namespace?: string): T[] {
    return [...this.members.values()].flatMap((m) => m.cache.list(namespace));
  }

  byIndex(indexName: string, value: string): T[] {
    return [...this.members.values()].flatMap((m) => m.cache.byIndex(indexName, value));
  }

  addIndex(indexName: string, fn: (obj: T) => string[]): void {
    this.indexes.set(indexName, fn);
    for (const m of this.members.values()) m.cache.addIndex(indexName, fn);
  }
}

function dedupe(keys: readonly ObjectKey[]): ObjectKey[] {
  const seen = new Map<string, ObjectKey>();
  for (const key of keys) if (key.name) seen.set(keyString(key), { namespace: key.namespace, name: key.name });
  return [...seen.values()];
}
