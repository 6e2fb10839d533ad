/**
 * The `bucketoperator` package: the operator as one cdk8s construct, the typed StorageBucket
 * and BucketProviderConfig constructs, and helpers naming what the operator creates.
 */
export { BucketOperator, type BucketOperatorProps, type OperatorMode } from './operator';
export type { LogLevel, OperatorResources, ResourceQuantities } from './manager';
export { connectionSecretName, serviceName, type BucketRef } from './buckets';
export * from '../imports/storage-storage.avalonhosting.example';
