/**
 * The pure heart of the bucket controller: every decision about a StorageBucket is made here,
 * from the object and the facts the orchestrator has gathered so far. No I/O, no clock, no
 * randomness, so every branch is table-tested.
 *
 * {@link decide} is the one entry point. It answers either with the ONE step to execute or
 * with the fact it still needs: `connect` (the provider config and credentials) or `observe`
 * (ask the provider). The orchestrator fetches that fact and asks again, so a bucket that
 * needs no provider call (paused, invalid, orphaned, Ready and trusted) never makes one.
 */
import type { StorageBucket } from '../api/v1';
import {
  ADOPT_ANNOTATION,
  BUCKET_FINALIZER,
  IDEMPOTENCY_KEY_ANNOTATION,
  PAUSED_ANNOTATION,
  RECONCILE_REQUESTED_ANNOTATION,
  StorageBucketSpec,
  formatFieldErrors,
  validateCached,
} from '../api/v1';
import type { ProviderBucket, UpdateBucketRequest } from '../provider-client';
import { findCondition, type Condition } from '../runtime';
import { providerChanged, sentElsewhereBlock } from './blocks';
import { cleanup } from './cleanup';
import { ConditionType, Reason } from './reasons';
import { accountChanged, moved, relation, restoredFrom, sentElsewhere, type Relation } from './ownership';
import { CLUSTER_TAG, missingTags } from './tags';

/**
 * What the provider said about the bucket this object refers to.
 * - `foreignKey`: the current key made a bucket that belongs to another object (the
 *   annotation was copied with a manifest).
 * - `keySpent`: a create with the current key was refused because the key's bucket was
 *   deleted (HTTP 410): the key can never create again.
 */
export type Observation =
  | {
      readonly exists: false;
      readonly foreignKey?: boolean;
      readonly keySpent?: boolean;
      /** Nothing is left because this reconcile just deleted it. */
      readonly deleted?: boolean;
    }
  | {
      readonly exists: true;
      readonly bucket: ProviderBucket;
      /**
       * Deleting only: other buckets found besides the one its id (or adopt-id) names: made
       * with the object's current key (a create whose answer was lost before the id changed),
       * or tagged with its uid (its record of them overwritten). Cleanup judges each.
       */
      readonly more?: readonly ProviderBucket[];
    };

/** Why connecting failed; the reasons `connect` reports (see connect.ts). */
export interface ConnectFailure {
  readonly reason: Reason;
  readonly message: string;
}

/** The facts gathered so far in one reconcile; {@link decide} says which one is missing. */
export interface DecisionFacts {
  /** The latest drift scan found this bucket missing or different at the provider. */
  readonly driftReported: boolean;
  /**
   * Set once connect was tried: the endpoint reached (and whether its config is being
   * deleted, so nothing new may start through it), or why not.
   */
  readonly connection?: ConnectedTo | { readonly failure: ConnectFailure };
  /**
   * This operator's cluster identity, written to and checked in the provider bucket's owner
   * tags. @default '' (unknown: cluster tags are neither written nor checked)
   */
  readonly clusterId?: string;
  /**
   * Whether the StorageBucket `namespace/name` exists (from the cache; true when the operator
   * cannot know, e.g. a namespace it does not watch). Owner tags naming an object that is gone
   * (deleted with deletionPolicy Orphan) do not block an adoption. @default always true
   */
  readonly ownerExists?: (namespace: string, name: string) => boolean;
  /**
   * `namespace/name` of another live StorageBucket that made a bucket with `key`, if any: the
   * object whose uid the key was minted for, or (a key from before keys carried a uid) whose
   * idempotency key annotation is `key`. Tells the maker of a bucket whose owner tags are
   * gone. @default none
   */
  readonly keyOwner?: (key: string) => string | undefined;
  /** Set once the provider was asked (or a call's answer told what it holds). */
  readonly observation?: Observation;
  /**
   * The StorageBucket CRD is being deleted or is gone, read after this object's deletion was
   * seen (see crd-guard.ts): the API server, not a user, is deleting every object, so cleanup
   * releases them and deletes nothing at the provider. Gathered for deleting objects only.
   * @default false
   */
  readonly crdDeleting?: boolean;
}

/** Where a connection reached. */
export interface ConnectedTo {
  readonly endpoint: string;
  /**
   * The provider's name for the account the credentials belong to; compared with
   * `status.account`. @default unknown (no account check)
   */
  readonly accountId?: string;
  /** The config is being deleted, so nothing new may start through it. */
  readonly configDeleting?: boolean;
}

/** Conditions that only a person can clear. */
export type BlockedReason =
  | typeof Reason.InvalidSpec
  | typeof Reason.AdoptTargetNotFound
  | typeof Reason.ProviderChanged
  | typeof Reason.BucketOwnedElsewhere
  | typeof Reason.BucketOwnedByOtherCluster;

/** Steps that start managing something new at the provider. */
const STARTS = new Set<Step['type']>(['prepare', 'create', 'rotateKey']);

/** The next step; exactly one is executed per decision. */
export type Step =
  /** Not ours to act on (being deleted without our finalizer). */
  | { readonly type: 'nothing' }
  /** The pause annotation is set: report it, change nothing. */
  | { readonly type: 'paused'; readonly message: string }
  /**
   * The object cannot make progress until a user changes it. `recheck`: something outside
   * this object may also clear it, so it is looked at again every drift interval.
   */
  | { readonly type: 'blocked'; readonly reason: BlockedReason; readonly message: string; readonly recheck?: boolean }
  /** The config or its Secret is missing or unusable; their watches bring the bucket back. */
  | { readonly type: 'waitForConfig'; readonly reason: Reason; readonly message: string }
  /**
   * One metadata write, before anything exists outside: the finalizer and, when missing, a
   * fresh idempotency key. `createNow`: a key minted here has never been sent, so the create
   * follows at once without asking the provider about it.
   */
  | { readonly type: 'prepare'; readonly addFinalizer: boolean; readonly mintKey: boolean; readonly createNow: boolean }
  /**
   * The current key is spent (its bucket vanished, or a create was refused with 410) or
   * foreign: persist a new key, then create with it when `createNow`; otherwise the
   * annotation's watch event brings the create (after a refusal, never in a tight loop).
   */
  | { readonly type: 'rotateKey'; readonly reason: 'vanished' | 'foreign' | 'spent'; readonly createNow: boolean }
  | { readonly type: 'create'; readonly idempotencyKey: string }
  /**
   * Change the provider bucket. `requested`: the user asked (new generation), otherwise it is
   * drift. `grows`: the size goes up (the provider resizes). `adopting`: first write of an
   * adopted bucket.
   */
  | {
      readonly type: 'update';
      readonly id: string;
      readonly patch: UpdateBucketRequest;
      readonly requested: boolean;
      readonly grows: boolean;
      readonly adopting: boolean;
    }
  /**
   * DELETE `id`, provably this object's bucket (see cleanup.ts); a 404 means it is gone.
   * `ifTags`: decided from the status alone, so the provider must find this object's owner tags
   * on the bucket at the moment it deletes (412 otherwise: the bucket is observed instead).
   */
  | { readonly type: 'delete'; readonly id: string; readonly ifTags?: Readonly<Record<string, string>> }
  /**
   * Release our finalizer. `orphan`: the policy keeps the provider bucket. `gone`: nothing of
   * ours is left at the provider. `notOurs`: the provider bucket belongs to another object,
   * so it is left alone. `crdDeleting`: the StorageBucket CRD is being deleted (an uninstall,
   * a GitOps prune), a mass deletion no user asked of this object: the bucket is kept.
   */
  | { readonly type: 'removeFinalizer'; readonly why: 'orphan' | 'gone' | 'notOurs' | 'crdDeleting' }
  /** The provider is still applying a create or a change: poll. */
  | { readonly type: 'wait'; readonly phase: 'Provisioning' | 'Resizing' }
  /** Active and matching. `announce`: it was not Ready before (logged; the Ready condition's transition says when). */
  | { readonly type: 'ready'; readonly announce: boolean; readonly adopting: boolean }
  /**
   * Observe policy: report what the provider has (`found` false: the named bucket does not
   * exist, or not yet) and change nothing there. `recheck`: read it again at the poll interval
   * (it is transitioning) or the drift interval (the scan cannot see untagged buckets).
   */
  | { readonly type: 'mirror'; readonly found: boolean; readonly announce: boolean; readonly recheck: 'poll' | 'drift' }
  /** Ready, and nothing says otherwise: no provider call; owned objects from the status. */
  | { readonly type: 'upToDate' };

/** A fact {@link decide} needs before it can choose a step. */
export type Need =
  | { readonly type: 'connect' }
  /**
   * Ask the provider. `fence`: the object is being deleted, so a key lookup that finds nothing
   * must also revoke the key, or a create still in flight could commit after the finalizer
   * is gone and leave an orphan.
   */
  | { readonly type: 'observe'; readonly fence: boolean }
  /**
   * The provider's name for the connection's account: a decision on the provider's answer
   * (recreate a vanished bucket, release one found gone) must know the account is the one the
   * bucket was made in. Decisions from the status alone do without it, so a Ready bucket needs
   * no provider at all while its provider is down.
   */
  | { readonly type: 'account' };

/**
 * The one decision function: the step for `bucket` given `facts`, or the fact to gather next.
 * Stages, each reached only when the earlier ones decided nothing: the object alone, then the
 * connection, then the object and connection without a provider call, then the provider's
 * answer.
 */
export function decide(bucket: StorageBucket, facts: DecisionFacts): Step | Need {
  if (bucket.metadata.deletionTimestamp && !hasFinalizer(bucket)) return { type: 'nothing' };
  if (bucket.metadata.annotations?.[PAUSED_ANNOTATION] === 'true') {
    return { type: 'paused', message: `reconciliation paused by ${PAUSED_ANNOTATION}` };
  }
  // Deletion is decided in one place, where the provenance check cannot be stepped around.
  if (bucket.metadata.deletionTimestamp) return cleanup(bucket, facts);
  const errors = validateCached(StorageBucketSpec, bucket.spec);
  if (errors.length > 0) return { type: 'blocked', reason: Reason.InvalidSpec, message: formatFieldErrors('spec', errors) };
  if (!facts.connection) return { type: 'connect' };
  if ('failure' in facts.connection) return { type: 'waitForConfig', ...facts.connection.failure };
  const to = facts.connection;
  const clusterId = facts.clusterId ?? '';
  // Observe never acts on the provider, so its answer needs no account to be read.
  if (facts.observation && to.accountId === undefined && !isObserveOnly(bucket)) return { type: 'account' };
  const next = facts.observation
    ? plan(bucket, facts.observation, to, clusterId, {
        ownerExists: facts.ownerExists ?? (() => true),
        keyOwner: facts.keyOwner ?? (() => undefined),
      })
    : preplan(bucket, to, facts.driftReported);
  return to.configDeleting ? throughDeletingConfig(bucket, next) : next;
}

/**
 * A config being deleted stays only until its last bucket is gone: nothing new may start
 * through it (a create, a key rotation, an adoption), or it would be left without a way to
 * deprovision. Buckets it already manages keep working (Ready stays, resizes and drift
 * corrections go on) and are deleted through it.
 */
function throughDeletingConfig(bucket: StorageBucket, next: Step | Need): Step | Need {
  const adopting = (next.type === 'update' || next.type === 'ready') && next.adopting;
  if (!STARTS.has(next.type as Step['type']) && !adopting) return next;
  const config = `${bucket.metadata.namespace ?? ''}/${bucket.spec.providerRef.name}`;
  return {
    type: 'waitForConfig',
    reason: Reason.ProviderConfigDeleting,
    message: `BucketProviderConfig ${config} is being deleted: nothing new is created through it; delete this StorageBucket or point it at another config`,
  };
}

/** True when the operator only reads the provider bucket (managementPolicy Observe). */
export function isObserveOnly(bucket: StorageBucket): boolean {
  return bucket.spec.managementPolicy === 'Observe';
}

function hasFinalizer(bucket: StorageBucket): boolean {
  return (bucket.metadata.finalizers ?? []).includes(BUCKET_FINALIZER);
}

/**
 * True when `bucket`'s status can stand in for a provider observation: Ready and Synced for
 * its current generation, with the id and endpoint of a bucket recorded at the endpoint (and
 * in the account) the connection reaches. Such a
 * bucket is left to the drift scan, which lists the provider in bulk instead of asking once
 * per bucket. An observed bucket (managementPolicy Observe) never is: the operator may not tag
 * it, so the scan's list would not show it, and it is read one by one every drift interval.
 */
export function statusTrusted(bucket: StorageBucket, to: ConnectedTo): boolean {
  if (isObserveOnly(bucket)) return false;
  const status = bucket.status;
  if (!status?.id || !status.endpoint || status.providerEndpoint !== to.endpoint) return false;
  // Credentials of another account since: ask, so the change is reported at once.
  if (accountChanged(bucket, to)) return false;
  const generation = bucket.metadata.generation;
  if (status.observedGeneration !== generation) return false;
  const current = (type: string) => {
    const c = findCondition(status.conditions as Condition[] | undefined, type);
    return c?.status === 'True' && c.observedGeneration === generation;
  };
  return current(ConditionType.Ready) && current(ConditionType.Synced);
}

/** Decides from the object and its connection, before any provider call (Apply only). */
function preplan(bucket: StorageBucket, to: ConnectedTo, driftReported: boolean): Step | Need {
  const key = bucket.metadata.annotations?.[IDEMPOTENCY_KEY_ANNOTATION];
  const status = bucket.status ?? {};
  // Observe never creates, so it needs neither finalizer nor key: plan() mirrors what it finds.
  if (isObserveOnly(bucket)) return { type: 'observe', fence: false };
  if (!hasFinalizer(bucket) || !key) {
    const adopting = Boolean(bucket.metadata.annotations?.[ADOPT_ANNOTATION]);
    return { type: 'prepare', addFinalizer: !hasFinalizer(bucket), mintKey: !key, createNow: !key && !adopting && !status.id };
  }
  // A reconcile asked for by annotation that is not yet handled asks the provider, as users expect.
  const requested = bucket.metadata.annotations?.[RECONCILE_REQUESTED_ANNOTATION];
  const pendingRequest = requested !== undefined && requested !== status.lastHandledReconcileAt;
  if (!driftReported && !pendingRequest && statusTrusted(bucket, to)) return { type: 'upToDate' };
  return { type: 'observe', fence: false };
}

/** What plan() may ask about other StorageBuckets (from the cache). */
interface Others {
  readonly ownerExists: (namespace: string, name: string) => boolean;
  readonly keyOwner: (key: string) => string | undefined;
}

/**
 * Decides from the provider's answer. Reached only after preplan asked for the observation
 * (or a call's answer stood in for one), so the finalizer and key are in place for a Full
 * bucket that is not being deleted.
 */
function plan(bucket: StorageBucket, obs: Observation, to: ConnectedTo, clusterId: string, others: Others): Step {
  if (isObserveOnly(bucket)) return planObserve(bucket, obs);
  const rel = obs.exists ? relation(bucket, obs.bucket, clusterId) : undefined;
  // "Not found" at another provider or account than the one holding our bucket proves
  // nothing: recreating (or releasing the finalizer) there would duplicate or orphan the
  // bucket. And a bucket of the same id there that is not tagged as this object's is a
  // stranger's (ids repeat across providers): never updated, taken over or deleted.
  if (moved(bucket, to) && rel?.type !== 'thisObject') return providerChanged(bucket, to);
  // Likewise a create whose answer was lost, sent where the config no longer points.
  const sentTo = sentElsewhere(bucket, to);
  if (!obs.exists && sentTo) return sentElsewhereBlock(sentTo, to);

  const key = bucket.metadata.annotations?.[IDEMPOTENCY_KEY_ANNOTATION] ?? '';
  const status = bucket.status ?? {};
  const adoptId = bucket.metadata.annotations?.[ADOPT_ANNOTATION];
  if (!obs.exists) {
    if (obs.keySpent) return { type: 'rotateKey', reason: 'spent', createNow: false };
    if (obs.foreignKey) return { type: 'rotateKey', reason: 'foreign', createNow: true };
    if (adoptId && !status.id) {
      return {
        type: 'blocked',
        reason: Reason.AdoptTargetNotFound,
        message: `provider bucket ${adoptId} named by ${ADOPT_ANNOTATION} does not exist`,
      };
    }
    // Only the key that made the vanished bucket is spent; a key minted after it (a rotation
    // interrupted before its create) is still good, and minting again could duplicate.
    if (status.id && status.idempotencyKey === key) return { type: 'rotateKey', reason: 'vanished', createNow: true };
    return { type: 'create', idempotencyKey: key };
  }

  const external = obs.bucket;
  const taken = takenElsewhere(bucket, external, relation(bucket, external, clusterId), others);
  if (taken) return taken;
  const adopting = !status.id && adoptId !== undefined;
  if (external.phase === 'Provisioning' || external.phase === 'Resizing') return { type: 'wait', phase: external.phase };
  const patch = diff(bucket, external, clusterId);
  if (patch) {
    const requested = bucket.metadata.generation !== status.observedGeneration;
    const grows = patch.sizeGB !== undefined && patch.sizeGB > external.sizeGB;
    return { type: 'update', id: external.id, patch, requested, grows, adopting };
  }
  return { type: 'ready', announce: !wasReady(bucket), adopting };
}

/**
 * The block for a bucket this object may not take over. Another live owner holds it: another
 * StorageBucket of this cluster that exists, any object of another cluster (which this operator
 * cannot see), or a live object whose key made it. A bucket nobody holds (its tags name an
 * object that is gone, or none) may be taken over, and the update that follows writes this
 * object's tags, only when the user asked for it ({@link ADOPT_ANNOTATION} names it) or when
 * the key this object carries made it for an earlier object of its name whose tags it still
 * carries (a restored backup): an id in the status alone is only a name. The blocks are checked
 * again every drift interval: the owner's deletion is not an event of this object.
 */
function takenElsewhere(bucket: StorageBucket, external: ProviderBucket, rel: Relation, others: Others): Step | undefined {
  const id = external.id;
  if (rel.type === 'otherCluster') {
    return {
      type: 'blocked',
      reason: Reason.BucketOwnedByOtherCluster,
      message: `provider bucket ${id} is managed by StorageBucket ${rel.owner} of another cluster (${CLUSTER_TAG} ${rel.cluster}); if that cluster is gone for good and this one replaces it, run the operator with --cluster-id=${rel.cluster}`,
      recheck: true,
    };
  }
  if (rel.type === 'thisObject' || rel.type === 'ourKey') return undefined;
  if (rel.type === 'otherObject') {
    const [ns = '', name = ''] = rel.owner.split('/');
    if (others.ownerExists(ns, name)) {
      return {
        type: 'blocked',
        reason: Reason.BucketOwnedElsewhere,
        message: `provider bucket ${id} is managed by StorageBucket ${rel.owner}; remove ${ADOPT_ANNOTATION}, or delete ${rel.owner} (deletionPolicy Orphan keeps the bucket) and this one adopts it`,
        recheck: true,
      };
    }
  } else {
    // Its tags are gone, but the key that made it names its maker, which may still live. A key
    // this object carries proves nothing by itself (it may be a copy).
    const key = external.idempotencyKey;
    const maker = key !== undefined ? others.keyOwner(key) : undefined;
    if (maker) {
      return {
        type: 'blocked',
        reason: Reason.BucketOwnedElsewhere,
        message: `provider bucket ${id} was created by StorageBucket ${maker} (its idempotency key); remove ${ADOPT_ANNOTATION}, or delete ${maker} (deletionPolicy Orphan keeps the bucket) and this one adopts it`,
        recheck: true,
      };
    }
  }
  if (bucket.metadata.annotations?.[ADOPT_ANNOTATION] === id || restoredFrom(bucket, external, rel)) return undefined;
  return {
    type: 'blocked',
    reason: Reason.BucketOwnedElsewhere,
    message: `provider bucket ${id} is not tagged as this object's and was not made by its idempotency key; set ${ADOPT_ANNOTATION} to ${id} to adopt it`,
    recheck: true,
  };
}

/**
 * Observe: never create, change or delete at the provider. (Deletion is settled before the
 * connection: it only releases a finalizer left from an earlier Full policy.)
 */
function planObserve(bucket: StorageBucket, obs: Observation): Step {
  if (!bucket.status?.id && !bucket.metadata.annotations?.[ADOPT_ANNOTATION]) {
    return {
      type: 'blocked',
      reason: Reason.InvalidSpec,
      message: `managementPolicy Observe needs the ${ADOPT_ANNOTATION} annotation naming the provider bucket to observe`,
    };
  }
  const active = obs.exists && obs.bucket.phase === 'Active';
  const transitioning = obs.exists && !active;
  return { type: 'mirror', found: obs.exists, announce: active && !wasReady(bucket), recheck: transitioning ? 'poll' : 'drift' };
}

function wasReady(bucket: StorageBucket): boolean {
  return findCondition(bucket.status?.conditions as Condition[] | undefined, ConditionType.Ready)?.status === 'True';
}

/**
 * The fields the provider must change to match the spec (and carry the operator's tags), or
 * undefined when it matches.
 */
export function diff(bucket: StorageBucket, external: ProviderBucket, clusterId: string): UpdateBucketRequest | undefined {
  const patch: { sizeGB?: number; encrypted?: boolean; tags?: Record<string, string> } = {};
  // Sizes only grow: a provider bucket larger than the spec is left alone, never shrunk.
  if (external.sizeGB < bucket.spec.sizeGB) patch.sizeGB = bucket.spec.sizeGB;
  const encrypted = bucket.spec.encrypted ?? false;
  if (external.encrypted !== encrypted) patch.encrypted = encrypted;
  const tags = missingTags(bucket, clusterId, external.tags);
  if (tags) patch.tags = tags;
  return Object.keys(patch).length > 0 ? patch : undefined;
}

/** Compile-time proof that a switch over a union handles every member. */
export function assertNever(x: never): never {
  throw new Error(`unhandled case ${JSON.stringify(x)}`);
}
