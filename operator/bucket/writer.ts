/**
 * The writes the bucket controllers make to Kubernetes, as one small seam. setup.ts binds it
 * to the runtime's client helpers; tests of the orchestrator can pass plain objects.
 */
import type { KubeObject, ObjectKey, ResourceKind } from '../runtime';

/** Kubernetes writes used by the reconcilers. */
export interface ObjectWriter {
  /** Adds `finalizer`; fails with a conflict rather than overwrite a concurrent change. */
  addFinalizer<T extends KubeObject>(kind: ResourceKind, obj: T, finalizer: string): Promise<T>;
  /**
   * Sets finalizers and annotations in one merge patch that carries the resourceVersion `obj`
   * was read at, so it fails with Conflict when `obj` was stale: this is what makes minting an
   * idempotency key safe against a lagging cache.
   */
  patchMetadata<T extends KubeObject>(
    kind: ResourceKind,
    obj: T,
    change: { finalizers?: readonly string[]; annotations?: Readonly<Record<string, string>> },
  ): Promise<T>;
  /** Removes `finalizer`; a no-op when it is already gone or the object is deleted. */
  removeFinalizer<T extends KubeObject>(kind: ResourceKind, obj: T, finalizer: string): Promise<void>;
  /**
   * Writes `status` (the whole desired status) through the status subresource as a merge
   * patch of what differs from `obj.status`.
   */
  patchStatus<T extends KubeObject>(kind: ResourceKind, obj: T, status: Record<string, unknown>): Promise<T>;
  /** Server-side applies an owned object with the operator's field manager. */
  apply(kind: ResourceKind, obj: KubeObject): Promise<void>;
  /**
   * Creates `obj` (a POST, never an apply): fails with AlreadyExists instead of touching an
   * object of that name someone else made.
   */
  create(kind: ResourceKind, obj: KubeObject): Promise<void>;
  /** Reads one object from the API server, bypassing the caches; undefined when it does not exist. */
  get<T extends KubeObject>(kind: ResourceKind, key: ObjectKey): Promise<T | undefined>;

  /**
   * Whether any StorageBucket in `config.namespace` names the config `config.name`, asked of
   * the API server rather than the cache: a bucket created a moment ago may not be cached yet,
   * and letting the config go then would leave that bucket without a way to deprovision.
   */
  configHasUsers(config: ObjectKey): Promise<boolean>;
}

/** Records Kubernetes Events about an object; never throws. */
export interface EventSink {
  event(regarding: KubeObject, type: 'Normal' | 'Warning', reason: string, action: string, note: string): void;
}

/**
 * Told about writes that failed where the failure cannot be returned (a status written while
 * another failure is being reported), so missing RBAC shows up as a warning and a metric.
 */
export interface WriteFailures {
  report(what: { readonly resource: string; readonly verb: string }, err: unknown): void;
}

/**
 * Waits for every write and then throws the first failure in argument order: writes that do
 * not depend on each other go out together, and none is abandoned half-way because another
 * failed first.
 */
export async function settled(...writes: readonly (Promise<unknown> | undefined)[]): Promise<void> {
  const results = await Promise.allSettled(writes);
  for (const r of results) if (r.status === 'rejected') throw r.reason;
}
