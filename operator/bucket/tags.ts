/**
 * Tags the operator puts on the provider buckets it manages. They are part of the desired
 * state: a bucket missing one (adopted, created before a tag existed, or edited at the
 * provider) gets it back through an update, so the bulk drift scan, which lists by
 * {@link MANAGED_BY_TAG}, sees every bucket the operator manages.
 */
import type { StorageBucket } from '../api/v1';
import { MANAGED_BY_VALUE } from '../api/v1';

/** Tag the drift scan filters the provider's list on. */
export const MANAGED_BY_TAG = 'managed-by';
/** Namespace of the owning StorageBucket; with the name, tells our bucket from a copy's. */
export const NAMESPACE_TAG = 'kubernetes-namespace';
/** Name of the owning StorageBucket. */
export const NAME_TAG = 'kubernetes-name';
/** UID of the owning StorageBucket (changes on a backup and restore; the tag follows). */
export const UID_TAG = 'kubernetes-uid';
/**
 * Identity of the cluster the owning StorageBucket lives in (the operator's --cluster-id, by
 * default the kube-system namespace's uid): two clusters sharing a provider account never
 * take each other's buckets for their own.
 */
export const CLUSTER_TAG = 'kubernetes-cluster';

/** The list filter that finds every bucket this operator manages. */
export const MANAGED_FILTER: Readonly<Record<string, string>> = { [MANAGED_BY_TAG]: MANAGED_BY_VALUE };

/** The tags the operator owns on `bucket`'s provider bucket, in cluster `clusterId` ('' when unknown: no cluster tag). */
export function operatorTags(bucket: StorageBucket, clusterId: string): Record<string, string> {
  return {
    ...MANAGED_FILTER,
    [NAMESPACE_TAG]: bucket.metadata.namespace ?? '',
    [NAME_TAG]: bucket.metadata.name ?? '',
    [UID_TAG]: bucket.metadata.uid ?? '',
    ...(clusterId ? { [CLUSTER_TAG]: clusterId } : {}),
  };
}

/**
 * The tags that name `bucket` as the owner, in cluster `clusterId` ('' when unknown): the
 * condition of a delete decided without asking the provider first.
 */
export function ownerTags(bucket: StorageBucket, clusterId: string): Record<string, string> {
  const { [MANAGED_BY_TAG]: _managed, ...owner } = operatorTags(bucket, clusterId);
  return owner;
}

/**
 * The full tag map to send when the provider's tags lack one of ours, or undefined when they
 * are all there. Tags others set are kept: the provider's update replaces the whole map.
 */
export function missingTags(bucket: StorageBucket, clusterId: string, current: Readonly<Record<string, string>>): Record<string, string> | undefined {
  const ours = operatorTags(bucket, clusterId);
  const complete = Object.entries(ours).every(([k, v]) => current[k] === v);
  return complete ? undefined : { ...current, ...ours };
}
