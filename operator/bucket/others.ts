/**
 * What a decision about one StorageBucket may ask about the others, answered from the cache:
 * whether the owner its provider bucket's tags name still exists, and which live object made
 * a bucket with a given key.
 */
import type { StorageBucket } from '../api/v1';
import { IDEMPOTENCY_KEY_ANNOTATION } from '../api/v1';
import type { Cache } from '../runtime';
import { keyUid } from './ownership';
import type { DecisionFacts } from './plan';

/** `ownerExists` and `keyOwner` of {@link DecisionFacts} for `self`, over the bucket cache. */
export function othersInCache(
  buckets: Cache<StorageBucket>,
  self: StorageBucket,
  watchedNamespace: string | undefined,
): Required<Pick<DecisionFacts, 'ownerExists' | 'keyOwner'>> {
  return {
    // Outside the watched namespace the operator cannot know, so it assumes the owner exists:
    // another instance may manage it.
    ownerExists: (namespace, name) =>
      (watchedNamespace !== undefined && namespace !== watchedNamespace) || buckets.get({ namespace, name }) !== undefined,
    // The object whose uid the key was minted for, or, for a key from before keys carried a
    // uid, one whose key annotation is `key`. A scan, asked only about a bucket whose owner
    // tags are gone, which is rare.
    keyOwner: (key) => {
      const uid = keyUid(key);
      for (const b of buckets.list()) {
        if (b.metadata.uid === self.metadata.uid) continue;
        const maker = uid !== undefined ? b.metadata.uid === uid : b.metadata.annotations?.[IDEMPOTENCY_KEY_ANNOTATION] === key;
        if (maker) return `${b.metadata.namespace ?? ''}/${b.metadata.name ?? ''}`;
      }
      return undefined;
    },
  };
}
