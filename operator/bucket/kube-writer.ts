/**
 * {@link ObjectWriter} bound to the runtime's client helpers. Finalizer and metadata patches
 * carry the resourceVersion they were computed from, so a stale cache yields a 409 instead of a
 * lost update; status patches are diffs against the object as read.
 */
import {
  addFinalizer, applyObject, isNotFound, patchStatus, removeFinalizer, type KubeClient, type KubeObject, type ObjectKey,
  type ResourceKind,
} from '../runtime';
import type { ObjectWriter } from './writer';

/** Builds the writer used by the bucket controllers. */
export function kubeWriter(client: KubeClient, fieldManager: string): ObjectWriter {
  return {
    addFinalizer: (kind, obj, finalizer) => addFinalizer(client, kind, obj, finalizer, { fieldManager }),
    async removeFinalizer(kind, obj, finalizer) {
      try {
        await removeFinalizer(client, kind, obj, finalizer, { fieldManager });
      } catch (err) {
        // Already gone: an earlier attempt removed the last finalizer.
        if (!isNotFound(err)) throw err;
      }
    },
    patchMetadata: <T extends KubeObject>(kind: ResourceKind, obj: T, change: { finalizers?: readonly string[]; annotations?: Readonly<Record<string, string>> }) =>
      client.patch<T>(
        kind,
        obj.metadata?.namespace ?? '',
        obj.metadata?.name ?? '',
        { metadata: { resourceVersion: obj.metadata?.resourceVersion, ...change } },
        'merge',
        { fieldManager },
      ),
    patchStatus: <T extends KubeObject>(kind: ResourceKind, obj: T, status: Record<string, unknown>) =>
      patchStatus(client, kind, obj as T & { status?: unknown }, status, { fieldManager }),
    async apply(kind, obj) {
      await applyObject(client, kind, obj, { fieldManager });
    },
    async create(kind, obj) {
      await client.create(kind, obj, { fieldManager });
    },
    async get<T extends KubeObject>(kind: ResourceKind, key: ObjectKey): Promise<T | undefined> {
      try {
        return await client.get<T>(kind, key.namespace, key.name);
      } catch (err) {
        if (isNotFound(err)) return undefined;
        throw err;
      }
    },
  };
}
