/**
 * Adding and removing a finalizer without losing anyone else's update.
 *
 * The write is a JSON patch that also sets `metadata.resourceVersion` to the version the
 * caller read. The API server then applies its optimistic concurrency check: if the object
 * changed since (another controller added or removed a finalizer, say), the patch fails with
 * 409 Conflict instead of writing a list computed from a stale copy. A JSON-patch `test`
 * op would also refuse, but the server answers a failed test with a generic 422 Invalid
 * that cannot be told apart from a malformed patch, so the version check is used instead.
 *
 * Guarantees: no request when the object is already in the desired state; on success the
 * returned object is what the server stored; on Conflict nothing was written and the caller
 * should requeue and retry from a fresh read.
 */
import type { JsonPatchOp, KubeClient, WriteOptions } from './client';
import type { KubeObject, ResourceKind } from './types';

/** The client capability the helpers need. */
export type FinalizerPatcher = Pick<KubeClient, 'patch'>;

/** True when `obj` carries `finalizer`. */
export function hasFinalizer(obj: KubeObject, finalizer: string): boolean {
  return obj.metadata?.finalizers?.includes(finalizer) ?? false;
}

/**
 * The JSON patch that adds or removes `finalizer` on `obj` as read, or `undefined` when
 * `obj` is already in the desired state. Pure, so the exact wire form is unit-tested.
 */
export function finalizerPatch(obj: KubeObject, finalizer: string, change: 'add' | 'remove'): JsonPatchOp[] | undefined {
  const current = obj.metadata?.finalizers ?? [];
  const present = current.includes(finalizer);
  if (present === (change === 'add')) return undefined;
  const resourceVersion = obj.metadata?.resourceVersion;
  if (!resourceVersion) throw new Error('object has no metadata.resourceVersion; read it from the API first');
  const next = change === 'add' ? [...current, finalizer] : current.filter((f) => f !== finalizer);
  return [
    { op: 'replace', path: '/metadata/resourceVersion', value: resourceVersion },
    // `add` on an existing member replaces it, so this also covers an absent list.
    { op: 'add', path: '/metadata/finalizers', value: next },
  ];
}

async function write<T extends KubeObject>(
  client: FinalizerPatcher,
  kind: ResourceKind,
  obj: T,
  finalizer: string,
  change: 'add' | 'remove',
  opts: WriteOptions,
): Promise<T> {
  const patch = finalizerPatch(obj, finalizer, change);
  if (!patch) return obj;
  const name = obj.metadata?.name;
  if (!name) throw new Error('object has no metadata.name');
  return client.patch<T>(kind, obj.metadata?.namespace ?? '', name, patch, 'json', opts);
}

/**
 * Adds `finalizer` unless present. Call it before creating anything external, so a delete
 * can never happen without the cleanup getting a chance to run.
 */
export function addFinalizer<T extends KubeObject>(
  client: FinalizerPatcher,
  kind: ResourceKind,
  obj: T,
  finalizer: string,
  opts: WriteOptions = {},
): Promise<T> {
  return write(client, kind, obj, finalizer, 'add', opts);
}

/**
 * Removes `finalizer` if present. Call it only after external cleanup succeeded; when it
 * was the last finalizer of a deleting object, the server deletes the object and the
 * returned copy is its final state. NotFound is passed to the caller, who may treat it as done.
 */
export function removeFinalizer<T extends KubeObject>(
  client: FinalizerPatcher,
  kind: ResourceKind,
  obj: T,
  finalizer: string,
  opts: WriteOptions = {},
): Promise<T> {
  return write(client, kind, obj, finalizer, 'remove', opts);
}
