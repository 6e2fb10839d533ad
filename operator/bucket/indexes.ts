/**
 * Cache indexes and watch mappings: which buckets use a config, which configs read a Secret.
 * A change to a config or its Secret re-reconciles exactly the objects that depend on it.
 */
import type { V1Secret } from '@kubernetes/client-node';
import type { BucketProviderConfig, StorageBucket } from '../api/v1';
import { keyOf, type Cache, type ObjectKey } from '../runtime';

/** Index of StorageBuckets by `namespace/providerRef.name`. */
export const BUCKETS_BY_CONFIG = 'bucketsByConfig';

/** Index of BucketProviderConfigs by `namespace/secretRef.name`. */
export const CONFIGS_BY_SECRET = 'configsBySecret';

/** Index function for {@link BUCKETS_BY_CONFIG}. */
export function bucketConfigIndex(b: StorageBucket): string[] {
  const ref = b.spec?.providerRef?.name;
  return ref ? [`${b.metadata.namespace ?? ''}/${ref}`] : [];
}

/** Index function for {@link CONFIGS_BY_SECRET}. */
export function configSecretIndex(c: BucketProviderConfig): string[] {
  const ref = c.spec?.secretRef?.name;
  return ref ? [`${c.metadata.namespace ?? ''}/${ref}`] : [];
}

/** Maps a config to the buckets that use it. */
export function bucketsForConfig(buckets: Cache<StorageBucket>) {
  return (c: BucketProviderConfig): ObjectKey[] =>
    buckets.byIndex(BUCKETS_BY_CONFIG, `${c.metadata.namespace ?? ''}/${c.metadata.name ?? ''}`).map(keyOf);
}

/** Maps a Secret to the configs that read it. */
export function configsForSecret(configs: Cache<BucketProviderConfig>) {
  return (s: V1Secret): ObjectKey[] => configs.byIndex(CONFIGS_BY_SECRET, `${s.metadata?.namespace ?? ''}/${s.metadata?.name ?? ''}`).map(keyOf);
}

/** Maps a Secret to the buckets whose config reads it (for credential rotation). */
export function bucketsForSecret(configs: Cache<BucketProviderConfig>, buckets: Cache<StorageBucket>) {
  const toConfigs = configsForSecret(configs);
  return (s: V1Secret): ObjectKey[] => toConfigs(s).flatMap((k) => buckets.byIndex(BUCKETS_BY_CONFIG, `${k.namespace}/${k.name}`).map(keyOf));
}

/** Maps a bucket to its config (so the config's usage count and finalizer follow). */
export function configForBucket(b: StorageBucket): ObjectKey[] {
  const ref = b.spec?.providerRef?.name;
  return ref ? [{ namespace: b.metadata.namespace ?? '', name: ref }] : [];
}
