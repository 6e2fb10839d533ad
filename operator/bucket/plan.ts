/**
 * The pure heart of the bucket controller: given the object and what the provider reports,
 * decide the ONE next step. No I/O, no clock, no randomness, so every branch is table-tested.
 *
 * Two stages: {@link preplan} decides from the object alone whether the provider must be asked
 * at all (a Ready bucket trusts its status, a delete goes straight to the provider's DELETE),
 * and {@link plan} decides from the provider's answer when it must.
 */
import type { StorageBucket } from '../api/v1';
import { ADOPT_ANNOTATION, BUCKET_FINALIZER, IDEMPOTENCY_KEY_ANNOTATION, RECONCILE_REQUESTED_ANNOTATION } from '../api/v1';
import type { ProviderBucket, UpdateBucketRequest } from '../provider-client';
import { findCondition, type Condition } from '../runtime';
import { ConditionType, Reason } from './reasons';
import { missingTags } from './tags';

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
  /**
   * DELETE `id`; a 404 means it is gone. `ifGone: 'lookUpKey'` when a bucket made with the
   * current idempotency key may exist besides `id` (the key was rotated after `id` vanished and
   * its create's answer may have been lost), so "gone" must be confirmed by key first.
   */
  | { readonly type: 'delete'; readonly id: string; readonly ifGone: 'release' | 'lookUpKey' }
  | { readonly type: 'removeFinalizer'; readonly orphaned: boolean }
  /** Nothing to do now; `waiting` says whether the provider is still transitioning. */
  | { readonly type: 'none'; readonly waiting: 'Provisioning' | 'Resizing' | false }
  /**
   * Observe policy: report what the provider has (`found` false: the named bucket does not
   * exist, or not yet) and change nothing there.
   */
  | { readonly type: 'mirror'; readonly found: boolean }
  /** Ready, and nothing says otherwise: no provider call; owned objects from the status. */
  | { readonly type: 'upToDate' }
  /** The object cannot make progress until a user changes it. */
  | { readonly type: 'blocked'; readonly reason: typeof Reason.AdoptTargetNotFound | typeof Reason.ProviderChanged | typeof Reason.InvalidSpec; readonly message: string };

/** What the orchestrator knows besides the object when it calls {@link preplan}. */
export interface PreplanFacts {
  /** The provider API the bucket's BucketProviderConfig points at now. */
  readonly endpoint: string;
  /** The latest drift scan found this bucket missing or different at the provider. */
  readonly driftReported: boolean;
}

/** {@link preplan}'s answer when only the provider can tell what to do. */
export interface ObserveFirst {
  readonly type: 'observe';
}

/**
 * True when `bucket`'s status can stand in for a provider observation: Ready and Synced for
 * its current generation, with the id and endpoint of a bucket recorded at `endpoint`. Such a
 * bucket is left to the drift scan, which lists the provider in bulk instead of asking once
 * per bucket. An observed bucket (managementPolicy Observe) never is: the operator may not tag
 * it, so the scan's list would not show it, and it is read one by one every drift interval.
 */
export function statusTrusted(bucket: StorageBucket, endpoint: string): boolean {
  if (isObserveOnly(bucket)) return false;
  const status = bucket.status;
  if (!status?.id || !status.endpoint || status.providerEndpoint !== endpoint) return false;
  const generation = bucket.metadata.generation;
  if (status.observedGeneration !== generation) return false;
  const conditions = status.conditions as Condition[] | undefined;
  const current = (type: string) => {
    const c = findCondition(conditions, type);
    return c?.status === 'True' && c.observedGeneration === generation;
  };
  return current(ConditionType.Ready) && current(ConditionType.Synced);
}

/**
 * Decides from the object alone, before any provider call: the step when the object says
 * enough, else `observe`. Deletion issues the DELETE at once (a 404 means gone), except when
 * the only record of the bucket is the idempotency key (no id: the create's answer may have
 * been lost) or the config now points elsewhere (a 404 there proves nothing).
 */
export function preplan(bucket: StorageBucket, facts: PreplanFacts): Step | ObserveFirst {
  const hasFinalizer = (bucket.metadata.finalizers ?? []).includes(BUCKET_FINALIZER);
  const key = bucket.metadata.annotations?.[IDEMPOTENCY_KEY_ANNOTATION];
  const status = bucket.status ?? {};
  if (bucket.metadata.deletionTimestamp) {
    if (!hasFinalizer) return { type: 'none', waiting: false };
    if ((bucket.spec.deletionPolicy ?? 'Delete') === 'Orphan' || isObserveOnly(bucket)) return { type: 'removeFinalizer', orphaned: true };
    const id = status.id ?? bucket.metadata.annotations?.[ADOPT_ANNOTATION];
    const moved = status.providerEndpoint !== undefined && status.providerEndpoint !== facts.endpoint;
    if (id && !moved) return { type: 'delete', id, ifGone: key && key !== status.idempotencyKey ? 'lookUpKey' : 'release' };
    // Nothing was ever sent without a key, so nothing can exist at the provider.
    if (!id && !key) return { type: 'removeFinalizer', orphaned: false };
    return { type: 'observe' };
  }
  // Observe never creates, so it needs neither finalizer nor key: plan() mirrors what it finds.
  if (isObserveOnly(bucket)) return { type: 'observe' };
  if (!hasFinalizer || !key) return { type: 'prepare' };
  // A reconcile asked for by annotation that is not yet handled asks the provider, as users expect.
  const requested = bucket.metadata.annotations?.[RECONCILE_REQUESTED_ANNOTATION];
  const pendingRequest = requested !== undefined && requested !== status.lastHandledReconcileAt;
  if (!facts.driftReported && !pendingRequest && statusTrusted(bucket, facts.endpoint)) return { type: 'upToDate' };
  return { type: 'observe' };
}

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
    // Found by this very observation, so a 404 on the DELETE can only mean it went since.
    if (obs.exists) return { type: 'delete', id: obs.bucket.id, ifGone: 'release' };
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

/**
 * The fields the provider must change to match the spec (and carry the operator's tags), or
 * undefined when it matches.
 */
export function diff(bucket: StorageBucket, external: ProviderBucket): UpdateBucketRequest | undefined {
  const patch: { sizeGB?: number; encrypted?: boolean; tags?: Record<string, string> } = {};
  // Sizes only grow: a provider bucket larger than the spec is left alone, never shrunk.
  if (external.sizeGB < bucket.spec.sizeGB) patch.sizeGB = bucket.spec.sizeGB;
  const encrypted = bucket.spec.encrypted ?? false;
  if (external.encrypted !== encrypted) patch.encrypted = encrypted;
  const tags = missingTags(bucket, external.tags);
  if (tags) patch.tags = tags;
  return Object.keys(patch).length > 0 ? patch : undefined;
}

/** Compile-time proof that a switch over steps handles every type. */
export function assertNever(x: never): never {
  throw new Error(`unhandled step ${JSON.stringify(x)}`);
}
