/**
 * The provider seam of the StorageBucket controller, shaped as Crossplane's ExternalClient:
 * `observe` reports facts and changes nothing (but a fence), `create`, `update` and `delete`
 * act, and each is idempotent. The provider-specific rules live here: which id or key to look
 * up, the owner tags a create carries, the key fence, and how the provider's refusal of a key
 * becomes an answer rather than a failure. What any of it means for this object is
 * ownership.ts's to say; what to do next is plan.ts's and cleanup.ts's.
 */
import type { StorageBucket } from '../api/v1';
import { ADOPT_ANNOTATION, IDEMPOTENCY_KEY_ANNOTATION } from '../api/v1';
import { isProviderError, type ProviderBucket, type ProviderClient, type UpdateBucketRequest } from '../provider-client';
import { isKeyReused, isKeySpent } from './failure';
import { foreignKey, relation } from './ownership';
import type { Observation } from './plan';
import { MANAGED_FILTER, operatorTags, UID_TAG } from './tags';

/** The answer of a create: the bucket it made, or what the provider's refusal tells. */
export type CreateResult = { readonly created: ProviderBucket } | { readonly replan: Observation };

/** Observe, create, update and delete of one object's provider bucket. */
export interface ExternalClient {
  /**
   * The bucket `bucket` refers to (its recorded id, else its adopt-id, else the bucket its
   * current key made). `fence`: the object is being deleted, so the key's bucket is looked up
   * too, and a key that made nothing is revoked, so a create still in flight can never commit
   * after the finalizer is gone.
   */
  observe(bucket: StorageBucket, fence: boolean, signal: AbortSignal): Promise<Observation>;
  /** Creates with `key` and this object's owner tags; a refused key is an answer to decide again on. */
  create(bucket: StorageBucket, key: string, signal: AbortSignal): Promise<CreateResult>;
  /** Changes bucket `id`; returns it as the provider now reports it. */
  update(id: string, patch: UpdateBucketRequest, signal: AbortSignal): Promise<ProviderBucket>;
  /**
   * Deletes bucket `id`: true when deleted, false when it was already gone, `notProven` when
   * `ifTags` was given and the provider did not find them on it (nothing deleted).
   */
  delete(id: string, signal: AbortSignal, ifTags?: Readonly<Record<string, string>>): Promise<boolean | 'notProven'>;
}

/**
 * How a bucket found by idempotency key relates to `bucket`: its own (tags name it, a key
 * minted for it made it, or an earlier object of its name made it with the key a restored
 * backup carries), or another object's: the key was copied with a manifest, in this cluster or
 * another, told apart by the tags, or, with the tags gone, by the uid the key was minted for.
 */
export function keyObservation(bucket: StorageBucket, byKey: ProviderBucket | undefined, clusterId: string): Observation {
  if (!byKey) return { exists: false };
  const rel = relation(bucket, byKey, clusterId).type;
  const foreign = rel === 'otherObject' || rel === 'otherCluster' || (rel === 'untagged' && foreignKey(bucket, byKey.idempotencyKey));
  return foreign ? { exists: false, foreignKey: true } : { exists: true, bucket: byKey };
}

/** The {@link ExternalClient} over one provider connection's client, in cluster `clusterId`. */
export function externalClient(client: ProviderClient, clusterId: string): ExternalClient {
  const observeKey = async (bucket: StorageBucket, fence: boolean, signal: AbortSignal): Promise<Observation> => {
    const key = bucket.metadata.annotations?.[IDEMPOTENCY_KEY_ANNOTATION];
    if (!key) return { exists: false };
    let found = await client.findByIdempotencyKey(key, signal);
    if (!found && fence) found = await client.revokeIdempotencyKey(key, signal);
    return keyObservation(bucket, found, clusterId);
  };
  return {
    async observe(bucket, fence, signal) {
      const id = bucket.status?.id ?? bucket.metadata.annotations?.[ADOPT_ANNOTATION];
      const found = id ? await client.getBucket(id, signal) : undefined;
      const uid = bucket.metadata.uid;
      const taggedWithUid = async () =>
        uid ? await client.listBuckets({ tags: { ...MANAGED_FILTER, [UID_TAG]: uid } }, signal, { maxPages: 1 }) : [];
      if (!fence) {
        if (found) return { exists: true, bucket: found };
        // No recorded id, or it vanished: a create with the current key may have happened
        // without its answer reaching us (the crash window), so look the key up before creating.
        const byKey = await observeKey(bucket, false, signal);
        if (byKey.exists) return byKey;
        // Nor that: a bucket tagged with this object's uid is still its own (the id and key that
        // named it overwritten since), and creating another would make two.
        const [tagged] = await taggedWithUid();
        return tagged ? { exists: true, bucket: tagged } : byKey;
      }
      // Deleting: besides what the id names, the bucket the current key made (a create whose
      // answer was lost before an adopt-id was set), and every bucket tagged with this object's
      // uid (its id and key overwritten since): cleanup judges each, so nothing of ours is left.
      const key = bucket.metadata.annotations?.[IDEMPOTENCY_KEY_ANNOTATION];
      const byKey = found && found.idempotencyKey === key ? undefined : await observeKey(bucket, true, signal);
      const tagged = await taggedWithUid();
      const all = [found, byKey?.exists ? byKey.bucket : undefined, ...tagged].filter((b): b is ProviderBucket => b !== undefined);
      const [first, ...rest] = all.filter((b, i) => all.findIndex((x) => x.id === b.id) === i);
      if (!first) return byKey ?? { exists: false };
      return rest.length > 0 ? { exists: true, bucket: first, more: rest } : { exists: true, bucket: first };
    },
    async create(bucket, key, signal) {
      const spec = bucket.spec;
      try {
        const created = await client.createBucket(
          { region: spec.region, sizeGB: spec.sizeGB, encrypted: spec.encrypted ?? false, tags: operatorTags(bucket, clusterId) },
          key,
          signal,
        );
        return { created };
      } catch (err) {
        // An answer, not a failure: the key can never create again, so decide with a new one.
        if (isKeySpent(err)) return { replan: { exists: false, keySpent: true } };
        // Used for another request: fence it (a create of ours still pending commits no more),
        // then decide on what it made, if anything, or with a new key.
        if (isKeyReused(err)) {
          const made = await client.revokeIdempotencyKey(key, signal);
          return { replan: made ? keyObservation(bucket, made, clusterId) : { exists: false, keySpent: true } };
        }
        throw err;
      }
    },
    update: (id, patch, signal) => client.updateBucket(id, patch, signal),
    async delete(id, signal, ifTags) {
      try {
        return await client.deleteBucket(id, signal, ifTags ? { ifTags } : {});
      } catch (err) {
        if (ifTags && isProviderError(err) && err.status === 412) return 'notProven';
        throw err;
      }
    },
  };
}
