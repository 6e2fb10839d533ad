/** The v1 API of BucketOperator: schemas, static types, CRD definitions and well-known names. */
export * from './group';
export * from './names';
export * from './schema-helpers';
export * from './storagebucket';
export * from './bucketproviderconfig';
export * from './well-known';
export * from './validate';

import { BucketProviderConfigDefinition } from './bucketproviderconfig';
import { StorageBucketDefinition } from './storagebucket';

/** Every kind of the API, in the order their CRDs are rendered. */
export const ALL_DEFINITIONS = [StorageBucketDefinition, BucketProviderConfigDefinition] as const;
