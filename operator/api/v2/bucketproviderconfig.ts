/**
 * BucketProviderConfig v2: unchanged from v1. A CRD's versions are per kind, and a v2 client
 * should find every kind of the group at v2 (one apiVersion per manifest set, one discovery
 * document), so the kind gets a v2 that converts by changing `apiVersion` alone. The schemas
 * are v1's own objects, so the two cannot drift apart.
 */
import type { V1ObjectMeta } from '@kubernetes/client-node';
import { BucketProviderConfigSpec, BucketProviderConfigStatus, BucketProviderConfigDefinition as V1Definition } from '../v1/bucketproviderconfig';
import { API_VERSION, VERSION } from './group';
import type { ApiDefinition, ApiVersionDefinition } from './schema-helpers';

export {
  BucketProviderConfigSpec,
  BucketProviderConfigStatus,
  DEFAULT_SECRET_KEY,
  ENDPOINT_USERINFO_RULE,
  HTTPS_RULE,
} from '../v1/bucketproviderconfig';

/** A v2 BucketProviderConfig object as the API server serves it. */
export interface BucketProviderConfig {
  apiVersion?: typeof API_VERSION;
  kind?: 'BucketProviderConfig';
  metadata: V1ObjectMeta;
  spec: BucketProviderConfigSpec;
  status?: BucketProviderConfigStatus;
}

function v1Version(): ApiVersionDefinition {
  const [only] = V1Definition.versions;
  if (!only) throw new Error('BucketProviderConfig v1 defines no version');
  return only;
}

/** The CRD definition of BucketProviderConfig with only its v2 version: v1's, renamed. */
export const BucketProviderConfigDefinition: ApiDefinition = {
  ...V1Definition,
  versions: [{ ...v1Version(), name: VERSION, storage: false }],
};
