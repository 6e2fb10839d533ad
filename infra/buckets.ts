/**
 * Helpers for apps that declare StorageBuckets: the names of the objects the operator will
 * create for a bucket, so a workload can reference them before they exist. They call the
 * operator's own naming functions, so the two cannot disagree.
 */
import type { StorageBucket, StorageBucketV2 } from '../imports/storage-storage.avalonhosting.example';
import { accessSecretName, serviceName as ownedServiceName } from '../operator/bucket/names';

/** A StorageBucket construct of either version, or the bucket's name. */
export type BucketRef = StorageBucket | StorageBucketV2 | string;

function nameOf(bucket: BucketRef): string {
  return typeof bucket === 'string' ? bucket : bucket.name;
}

/**
 * Name of the Secret the operator writes into the bucket's namespace, with the keys
 * `bucketId`, `endpoint`, `region` and `providerEndpoint` (never the provider API key).
 */
export function connectionSecretName(bucket: BucketRef): string {
  return accessSecretName(nameOf(bucket));
}

/** Name of the ExternalName Service giving the bucket an in-cluster DNS name. */
export function serviceName(bucket: BucketRef): string {
  return ownedServiceName(nameOf(bucket));
}
