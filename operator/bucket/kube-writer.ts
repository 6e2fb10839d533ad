/**
 * {@link ObjectWriter} bound to the runtime's client helpers. Finalizer and metadata patches
 * carry the resourceVersion they were computed from, so a stale cache yields a 409 instead of a
 * lost update; so do status patches, which are diffs against the object as read.
 */
import { PROVIDER_REF_FIELD, type StorageBucket } from '../api/v1';
import {
  addFinalizer,
  ApiError,
  applyObject,
  isNotFound,
  patchStatus,
  removeFinalizer,
  type KubeClient,
  type KubeObject,
  type ObjectKey,
  type ResourceKind,
} from '../runtime';
import { STORAGE_BUCKET } from './kinds';
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
    patchMetadata: <T extends KubeObject>(
      kind: ResourceKind,
      obj: T,
      change: { finalizers?: readonly string[]; annotations?: Readonly<Record<string, string>> },
    ) =>
      client.patch<T>(
        kind,
        obj.metadata?.namespace ?? '',
        obj.metadata?.name ?? '',
        { metadata: { resourceVersion: obj.metadata?.resourceVersion, ...change } },
        'merge',
        { fieldManager },
      ),
    // Preconditioned on the resourceVersion the status was computed from: a status derived
    // from a stale cache (a failure reported from an old snapshot) must not overwrite a
    // fresher one, such as a Ready written meanwhile; it fails with Conflict and is retried.
    patchStatus: <T extends KubeObject>(kind: ResourceKind, obj: T, status: Record<string, unknown>) =>
      patchStatus(client, kind, obj as T & { status?: unknown }, status, { fieldManager, optimistic: true }),
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
    async configHasUsers(config: ObjectKey): Promise<boolean> {
      try {
        // spec.providerRef.name is a selectable field of the CRD, so the server filters. Asked
        // only when the cache already counts no users, so this is normally one empty page.
        const { items } = await client.list<StorageBucket>(STORAGE_BUCKET, {
          namespace: config.namespace,
          fieldSelector: `${PROVIDER_REF_FIELD}=${config.name}`,
          limit: 1,
        });
        return items.length > 0;
      } catch (err) {
        // A CRD installed before the field was selectable answers 400: list the namespace's
        // StorageBuckets instead (our own kind, so bounded by our own objects).
        if (!(err instanceof ApiError && err.status === 400)) throw err;
        const { items } = await client.list<StorageBucket>(STORAGE_BUCKET, { namespace: config.namespace });
        return items.some((b) => b.spec?.providerRef?.name === config.name);
      }
    },
  };
}
