/**
 * {@link ObjectWriter} bound to the runtime's client helpers. Finalizer and metadata patches
 * carry the resourceVersion they were computed from, so a stale cache yields a 409 instead of a
 * lost update; so do status patches, which are diffs against the object as read.
 */
import type { StorageBucket } from '../api/v1';
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
import { ownVersion, type OwnVersion } from './own-version';
import type { ObjectWriter } from './writer';

/**
 * Builds the writer used by the bucket controllers. Callers pass v1 objects and kinds; `own`
 * says which version of the operator's kinds goes on the wire (converted here both ways).
 */
export function kubeWriter(client: KubeClient, fieldManager: string, own: OwnVersion = ownVersion()): ObjectWriter {
  const read = <T extends KubeObject>(kind: ResourceKind, obj: KubeObject): T => own.decoder(kind)(obj) as T;
  return {
    // Finalizer and metadata patches touch metadata only, which every version shares.
    addFinalizer: async <T extends KubeObject>(kind: ResourceKind, obj: T, finalizer: string) =>
      read<T>(kind, await addFinalizer(client, own.wireKind(kind), obj, finalizer, { fieldManager })),
    async removeFinalizer(kind, obj, finalizer) {
      try {
        await removeFinalizer(client, own.wireKind(kind), obj, finalizer, { fieldManager });
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
      client
        .patch<T>(
          own.wireKind(kind),
          obj.metadata?.namespace ?? '',
          obj.metadata?.name ?? '',
          { metadata: { resourceVersion: obj.metadata?.resourceVersion, ...change } },
          'merge',
          { fieldManager },
        )
        .then((written) => read<T>(kind, written)),
    // Preconditioned on the resourceVersion the status was computed from: a status derived
    // from a stale cache (a failure reported from an old snapshot) must not overwrite a
    // fresher one, such as a Ready written meanwhile; it fails with Conflict and is retried.
    // The diff is taken between the wire forms of the object as read and as desired, so it
    // patches exactly the fields that differ in the version written.
    async patchStatus<T extends KubeObject>(kind: ResourceKind, obj: T, status: Record<string, unknown>): Promise<T> {
      if (own.version === 'v1') return patchStatus(client, kind, obj as T & { status?: unknown }, status, { fieldManager, optimistic: true });
      const before = own.encode(kind, obj) as KubeObject & { status?: unknown };
      const after = own.encode(kind, { ...obj, status } as KubeObject) as KubeObject & { status?: unknown };
      const written = await patchStatus(client, own.wireKind(kind), before, after.status ?? {}, { fieldManager, optimistic: true });
      return written === before ? obj : read<T>(kind, written);
    },
    async apply(kind, obj) {
      await applyObject(client, kind, obj, { fieldManager });
    },
    async create(kind, obj) {
      await client.create(kind, obj, { fieldManager });
    },
    async get<T extends KubeObject>(kind: ResourceKind, key: ObjectKey): Promise<T | undefined> {
      try {
        return read<T>(kind, await client.get<T>(own.wireKind(kind), key.namespace, key.name));
      } catch (err) {
        if (isNotFound(err)) return undefined;
        throw err;
      }
    },
    async configHasUsers(config: ObjectKey): Promise<boolean> {
      try {
        // spec.providerRef.name is a selectable field of the CRD, so the server filters. Asked
        // only when the cache already counts no users, so this is normally one empty page.
        const { items } = await client.list<StorageBucket>(own.storageBucket, {
          namespace: config.namespace,
          fieldSelector: `${own.providerRefField}=${config.name}`,
          limit: 1,
        });
        return items.length > 0;
      } catch (err) {
        // The kind itself is gone (its CRD deleted, as in an uninstall): so is every bucket.
        if (isNotFound(err)) return false;
        // A CRD installed before the field was selectable answers 400: list the namespace's
        // StorageBuckets instead (our own kind, so bounded by our own objects).
        if (!(err instanceof ApiError && err.status === 400)) throw err;
        const { items } = await client.list<KubeObject>(own.storageBucket, { namespace: config.namespace });
        return items.some((b) => read<StorageBucket>(STORAGE_BUCKET, b).spec?.providerRef?.name === config.name);
      }
    },
  };
}
