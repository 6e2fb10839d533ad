/**
 * The pure heart of the bucket controller: given the object and what the provider reports,
 * decide the ONE next step. No I/O, no clock, no randomness, so every branch is table-tested.
 */
import type { StorageBucket } from '../api/v1';
import { ADOPT_ANNOTATION, BUCKET_FINALIZER, IDEMPOTENCY_KEY_ANNOTATION } from '../api/v1';
import type { ProviderBucket, UpdateBucketRequest } from '../provider-client';
import { Reason } from './reasons';

/**
 * What the provider said about the bucket this object refers to. `foreignKey`: the current key
 * made a bucket that belongs to another object (the annotation was copied with a manifest).
 */
export type Observation =
  | { readonly exists: false; readonly foreignKey?: boolean }
  | { readonly exists: true; readonly bucket: ProviderBucket };

/** The next step; exactly one is executed per reconcile. */
export type Step =
  /** One metadata write, before anything exists outside: the finalizer and an idempotency key. */
  | { readonly type: 'prepare' }
  /** The current key is spent (its bucket vanished) or foreign: mint a new key, then create. */
  | { readonly type: 'rotateKey'; readonly reason: 'vanished' | 'foreign' }
  | { readonly type: 'create'; readonly idempotencyKey: string }
  | { readonly type: 'update'; readonly id: string; readonly patch: UpdateBucketRequest }
  | { readonly type: 'delete'; readonly id: string }
  | { readonly type: 'removeFinalizer'; readonly orphaned: boolean }
  /** Nothing to do now; `waiting` says whether the provider is still transitioning. */
  | { readonly type: 'none'; readonly waiting: 'Provisioning' | 'Resizing' | false }
  /**
   * Observe policy: report what the provider has (`found` false: the named bucket does not
   * exist, or not yet) and change nothing there.
   */
  | { readonly type: 'mirror'; readonly found: boolean }
  /** The object cannot make progress until a user changes it. */
  | { readonly type: 'blocked'; readonly reason: typeof Reason.AdoptTargetNotFound | typeof Reason.ProviderChanged | typeof Reason.InvalidSpec; readonly message: string };

/**
 * Decides the next step for `bucket` given `obs`, made at the provider API `endpoint`.
 */
export function plan(bucket: StorageBucket, obs: Observation, endpoint: string): Step {
  const finalizers = bucket.metadata.finalizers ?? [];
  const hasFinalizer = finalizers.includes(BUCKET_FINALIZER);
  const key = bucket.metadata.annotations?.[IDEMPOTENCY_KEY_ANNOTATION];
  const recordedAt = bucket.status?.providerEndpoint;
  // "Not found" at a different provider than the one holding our bucket proves nothing:
  // recreating (or releasing the finalizer) there would duplicate or orphan the bucket.
  const providerChanged = !obs.exists && Boolean(bucket.status?.id) && recordedAt !== undefined && recordedAt !== endpoint;
  const changed: Step = {
    type: 'blocked',
    reason: Reason.ProviderChanged,
    message: `bucket ${bucket.status?.id ?? ''} was created at ${recordedAt ?? ''}, but the BucketProviderConfig now points at ${endpoint}`,
  };

  if (isObserveOnly(bucket)) return planObserve(bucket, obs, hasFinalizer);

  if (bucket.metadata.deletionTimestamp) {
    if (!hasFinalizer) return { type: 'none', waiting: false };
    if ((bucket.spec.deletionPolicy ?? 'Delete') === 'Orphan') return { type: 'removeFinalizer', orphaned: true };
    if (obs.exists) return { type: 'delete', id: obs.bucket.id };
    if (providerChanged) return changed;
    return { type: 'removeFinalizer', orphaned: false };
  }

  // Finalizer and key go on before anything exists outside the cluster, so nothing can leak
  // and a create retried after a crash reuses the same key.
  if (!hasFinalizer || !key) return { type: 'prepare' };

  if (!obs.exists) {
    if (providerChanged) return changed;
    if (obs.foreignKey) return { type: 'rotateKey', reason: 'foreign' };
    const adoptId = bucket.metadata.annotations?.[ADOPT_ANNOTATION];
    const status = bucket.status ?? {};
    if (adoptId && !status.id) {
      return { type: 'blocked', reason: Reason.AdoptTargetNotFound, message: `provider bucket ${adoptId} named by ${ADOPT_ANNOTATION} does not exist` };
    }
    // Only the key that made the vanished bucket is spent; a key minted after it (a rotation
    // interrupted before its create) is still good, and minting again could duplicate.
    if (status.id && status.idempotencyKey === key) return { type: 'rotateKey', reason: 'vanished' };
    return { type: 'create', idempotencyKey: key };
  }

  const external = obs.bucket;
  if (external.phase === 'Provisioning' || external.phase === 'Resizing') {
    return { type: 'none', waiting: external.phase };
  }
  const patch = diff(bucket, external);
  if (patch) return { type: 'update', id: external.id, patch };
  return { type: 'none', waiting: false };
}

/** True when the operator only reads the provider bucket (managementPolicy Observe). */
export function isObserveOnly(bucket: StorageBucket): boolean {
  return bucket.spec.managementPolicy === 'Observe';
}

/**
 * Observe: never create, change or delete at the provider. A finalizer left from an earlier
 * Full policy is released on deletion without touching the bucket (it was never ours to delete
 * once the user chose Observe).
 */
function planObserve(bucket: StorageBucket, obs: Observation, hasFinalizer: boolean): Step {
  if (bucket.metadata.deletionTimestamp) return hasFinalizer ? { type: 'removeFinalizer', orphaned: true } : { type: 'none', waiting: false };
  if (!bucket.status?.id && !bucket.metadata.annotations?.[ADOPT_ANNOTATION]) {
    return { type: 'blocked', reason: Reason.InvalidSpec, message: `managementPolicy Observe needs the ${ADOPT_ANNOTATION} annotation naming the provider bucket to observe` };
  }
  return { type: 'mirror', found: obs.exists };
}

/** The fields the provider must change to match the spec, or undefined when it matches. */
export function diff(bucket: StorageBucket, external: ProviderBucket): UpdateBucketRequest | undefined {
  const patch: { sizeGB?: number; encrypted?: boolean } = {};
  // Sizes only grow: a provider bucket larger than the spec is left alone, never shrunk.
  if (external.sizeGB < bucket.spec.sizeGB) patch.sizeGB = bucket.spec.sizeGB;
  const encrypted = bucket.spec.encrypted ?? false;
  if (external.encrypted !== encrypted) patch.encrypted = encrypted;
  return Object.keys(patch).length > 0 ? patch : undefined;
}

/** Compile-time proof that a switch over steps handles every type. */
export function assertNever(x: never): never {
  throw new Error(`unhandled step ${JSON.stringify(x)}`);
}
