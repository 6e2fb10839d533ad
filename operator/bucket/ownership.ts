/**
 * Provenance: how a StorageBucket came to reference a provider bucket, and so what it may do
 * to it. Every question of "where did this bucket come from" is answered here, and only here;
 * the one table of what deleting may do ({@link CLEANUP}) is here too. Pure: no I/O.
 *
 * The operator records provenance from its own actions, never from a value a user can copy:
 * - Created by this object: the idempotency key the create was sent with is minted for this
 *   object's uid ({@link mintKey}: `<uid>.<nonce>`), so the provider's record that the key made
 *   a bucket names this object and no other. A key annotation copied into another object (a
 *   manifest from `kubectl get -o yaml`, a restored backup: new uid) carries a foreign uid and
 *   proves nothing there. `status.idempotencyKey` is written only with such a key
 *   ({@link recordedKey}).
 * - Adopted: the operator wrote this object's owner tags (namespace, name, uid and cluster)
 *   onto the bucket after checking that no live owner holds it.
 * - Observed: a status id and nothing else; never ours.
 *
 * Identity is the object's namespace, name and uid in this cluster (the cluster's identity is
 * the operator's `--cluster-id`, by default the kube-system namespace's uid). Names alone would
 * let a re-created object of the same name, a restored backup or a second cluster sharing the
 * provider account act on one bucket; the uid and the cluster tell them apart.
 */
import type { StorageBucket } from '../api/v1';
import { ADOPT_ANNOTATION, CREATE_TARGET_ANNOTATION, IDEMPOTENCY_KEY_ANNOTATION } from '../api/v1';
import type { ProviderBucket } from '../provider-client';
import { CLUSTER_TAG, NAME_TAG, NAMESPACE_TAG, UID_TAG } from './tags';

/**
 * How the provider bucket relates to the StorageBucket, read from its owner tags and the key
 * that made it, most specific first:
 * - `otherCluster`: its cluster tag names another cluster;
 * - `otherObject`: its tags name another StorageBucket of this cluster;
 * - `thisObject`: its tags name this object, uid included;
 * - `ourKey`: a key minted for this object's uid made it (and no tag names anyone else): this
 *   object's bucket although its tags lag (a create answered before its tags were checked);
 * - `earlierObject`: its tags name this namespace and name with another uid (or none), and no
 *   key of this object made it: an earlier object of the same name (deleted with Orphan, or
 *   the original of a restored backup);
 * - `untagged`: no owner tags: a bucket made outside the operator, or whose tags were removed.
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
 * it (uid and cluster included) or a key minted for its uid made it. Everything else keeps the
 * bucket and only releases the finalizer. (Observe and deletionPolicy Orphan never reach it:
 * they keep the bucket whatever it is, see cleanup.ts.)
 */
export const CLEANUP: Readonly<Record<Relation['type'], 'delete' | 'keep'>> = {
  thisObject: 'delete',
  ourKey: 'delete',
  earlierObject: 'keep',
  untagged: 'keep',
  otherObject: 'keep',
  otherCluster: 'keep',
};

/** Between the uid and the nonce of a minted key; a uid never contains it. */
const KEY_SEPARATOR = '.';

/**
 * A new idempotency key for `bucket`: its uid and a fresh `nonce`. The provider keeps the key
 * with the bucket it makes, so the bucket's own record names the object that made it.
 */
export function mintKey(bucket: StorageBucket, nonce: string): string {
  return `${bucket.metadata.uid ?? ''}${KEY_SEPARATOR}${nonce}`;
}

/**
 * True when `key` was minted for `bucket` (its uid), so a provider bucket made with it is
 * this object's. A key minted for another object (copied, restored) or before keys carried a
 * uid is not.
 */
export function keyMintedFor(bucket: StorageBucket, key: string | undefined): boolean {
  const uid = bucket.metadata.uid;
  return Boolean(uid) && key !== undefined && key.startsWith(`${uid ?? ''}${KEY_SEPARATOR}`);
}

/** The uid a minted key names, if it has the minted form. */
export function keyUid(key: string): string | undefined {
  const at = key.indexOf(KEY_SEPARATOR);
  return at > 0 ? key.slice(0, at) : undefined;
}

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
  if (keyMintedFor(bucket, external.idempotencyKey)) return { type: 'ourKey' };
  return ns && name ? { type: 'earlierObject' } : { type: 'untagged' };
}

/** True when deleting `bucket` may delete `external` at the provider (see {@link CLEANUP}). */
export function mayDelete(bucket: StorageBucket, external: ProviderBucket, clusterId: string): boolean {
  return CLEANUP[relation(bucket, external, clusterId).type] === 'delete';
}

/**
 * The key to record in `status.idempotencyKey` beside the id of `external`, the provider
 * bucket this reconcile saw: its key only when minted for this object, so an observed or
 * adopted bucket's key is never recorded as ours. Without a fresh sight the recorded key stays
 * (it is trusted only when minted for this object, see {@link recordedRelation}).
 */
export function recordedKey(bucket: StorageBucket, external: ProviderBucket | undefined): string | undefined {
  if (!external) return bucket.status?.idempotencyKey;
  return keyMintedFor(bucket, external.idempotencyKey) ? external.idempotencyKey : undefined;
}

/** Where the operator's connection reaches: the provider endpoint and account. */
export interface Place {
  readonly endpoint: string;
  /** The provider's name for the account; undefined when not known. */
  readonly accountId?: string;
}

/**
 * True when the status records the bucket at another endpoint, or in another provider
 * account, than `to` (either side unknown: no).
 */
export function moved(bucket: StorageBucket, to: Place): boolean {
  const status = bucket.status;
  if (!status?.id) return false;
  return (status.providerEndpoint !== undefined && status.providerEndpoint !== to.endpoint) || accountChanged(bucket, to);
}

/** True when the recorded account and the connection's are both known and differ. */
export function accountChanged(bucket: StorageBucket, to: Place): boolean {
  const recorded = bucket.status?.account;
  return recorded !== undefined && to.accountId !== undefined && recorded !== to.accountId;
}

/**
 * The relation the status alone proves, without asking the provider: `ourKey` when the
 * operator recorded, for the recorded id, that a key minted for this object made it, that key
 * is still the current one (a rotation since means a later create may exist: ask), the bucket
 * is recorded at the endpoint and in the account `to` reaches, and no adoption is involved.
 * Otherwise nothing: an id recorded while observing or adopting is only a name, so the
 * provider is asked.
 */
export function recordedRelation(bucket: StorageBucket, to: Place): Relation | undefined {
  const key = bucket.metadata.annotations?.[IDEMPOTENCY_KEY_ANNOTATION];
  const status = bucket.status ?? {};
  if (!status.id || key === undefined || status.idempotencyKey !== key || !keyMintedFor(bucket, key)) return undefined;
  if (bucket.metadata.annotations?.[ADOPT_ANNOTATION] || moved(bucket, to)) return undefined;
  // The account must be known on both sides: the same id in another account is another bucket.
  if (!status.account || !to.accountId) return undefined;
  return { type: 'ourKey' };
}

/**
 * The {@link CREATE_TARGET_ANNOTATION} value for a create from `bucket` through `to`: written
 * with the key, before the create is sent.
 */
export function createTarget(bucket: StorageBucket, to: Place): string {
  return `${bucket.metadata.uid ?? ''} ${to.accountId ?? ''} ${to.endpoint}`;
}

/** `endpoint`, with the account when known, as messages name a provider. */
export function describeTarget(endpoint: string, accountId: string | undefined): string {
  return accountId ? `${endpoint} (account ${accountId})` : endpoint;
}

/**
 * Where a pending create with this object's current key went, when that is not where the
 * connection reaches now and no answer recorded an id; undefined otherwise. The value counts
 * when written for this uid, or for the uid the current key was minted for: key and target
 * were written together, so the target says where that key was sent, whoever carries it now
 * (a restored backup whose config was re-pointed before its bucket was found again). A value
 * written for another uid than the key's says nothing.
 */
export function sentElsewhere(bucket: StorageBucket, to: Place): string | undefined {
  const value = bucket.metadata.annotations?.[CREATE_TARGET_ANNOTATION];
  if (bucket.status?.id || !value) return undefined;
  const [uid = '', account = '', endpoint = ''] = value.split(' ');
  const key = bucket.metadata.annotations?.[IDEMPOTENCY_KEY_ANNOTATION];
  if (uid !== bucket.metadata.uid && (key === undefined || keyUid(key) !== uid)) return undefined;
  const accountMoved = account !== '' && to.accountId !== undefined && account !== to.accountId;
  return endpoint !== to.endpoint || accountMoved ? describeTarget(endpoint, account || undefined) : undefined;
}

/**
 * The key of `bucket` that can only have been sent by another object: one minted for another
 * uid. Its lookup at the provider finds that object's bucket, never one this object made.
 */
export function foreignKey(bucket: StorageBucket, key: string | undefined): boolean {
  if (key === undefined) return false;
  const uid = keyUid(key);
  return uid !== undefined && uid !== bucket.metadata.uid && !keyMintedFor(bucket, key);
}

/**
 * True when `external` is the bucket of an earlier object of this name that this object was
 * restored from: the key this object carries made it, and its owner tags still name this
 * namespace and name with the uid that key was minted for (a key from before keys carried a
 * uid: with no tags left to contradict it).
 */
export function restoredFrom(bucket: StorageBucket, external: ProviderBucket, rel: Relation): boolean {
  const key = bucket.metadata.annotations?.[IDEMPOTENCY_KEY_ANNOTATION];
  if (key === undefined || external.idempotencyKey !== key) return false;
  const minted = keyUid(key);
  if (minted === undefined) return rel.type === 'earlierObject' || rel.type === 'untagged';
  return rel.type === 'earlierObject' && external.tags[UID_TAG] === minted;
}
