/**
 * The v2 API of BucketOperator: schemas, static types and CRD definitions. Not served yet:
 * v2 needs the conversion webhook (operator/api/convert is its logic). Annotation, label and
 * finalizer names are version-independent and come from v1.
 */
export * from './group';
export * from './schema-helpers';
export * from './size';
export * from './storagebucket';
export * from './bucketproviderconfig';
export * from './validate';
export * from '../v1/well-known';

import { BucketProviderConfigDefinition } from './bucketproviderconfig';
import { StorageBucketDefinition } from './storagebucket';

/** Every kind of the API at v2, in the order their CRDs are rendered. */
export const ALL_DEFINITIONS = [StorageBucketDefinition, BucketProviderConfigDefinition] as const;
