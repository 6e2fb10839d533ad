/**
 * Resource kinds the bucket controllers read and write. Names and constants only (no schema
 * and no runtime code is loaded with them), so the kubectl plugin reads with the same kinds.
 */
import type { ResourceKind } from '../runtime';
import { GROUP, VERSION } from '../api/v1/group';
import { PROVIDER_CONFIG_NAMES, STORAGE_BUCKET_NAMES } from '../api/v1/names';

/** storagebuckets.storage.avalonhosting.example/v1 */
export const STORAGE_BUCKET: ResourceKind = {
  group: GROUP,
  version: VERSION,
  kind: STORAGE_BUCKET_NAMES.kind,
  plural: STORAGE_BUCKET_NAMES.plural,
  namespaced: true,
};

/** bucketproviderconfigs.storage.avalonhosting.example/v1 */
export const PROVIDER_CONFIG: ResourceKind = {
  group: GROUP,
  version: VERSION,
  kind: PROVIDER_CONFIG_NAMES.kind,
  plural: PROVIDER_CONFIG_NAMES.plural,
  namespaced: true,
};

/** core/v1 Secret */
export const SECRET: ResourceKind = { group: '', version: 'v1', kind: 'Secret', plural: 'secrets', namespaced: true };

/** core/v1 Service */
export const SERVICE: ResourceKind = { group: '', version: 'v1', kind: 'Service', plural: 'services', namespaced: true };
