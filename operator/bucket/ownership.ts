/**
 * Whose a provider bucket is, proven from what the provider says, and the one table of what
 * deleting a StorageBucket may do to it (kube-rs's `finalizer()` splits Apply from Cleanup;
 * this is Cleanup's rule). Pure: no I/O.
 *
 * Identity is the object's namespace, name and uid in this cluster (the cluster's identity is
 * the operator's `--cluster-id`, by default the kube-system namespace's uid), written to the
 * provider bucket's owner tags when the operator creates or adopts it. Names alone would let a
 * re-created object of the same name, a restored backup or a second cluster sharing the
 * provider account act on one bucket; the uid and the cluster tell them apart.
 */
import type { StorageBucket } from '../api/v1';
import { IDEMPOTENCY_KEY_ANNOTATION } from '../api/v1';
import type { ProviderBucket } from '../provider-client';
import { CLUSTER_TAG, NAME_TAG, NAMESPACE_TAG, UID_TAG } from './tags';

/**
 * How the provider bucket relates to the StorageBucket, read from its owner tags and the key
 * that made it, most specific first:
 * - `otherCluster`: its cluster tag names another cluster;
 * - `otherObject`: its tags name another StorageBucket of this cluster;
 * - `thisObject`: its tags name this object, uid included;
 * - `ourKey`: this object's current idempotency key made it (and no tag names anyone else):
 *   this object's bucket although its tags lag, e.g. a restored backup (new uid, same
 *   annotations) or a create answered before its tags were checked;
 * - `earlierObject`: its tags name this namespace and name with another uid (or none), and
 *   no key of ours made it: an earlier object of the same name, deleted with Orphan;
 * - `untagged`: no owner tags: a bucket made outside the operator.
 */
export type Relation =
  | { readonly type: 'otherCluster'; readonly cluster: string; readonly owner: string }
  | { readonly type: 'otherObject'; readonly owner: string }
  | { readonly type: 'thisObject' }
  | { readonly type: 'ourKey' }
  | { readonly type: 'earlierObject' }
  | { readonly type: 'untagged' };

/**
 * Cleanup's table: for each way a bucket came to be referenced, what deleting the object may
 * do at the provider. `delete` only where the bucket is provably this object's: its tags name
 * it (uid included) or its key made it. Everything else keeps the bucket and only releases the
 * finalizer. (Observe and deletionPolicy Orphan never reach it: they keep the bucket whatever
 * it is, see plan.ts.)
 */
export const CLEANUP: Readonly<Record<Relation['type'], 'delete' | 'keep'>> = {
  thisObject: 'delete',
  ourKey: 'delete',
  earlierObject: 'keep',
  untagged: 'keep',
  otherObject: 'keep',
  otherCluster: 'keep',
};

/**
 * What `external` is to `bucket`, for an operator in cluster `clusterId` ('' when unknown:
 * cluster tags are then neither checked nor written). A bucket without a cluster tag was
 * tagged before the tag existed and counts as this cluster's; its next update adds the tag.
 */
export function relation(bucket: StorageBucket, external: ProviderBucket, clusterId: string): Relation {
  const tags = external.tags;
  const ns = tags[NAMESPACE_TAG];
  const name = tags[NAME_TAG];
  const owner = `${ns ?? ''}/${name ?? ''}`;
  const cluster = tags[CLUSTER_TAG];
  if (ns && name && cluster && clusterId && cluster !== clusterId) return { type: 'otherCluster', cluster, owner };
  if (ns && name && (ns !== bucket.metadata.namespace || name !== bucket.metadata.name)) return { type: 'otherObject', owner };
  if (ns && name && tags[UID_TAG] !== undefined && tags[UID_TAG] === bucket.metadata.uid) return { type: 'thisObject' };
  const key = bucket.metadata.annotations?.[IDEMPOTENCY_KEY_ANNOTATION];
  if (key !== undefined && external.idempotencyKey === key) return { type: 'ourKey' };
  return ns && name ? { type: 'earlierObject' } : { type: 'untagged' };
}

/** True when deleting `bucket` may delete `external` at the provider (see {@link CLEANUP}). */
export function mayDelete(bucket: StorageBucket, external: ProviderBucket, clusterId: string): boolean {
  return CLEANUP[relation(bucket, external, clusterId).type] === 'delete';
}
