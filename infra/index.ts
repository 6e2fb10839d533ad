/**
 * The `bucketoperator` package: the operator as one cdk8s construct, the typed StorageBucket
 * and BucketProviderConfig constructs, and helpers naming what the operator creates.
 */
export { BucketOperator, type BucketOperatorProps, type ConversionWebhookProps, type OperatorMode } from './operator';
export type { ApiVersionName } from '../operator/api/version-names';
export type { CertManagerIssuerRef } from './cert-manager';
export type { NetworkPolicySource, WebhookNetworkPolicyOptions } from './network-policy';
export type { LogLevel, OperatorResources, ResourceQuantities } from './manager';
export { connectionSecretName, serviceName, type BucketRef } from './buckets';
/** The label a Secret needs before the operator uses it as provider credentials, and its value. */
export { CREDENTIALS_SECRET_LABEL, CREDENTIALS_SECRET_TYPE } from '../operator/api/v1/well-known';
export * from '../imports/storage-storage.avalonhosting.example';
