/**
 * The Kubernetes API server as the model needs it, in memory: objects by kind and key with
 * resourceVersions (one counter, so a re-created object never matches an old version), uids
 * that change on re-create, generations that move only with the spec, finalizers and
 * deletionTimestamp (an object with finalizers is only marked; no finalizer may be added
 * once it is), garbage collection of owned objects when their owner goes, and a watch log
 * the runner turns into work-queue keys. Users write through {@link ModelApiServer.userCreate}
 * and friends; the operator through the {@link ObjectWriter} methods.
 */
import type { StorageBucket } from '../../../operator/api/v1';
import type { ObjectWriter } from '../../../operator/bucket/writer';
import { ApiError, type KubeObject, type ObjectKey, type ResourceKind } from '../../../operator/runtime';

/** One change as a watch delivers it. */
export interface WatchEvent {
  readonly kind: string;
  readonly type: 'add' | 'update' | 'delete';
  readonly old?: KubeObject;
  readonly obj: KubeObject;
}

const id = (kind: string, k: ObjectKey) => `${kind}/${k.namespace}/${k.name}`;
const keyOfObj = (o: KubeObject): ObjectKey => ({ namespace: o.metadata?.namespace ?? '', name: o.metadata?.name ?? '' });

type WithSpec = KubeObject & { spec?: unknown; status?: unknown };

/** A {@link ModelApiServer}'s state as plain data. */
export interface ApiServerState {
  readonly objects: readonly (readonly [string, KubeObject & { spec?: unknown; status?: unknown }])[];
  readonly previous: readonly (readonly [string, KubeObject & { spec?: unknown; status?: unknown }])[];
  readonly rv: number;
  readonly uids: number;
  readonly events: WatchEvent[];
}

/** An in-memory API server with the write rules the operator depends on. */
export class ModelApiServer implements ObjectWriter {
  private readonly objects = new Map<string, WithSpec>();
  private rv = 1000;
  private uids = 0;
  /** Each object's version before its latest write (or its last, once removed): what a lagging cache shows. */
  private readonly previous = new Map<string, WithSpec>();
  /** Changes not yet taken by the runner, oldest first. */
  private events: WatchEvent[] = [];
  /** Frozen time every timestamp is written with (the model's clock moves it). */
  now: () => Date = () => new Date(0);

  /** The whole state as plain data, for {@link ModelApiServer.load} (exhaustive search). */
  dump(): ApiServerState {
    return structuredClone({ objects: [...this.objects], previous: [...this.previous], rv: this.rv, uids: this.uids, events: this.events });
  }

  /** Replaces the whole state with one {@link ModelApiServer.dump} returned. */
  load(state: ApiServerState): void {
    const s = structuredClone(state);
    this.objects.clear();
    for (const [k, v] of s.objects) this.objects.set(k, v);
    this.previous.clear();
    for (const [k, v] of s.previous) this.previous.set(k, v);
    this.rv = s.rv;
    this.uids = s.uids;
    this.events = s.events;
  }

  /** The events since the last call, oldest first. */
  drainEvents(): WatchEvent[] {
    const out = this.events;
    this.events = [];
    return out;
  }

  /** A copy of the stored object, or undefined. */
  read<T extends KubeObject>(kind: string, key: ObjectKey): T | undefined {
    const o = this.objects.get(id(kind, key));
    return o ? (structuredClone(o) as T) : undefined;
  }

  /** The version before the latest write of the object (its last version once it is gone), or undefined. */
  lagging<T extends KubeObject>(kind: string, key: ObjectKey): T | undefined {
    const o = this.previous.get(id(kind, key));
    return o ? (structuredClone(o) as T) : undefined;
  }

  /** Copies of every stored object of `kind`, ordered by key. */
  list<T extends KubeObject>(kind: string): T[] {
    return [...this.objects.entries()]
      .filter(([k]) => k.startsWith(`${kind}/`))
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([, v]) => structuredClone(v) as T);
  }

  /** Creates an object as a user would (fresh uid, generation 1); AlreadyExists when taken. */
  userCreate<T extends KubeObject>(kind: string, obj: T): T {
    const key = keyOfObj(obj);
    if (this.objects.has(id(kind, key))) throw new ApiError(409, 'AlreadyExists', `${kind} ${key.namespace}/${key.name} already exists`);
    const meta = obj.metadata ?? {};
    const stored: WithSpec = structuredClone({
      ...obj,
      metadata: {
        ...meta,
        uid: `uid-${++this.uids}`,
        generation: 1,
        resourceVersion: String(++this.rv),
        creationTimestamp: this.now(),
        deletionTimestamp: undefined,
      },
      status: undefined,
    });
    this.cleanUndefined(stored);
    // A removed predecessor stays what a lagging cache shows: one that has not seen the
    // deletion has not seen this create either.
    this.objects.set(id(kind, key), stored);
    this.events.push({ kind, type: 'add', obj: structuredClone(stored) });
    return structuredClone(stored) as T;
  }

  /**
   * Replaces spec, labels, annotations or data of the live object as `change` returns them
   * (a user's read-modify-write that always reads the latest); the generation moves when the
   * spec changed. Undefined when the object does not exist.
   */
  userUpdate<T extends KubeObject>(kind: string, key: ObjectKey, change: (live: T) => T): T | undefined {
    const live = this.read<T>(kind, key);
    if (!live) return undefined;
    const next = change(structuredClone(live)) as WithSpec;
    const before = live as WithSpec;
    const metadata = {
      ...next.metadata,
      uid: before.metadata?.uid,
      resourceVersion: before.metadata?.resourceVersion,
      generation: before.metadata?.generation,
      finalizers: before.metadata?.finalizers,
      deletionTimestamp: before.metadata?.deletionTimestamp,
    };
    if (JSON.stringify(next.spec) !== JSON.stringify(before.spec)) metadata.generation = (before.metadata?.generation ?? 0) + 1;
    return this.store(kind, { ...next, metadata, status: before.status }) as T;
  }

  /**
   * Replaces the status of the live object with what `change` returns, as a user's write of the
   * status subresource. Undefined when the object does not exist.
   */
  userPatchStatus<T extends KubeObject>(
    kind: string,
    key: ObjectKey,
    change: (status: Record<string, unknown>) => Record<string, unknown>,
  ): T | undefined {
    const live = this.objects.get(id(kind, key));
    if (!live) return undefined;
    const status = change(structuredClone((live.status ?? {}) as Record<string, unknown>));
    return this.store(kind, { ...structuredClone(live), status }) as T;
  }

  /** Removes an object at once, finalizers or not, as a lost cluster or an etcd restore does. */
  vanish(kind: string, key: ObjectKey): void {
    this.remove(kind, key);
  }

  /**
   * Deletes as `kubectl delete` does: with finalizers the object is only marked
   * (deletionTimestamp), without it goes at once and its dependents are collected.
   */
  userDelete(kind: string, key: ObjectKey): void {
    const live = this.objects.get(id(kind, key));
    if (!live) return;
    if ((live.metadata?.finalizers ?? []).length === 0) {
      this.remove(kind, key);
      return;
    }
    if (live.metadata?.deletionTimestamp) return;
    this.store(kind, { ...structuredClone(live), metadata: { ...structuredClone(live.metadata), deletionTimestamp: this.now() } });
  }

  /** Removes an object whatever its finalizers (a namespace's end, a restore): also collects dependents. */
  private remove(kind: string, key: ObjectKey): void {
    const live = this.objects.get(id(kind, key));
    if (!live) return;
    this.objects.delete(id(kind, key));
    this.previous.set(id(kind, key), live);
    this.events.push({ kind, type: 'delete', obj: structuredClone(live) });
    this.collectDependents(live.metadata?.uid);
  }

  /** The garbage collector: objects with an ownerReference to a uid that no longer exists go too. */
  private collectDependents(uid: string | undefined): void {
    if (!uid) return;
    for (const [k, o] of [...this.objects.entries()]) {
      if (!(o.metadata?.ownerReferences ?? []).some((r) => r.uid === uid)) continue;
      const [kind = ''] = k.split('/');
      this.userDelete(kind, keyOfObj(o));
    }
  }

  /** Stores `obj` under a new resourceVersion (or removes it when deleting without finalizers). */
  private store(kind: string, obj: WithSpec): WithSpec {
    const key = keyOfObj(obj);
    const old = this.objects.get(id(kind, key));
    const stored = structuredClone({ ...obj, metadata: { ...obj.metadata, resourceVersion: String(++this.rv) } });
    this.cleanUndefined(stored);
    if (stored.metadata?.deletionTimestamp && (stored.metadata.finalizers ?? []).length === 0) {
      this.objects.set(id(kind, key), stored);
      this.remove(kind, key);
      return structuredClone(stored);
    }
    if (old) this.previous.set(id(kind, key), old);
    else this.previous.delete(id(kind, key));
    this.objects.set(id(kind, key), stored);
    this.events.push({ kind, type: old ? 'update' : 'add', ...(old ? { old: structuredClone(old) } : {}), obj: structuredClone(stored) });
    return structuredClone(stored);
  }

  private cleanUndefined(o: WithSpec): void {
    const meta = o.metadata as Record<string, unknown> | undefined;
    if (meta) for (const k of Object.keys(meta)) if (meta[k] === undefined) delete meta[k];
    if (o.status === undefined) delete o.status;
  }

  /** The live object if `obj`'s resourceVersion is current; Conflict or NotFound otherwise. */
  private precondition(kind: ResourceKind, obj: KubeObject): WithSpec {
    const live = this.objects.get(id(kind.kind, keyOfObj(obj)));
    if (!live) throw new ApiError(404, 'NotFound', `${kind.kind} ${obj.metadata?.name ?? ''} not found`);
    const rv = obj.metadata?.resourceVersion;
    if (rv && rv !== live.metadata?.resourceVersion) {
      throw new ApiError(409, 'Conflict', 'the object has been modified; please apply your changes to the latest version and try again');
    }
    return structuredClone(live);
  }

  private setFinalizers(kind: ResourceKind, live: WithSpec, finalizers: readonly string[]): WithSpec {
    const before = live.metadata?.finalizers ?? [];
    if (live.metadata?.deletionTimestamp && finalizers.some((f) => !before.includes(f))) {
      throw new ApiError(422, 'Invalid', `${kind.kind} ${live.metadata.name ?? ''}: no new finalizers can be added if the object is being deleted`);
    }
    return { ...live, metadata: { ...live.metadata, finalizers: [...finalizers] } };
  }

  async addFinalizer<T extends KubeObject>(kind: ResourceKind, obj: T, finalizer: string): Promise<T> {
    const live = this.precondition(kind, obj);
    if ((live.metadata?.finalizers ?? []).includes(finalizer)) return structuredClone(live) as T;
    return this.store(kind.kind, this.setFinalizers(kind, live, [...(live.metadata?.finalizers ?? []), finalizer])) as T;
  }

  async patchMetadata<T extends KubeObject>(
    kind: ResourceKind,
    obj: T,
    change: { finalizers?: readonly string[]; annotations?: Readonly<Record<string, string>> },
  ): Promise<T> {
    let live = this.precondition(kind, obj);
    if (change.finalizers) live = this.setFinalizers(kind, live, change.finalizers);
    if (change.annotations) live = { ...live, metadata: { ...live.metadata, annotations: { ...live.metadata?.annotations, ...change.annotations } } };
    return this.store(kind.kind, live) as T;
  }

  async removeFinalizer<T extends KubeObject>(kind: ResourceKind, obj: T, finalizer: string): Promise<void> {
    if (!(obj.metadata?.finalizers ?? []).includes(finalizer)) return;
    let live: WithSpec;
    try {
      live = this.precondition(kind, obj);
    } catch (err) {
      // As kube-writer: NotFound means an earlier attempt removed the last finalizer.
      if (err instanceof ApiError && err.status === 404) return;
      throw err;
    }
    this.store(kind.kind, { ...live, metadata: { ...live.metadata, finalizers: (live.metadata?.finalizers ?? []).filter((f) => f !== finalizer) } });
  }

  async patchStatus<T extends KubeObject>(kind: ResourceKind, obj: T, status: Record<string, unknown>): Promise<T> {
    const live = this.precondition(kind, obj);
    return this.store(kind.kind, { ...live, status: structuredClone(status) }) as T;
  }

  async apply(kind: ResourceKind, obj: KubeObject): Promise<void> {
    const live = this.objects.get(id(kind.kind, keyOfObj(obj)));
    if (!live) {
      this.userCreate(kind.kind, obj);
      return;
    }
    const desired = obj as WithSpec & Record<string, unknown>;
    const merged: WithSpec & Record<string, unknown> = { ...structuredClone(live), ...structuredClone(desired) };
    merged.metadata = {
      ...live.metadata,
      labels: { ...live.metadata?.labels, ...desired.metadata?.labels },
      annotations: { ...live.metadata?.annotations, ...desired.metadata?.annotations },
      ownerReferences: desired.metadata?.ownerReferences ?? live.metadata?.ownerReferences,
    };
    this.store(kind.kind, merged);
  }

  async create(kind: ResourceKind, obj: KubeObject): Promise<void> {
    this.userCreate(kind.kind, obj);
  }

  async get<T extends KubeObject>(kind: ResourceKind, key: ObjectKey): Promise<T | undefined> {
    return this.read<T>(kind.kind, key);
  }

  async configHasUsers(config: ObjectKey): Promise<boolean> {
    return this.list<StorageBucket>('StorageBucket').some(
      (b) => b.metadata.namespace === config.namespace && b.spec.providerRef.name === config.name,
    );
  }
}
