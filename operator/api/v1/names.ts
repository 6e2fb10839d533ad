/**
 * What the v1 kinds are called and their plain defaults, with no schema: a module that reads
 * objects and names their kinds (the bucket controllers' resource kinds, the kubectl plugin)
 * loads this one and not the schemas, which are built when their modules load. The kinds'
 * definitions (storagebucket.ts, bucketproviderconfig.ts) take their names from here.
 */

/** The names a kind is known by in the API: its CRD's `spec.names`. */
export interface KindNames {
  readonly kind: string;
  readonly listKind: string;
  readonly plural: string;
  readonly singular: string;
  readonly shortNames: readonly string[];
}

/** StorageBucket's names (`kubectl get sbucket`). */
export const STORAGE_BUCKET_NAMES = {
  kind: 'StorageBucket',
  listKind: 'StorageBucketList',
  plural: 'storagebuckets',
  singular: 'storagebucket',
  shortNames: ['sbucket'],
} as const satisfies KindNames;

/** BucketProviderConfig's names (`kubectl get bpc`). */
export const PROVIDER_CONFIG_NAMES = {
  kind: 'BucketProviderConfig',
  listKind: 'BucketProviderConfigList',
  plural: 'bucketproviderconfigs',
  singular: 'bucketproviderconfig',
  shortNames: ['bpc'],
} as const satisfies KindNames;

/** Key used in the Secret when a BucketProviderConfig's `secretRef.key` is not given. */
export const DEFAULT_SECRET_KEY = 'apiKey';
