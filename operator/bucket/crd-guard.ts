/**
 * The uninstall guard's one fact: is the StorageBucket CRD being deleted (or gone)? Deleting a
 * CRD makes the API server delete every object of the kind; our finalizer holds each one, and
 * cleanup would deprovision every bucket whose policy is Delete: a mass deletion nobody asked
 * of any one object. cleanup.ts releases such objects instead (`why: crdDeleting`).
 *
 * The answer must be fresh for the object at hand. The API server sets the CRD's
 * deletionTimestamp before it deletes the first object, but the CRD's watch event and the
 * objects' arrive on separate watches, in no guaranteed order. So a cached "deleting" (the
 * metadata-only informer on the one CRD) is believed at once (a deletionTimestamp is never
 * taken back), while "not deleting" is checked by a GET that started after the caller saw its
 * object deleting: that GET reads after the CRD's deletion, if there was one. Concurrent
 * callers share one GET; a caller that arrives while a GET is in flight waits for the next
 * one, since the one in flight may have been read before its object's deletion.
 */
import type { Registry } from 'prom-client';
import { GROUP, StorageBucketDefinition } from '../api/v1';
import { registeredCounter, type Cache, type InformerOptions, type KubeObject, type ResourceKind, type Transform } from '../runtime';

/** The CRD the guard reads: `storagebuckets.storage.avalonhosting.example`. */
export const STORAGE_BUCKET_CRD_NAME = `${StorageBucketDefinition.plural}.${GROUP}`;

/** CustomResourceDefinitions (cluster-scoped). */
export const CRD: ResourceKind = {
  group: 'apiextensions.k8s.io',
  version: 'v1',
  kind: 'CustomResourceDefinition',
  plural: 'customresourcedefinitions',
  namespaced: false,
};

/** Objects released because their CRD is being deleted (see {@link CrdGuard.released}). */
export const RELEASED_ON_CRD_DELETION_METRIC = 'bucketoperator_buckets_released_crd_deleting_total';

/**
 * Keeps only what the guard reads of the CRD (identity and deletionTimestamp): its schema is
 * most of its size and nothing here reads it.
 */
export const crdMetadataOnly: Transform = (obj) => {
  const { name, uid, resourceVersion, deletionTimestamp } = obj.metadata ?? {};
  const metadata = { name, uid, resourceVersion, ...(deletionTimestamp ? { deletionTimestamp } : {}) };
  return { apiVersion: obj.apiVersion, kind: obj.kind, metadata };
};

/** The informer on the one CRD: selected by name (RBAC grants list/watch on that name only). */
export const CRD_INFORMER_OPTIONS: InformerOptions = {
  fieldSelector: `metadata.name=${STORAGE_BUCKET_CRD_NAME}`,
  transform: crdMetadataOnly,
};

/** What the bucket reconciler asks about the StorageBucket CRD. */
export interface CrdGuard {
  /**
   * True when the CRD is being deleted or does not exist, as of a moment after this call
   * began. Rejects when that cannot be told (then nothing may be deleted either).
   */
  deleting(): Promise<boolean>;
  /** Counts one object released, its provider bucket kept, because the CRD is being deleted. */
  released(): void;
}

/** Dependencies of {@link crdGuard}. */
export interface CrdGuardDeps {
  /** The informer cache holding the CRD (by {@link CRD_INFORMER_OPTIONS}). */
  readonly cache: Pick<Cache<KubeObject>, 'get'>;
  /** One GET of the CRD from the API server, not a cache; undefined when it does not exist. */
  readonly read: () => Promise<KubeObject | undefined>;
  /** Where the released counter is registered. */
  readonly registry: Registry;
}

/** The {@link CrdGuard} over an informer cache and a direct read. */
export function crdGuard(deps: CrdGuardDeps): CrdGuard {
  const fresh = freshReads(async () => {
    const crd = await deps.read();
    return crd === undefined || Boolean(crd.metadata?.deletionTimestamp);
  });
  const counter = registeredCounter(
    deps.registry,
    RELEASED_ON_CRD_DELETION_METRIC,
    'StorageBuckets whose finalizer was released, provider bucket kept, because the StorageBucket CRD was being deleted.',
    [],
  );
  return {
    async deleting() {
      const cached = deps.cache.get({ namespace: '', name: STORAGE_BUCKET_CRD_NAME });
      if (cached?.metadata?.deletionTimestamp) return true;
      return fresh();
    },
    released: () => counter.inc(),
  };
}

/**
 * `fetch`, shared by concurrent callers, where each caller gets the result of a call that
 * began after its own call did: callers that arrive while one is in flight share the next.
 */
export function freshReads<T>(fetch: () => Promise<T>): () => Promise<T> {
  let inFlight: Promise<T> | undefined;
  let next: Promise<T> | undefined;
  const begin = (): Promise<T> => {
    const p: Promise<T> = fetch().finally(() => {
      if (inFlight === p) inFlight = undefined;
    });
    inFlight = p;
    return p;
  };
  return () => {
    if (!inFlight) return begin();
    const ignore = (): void => undefined;
    next ??= inFlight.then(ignore, ignore).then(() => {
      next = undefined;
      return begin();
    });
    return next;
  };
}
