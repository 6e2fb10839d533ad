/** BucketProviderConfig v1 and v2 <-> hub: the versions do not differ, so only `apiVersion` changes. */
import * as v1 from '../v1';
import * as v2 from '../v2';
import type { BucketProviderConfigHub } from './hub';
import { compact } from './objects';

/** A BucketProviderConfig of either version in hub form. */
export function configToHub(config: v1.BucketProviderConfig | v2.BucketProviderConfig): BucketProviderConfigHub {
  return compact({ metadata: config.metadata, spec: config.spec, status: config.status });
}

/** The v1 form of `hub`. */
export function hubToConfigV1(hub: BucketProviderConfigHub): v1.BucketProviderConfig {
  return compact({ apiVersion: v1.API_VERSION, kind: 'BucketProviderConfig' as const, ...hub });
}

/** The v2 form of `hub`. */
export function hubToConfigV2(hub: BucketProviderConfigHub): v2.BucketProviderConfig {
  return compact({ apiVersion: v2.API_VERSION, kind: 'BucketProviderConfig' as const, ...hub });
}
