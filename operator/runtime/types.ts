/**
 * Shared shapes of the runtime: object keys, resource kinds, the informer and cache seams.
 * The reflector/informer side implements them; controller and manager consume them, so
 * both halves of the runtime agree on one contract.
 */
import type { V1ObjectMeta } from '@kubernetes/client-node';

/** namespace/name of an object; namespace is empty for cluster-scoped kinds. */
export interface ObjectKey {
  readonly namespace: string;
  readonly name: string;
}

/** Any Kubernetes object as it comes off the wire. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: V1ObjectMeta;
}

/** Identifies a resource type for list/watch/apply; `group` is '' for the core API. */
export interface ResourceKind {
  readonly group: string;
  readonly version: string;
  readonly kind: string;
  readonly plural: string;
  readonly namespaced: boolean;
}

/** Callbacks an informer invokes after its cache has been updated. */
export interface InformerEventHandler<T extends KubeObject> {
  /**
   * `isInInitialList` is true for objects the informer's first list delivered (and for the
   * replay a late handler gets), false for objects that appeared later; a controller uses it
   * to put startup work behind new work, as client-go's `OnAdd(obj, isInInitialList)`.
   */
  onAdd?(obj: T, isInInitialList: boolean): void;
  onUpdate?(oldObj: T, newObj: T): void;
  onDelete?(obj: T): void;
}

/** Read side of an informer: a local, eventually consistent copy of the watched objects. */
export interface Cache<T extends KubeObject> {
  get(key: ObjectKey): T | undefined;
  list(namespace?: string): T[];
  /** Objects whose index function returned `value` for the index `indexName`. */
  byIndex(indexName: string, value: string): T[];
  /** Registers an index; may be called before or after the informer starts. */
  addIndex(indexName: string, fn: (obj: T) => string[]): void;
}

/** A shared informer for one kind (and optionally one namespace). */
export interface Informer<T extends KubeObject> {
  readonly kind: ResourceKind;
  readonly cache: Cache<T>;
  addEventHandler(handler: InformerEventHandler<T>): void;
  /** Starts list+watch in the background; never throws, reconnects on its own. */
  start(): void;
  stop(): Promise<void>;
  /** True once the initial list has been delivered to the cache. */
  hasSynced(): boolean;
  waitForSync(signal?: AbortSignal): Promise<void>;
  /** True while a watch connection is established (used by health checks). */
  isWatching(): boolean;
}

/**
 * Rewrites an object off the wire before it enters an informer's store, after
 * controller-runtime's `cache.TransformFunc`: a cache should keep only what its readers use.
 * It receives a freshly decoded object that nobody else holds, so it may change it in place;
 * it must keep `metadata.namespace`, `name`, `uid` and `resourceVersion`, which the store and
 * relists key on.
 */
export type Transform = (obj: KubeObject) => KubeObject;

/** Options for an informer. */
export interface InformerOptions {
  /** Watch only this namespace; all namespaces when empty. */
  readonly namespace?: string;
  readonly labelSelector?: string;
  /** Server-side field selector, e.g. `metadata.name=creds` to watch one object by name. */
  readonly fieldSelector?: string;
  /** Re-deliver every cached object as an update this often; 0 disables. @default 0 */
  readonly resyncPeriodMs?: number;
  /**
   * Applied to every object before it is stored (after the factory's default transform).
   * Informers are shared by (kind, namespace, selectors), so every caller of one informer
   * must pass the same function; the first caller's is the one in force.
   */
  readonly transform?: Transform;
}

/** Hands out informers; one per (kind, namespace, selectors), shared between controllers. */
export interface InformerSource {
  informerFor<T extends KubeObject>(kind: ResourceKind, opts?: InformerOptions): Informer<T>;
  /**
   * Stops and forgets the informer `informerFor(kind, opts)` handed out, freeing its cache.
   * Optional: only sources behind short-lived informers (one per named object) need it.
   */
  removeInformer?(kind: ResourceKind, opts?: InformerOptions): Promise<void>;
}

/** Builds the key of an object. */
export function keyOf(obj: KubeObject): ObjectKey {
  return { namespace: obj.metadata?.namespace ?? '', name: obj.metadata?.name ?? '' };
}

/** Formats a key as `namespace/name` (or `name` for cluster-scoped objects). */
export function keyString(key: ObjectKey): string {
  return key.namespace ? `${key.namespace}/${key.name}` : key.name;
}
