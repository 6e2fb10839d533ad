/**
 * Conversion between the API versions through one hub form per kind; the design is described
 * in convert.ts. The conversion webhook's logic: pure functions, no I/O.
 */
export { bucketV1ToV2, bucketV2ToV1, convert, CONVERTIBLE_API_VERSIONS, type ConversionResult, type ConvertibleObject } from './convert';
export type {
  BucketProviderConfigHub,
  DeletionPolicy,
  HubSize,
  StorageBucketHub,
  StorageBucketHubProviderFacts,
  StorageBucketHubSpec,
  StorageBucketHubStatus,
} from './hub';
export { configToHub, hubToConfigV1, hubToConfigV2 } from './provider-config';
export { decodeSizeAnnotation, encodeSizeAnnotation, type SizeAnnotationData } from './size-annotation';
export { hubToV1, v1ToHub } from './storagebucket-v1';
export { hubToV2, v2ToHub } from './storagebucket-v2';
