/**
 * Cleanup: the one function that decides what deleting a StorageBucket does at the provider,
 * as kube-rs's `finalizer()` runs `Event::Cleanup` and Crossplane's managed reconciler calls
 * `ExternalClient.Delete` from one branch. Every shortcut to a DELETE lives here, and each one
 * goes through {@link CLEANUP} over the provenance that ownership.ts proves, so no path can
 * delete a bucket that is not provably this object's. Pure: no I/O.
 *
 * Reached (from `decide`) only for an object that is being deleted, still holds our finalizer
 * and is not paused.
 */
import type { StorageBucket } from '../api/v1';
import { IDEMPOTENCY_KEY_ANNOTATION } from '../api/v1';
import { providerChanged, sentElsewhereBlock } from './blocks';
import { CLEANUP, moved, recordedRelation, relation, sentElsewhere } from './ownership';
import { ownerTags } from './tags';
import type { DecisionFacts, Need, Observation, Step } from './plan';

const GONE: Step = { type: 'removeFinalizer', why: 'gone' };

/**
 * The next deletion step for `bucket` given `facts`, or the fact still needed. In order:
 * - the StorageBucket CRD is being deleted or is gone: the API server deletes every object of
 *   the kind, which no user asked of this one, so the finalizer is released and the provider
 *   bucket kept, whatever the policy and provenance (an uninstall must not deprovision);
 * - a policy that keeps the bucket (deletionPolicy Orphan, managementPolicy Observe) releases
 *   the finalizer with no provider call;
 * - nothing was ever sent (no id, no key): nothing can exist, release;
 * - without a connection nothing can be proven: wait for the config;
 * - the status records the bucket as made by a key minted for this object (see
 *   `recordedRelation`): DELETE it by id on condition that the provider finds this object's
 *   owner tags on it (a 404 meaning gone, a 412 that it must be observed after all);
 * - otherwise the provider is asked (with a fence on the key), and only a bucket whose tags or
 *   key name this object is deleted; a bucket recorded at another endpoint or account, or a
 *   lost create sent elsewhere, blocks rather than release what may still exist there.
 */
export function cleanup(bucket: StorageBucket, facts: DecisionFacts): Step | Need {
  // First, before any connection or provider call: none is needed to keep a bucket.
  if (facts.crdDeleting) return { type: 'removeFinalizer', why: 'crdDeleting' };
  if ((bucket.spec.deletionPolicy ?? 'Delete') === 'Orphan' || bucket.spec.managementPolicy === 'Observe') {
    return { type: 'removeFinalizer', why: 'orphan' };
  }
  const status = bucket.status ?? {};
  // Nothing was ever sent without a key, and an adoption never recorded changed nothing.
  if (!status.id && !bucket.metadata.annotations?.[IDEMPOTENCY_KEY_ANNOTATION]) return GONE;
  if (!facts.connection) return { type: 'connect' };
  if ('failure' in facts.connection) return { type: 'waitForConfig', ...facts.connection.failure };
  const to = facts.connection;
  const obs = facts.observation;
  if (!obs) {
    // The status only names the bucket; the provider proves it ours as it deletes, from the
    // owner tags (uid and cluster included), so a forged or copied status deletes nothing.
    const recorded = recordedRelation(bucket, to);
    if (status.id && recorded && CLEANUP[recorded.type] === 'delete')
      return { type: 'delete', id: status.id, ifTags: ownerTags(bucket, facts.clusterId ?? '') };
    return { type: 'observe', fence: true };
  }
  // Everything of this object's that the observation showed was just deleted.
  if (!obs.exists && obs.deleted) return GONE;
  // A release on the provider's answer must know the account is the one the bucket was made in.
  if (to.accountId === undefined) return { type: 'account' };
  const clusterId = facts.clusterId ?? '';
  // "Not found" at another provider or account than the one holding our bucket proves
  // nothing: releasing the finalizer there would orphan the bucket.
  if (moved(bucket, to) && !(obs.exists && relation(bucket, obs.bucket, clusterId).type === 'thisObject')) return providerChanged(bucket, to);
  const sentTo = sentElsewhere(bucket, to);
  if (!obs.exists) return sentTo ? sentElsewhereBlock(sentTo, to) : GONE;
  // Found by this very observation, so a 404 on the DELETE can only mean it went since.
  const ours = [obs.bucket, ...(obs.more ?? [])].find((b) => CLEANUP[relation(bucket, b, clusterId).type] === 'delete');
  return ours ? { type: 'delete', id: ours.id } : { type: 'removeFinalizer', why: 'notOurs' };
}

/**
 * What an observation leaves once bucket `id` is deleted (`obs` undefined: the DELETE was
 * decided from the status alone, which names the only bucket the key made).
 */
export function remainingAfterDelete(obs: Observation | undefined, id: string): Observation {
  if (!obs?.exists) return { exists: false, deleted: true };
  const [first, ...rest] = [obs.bucket, ...(obs.more ?? [])].filter((b) => b.id !== id);
  if (!first) return { exists: false, deleted: true };
  return rest.length > 0 ? { exists: true, bucket: first, more: rest } : { exists: true, bucket: first };
}
