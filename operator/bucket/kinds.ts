/** Resource kinds the bucket controllers read and write. */
import type { ResourceKind } from '../runtime';
import { BucketProviderConfigDefinition, GROUP, StorageBucketDefinition, VERSION } from '../api/v1';

/** storagebuckets.storage.avalonhosting.example/v1 */
export const STORAGE_BUCKET: ResourceKind = {
  group: GROUP,
  version: VERSION,
  kind: StorageBucketDefinition.kind,
  plural: StorageBucketDefinition.plural,
  namespaced: true,
};

/** bucketproviderconfigs.storage.avalonhosting.example/v1 */
export const PROVIDER_CONFIG: ResourceKind = {
  group: GROUP,
  version: VERSION,
  kind: BucketProviderConfigDefinition.kind,
  plural: BucketProviderConfigDefinition.plural,
  namespaced: true,
};

/** core/v1 Secret */
export const SECRET: ResourceKind = { group: '', version: 'v1', kind: 'Secret', plural: 'secrets', namespaced: true };

/** core/v1 Service */
export const SERVICE: ResourceKind = { group: '', version: 'v1', kind: 'Service', plural: 'services', namespaced: true };
