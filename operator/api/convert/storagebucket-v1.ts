/** StorageBucket v1 <-> hub. v1 is the storage version; its integer `sizeGB` is the one lossy spot. */
import * as v1 from '../v1';
import type { StorageBucketHub, StorageBucketHubStatus } from './hub';
import { compact, withAnnotation } from './objects';
import { decodeSizeAnnotation, encodeSizeAnnotation } from './size-annotation';

/** A v1 StorageBucket in hub form; the size annotation becomes the size's v2 spelling. */
export function v1ToHub(bucket: v1.StorageBucket): StorageBucketHub {
  const { spec, metadata } = bucket;
  const carried = decodeSizeAnnotation(spec.sizeGB, metadata.annotations?.[v1.V2_SIZE_ANNOTATION]);
  return compact({
    metadata: withAnnotation(metadata, v1.V2_SIZE_ANNOTATION, carried.userValue),
    spec: compact({
      region: spec.region,
      size: compact({ gb: spec.sizeGB, quantity: carried.quantity }),
      encrypted: spec.encrypted,
      providerConfigName: spec.providerRef.name,
      deletionPolicy: spec.deletionPolicy,
      managementPolicy: spec.managementPolicy,
    }),
    status: bucket.status && statusToHub(bucket.status),
  });
}

/** The v1 form of `hub`; a size v1 cannot spell travels in the size annotation. */
export function hubToV1(hub: StorageBucketHub): v1.StorageBucket {
  const { spec, metadata } = hub;
  const annotation = encodeSizeAnnotation(spec.size.gb, {
    quantity: spec.size.quantity,
    userValue: metadata.annotations?.[v1.V2_SIZE_ANNOTATION],
  });
  return compact({
    apiVersion: v1.API_VERSION,
    kind: 'StorageBucket' as const,
    metadata: withAnnotation(metadata, v1.V2_SIZE_ANNOTATION, annotation),
    spec: compact({
      region: spec.region,
      sizeGB: spec.size.gb,
      encrypted: spec.encrypted,
      providerRef: { name: spec.providerConfigName },
      deletionPolicy: spec.deletionPolicy,
      managementPolicy: spec.managementPolicy,
    }),
    status: hub.status && statusFromHub(hub.status),
  });
}

function statusToHub(status: v1.StorageBucketStatus): StorageBucketHubStatus {
  return compact({
    observedGeneration: status.observedGeneration,
    conditions: status.conditions,
    phase: status.phase,
    lastHandledReconcileAt: status.lastHandledReconcileAt,
    idempotencyKey: status.idempotencyKey,
    providerEndpoint: status.providerEndpoint,
    provider: compact({
      id: status.id,
      account: status.account,
      endpoint: status.endpoint,
      region: status.region,
      sizeGB: status.sizeGB,
      encrypted: status.encrypted,
    }),
  });
}

function statusFromHub(status: StorageBucketHubStatus): v1.StorageBucketStatus {
  const { provider } = status;
  return compact({
    id: provider.id,
    phase: status.phase,
    observedGeneration: status.observedGeneration,
    idempotencyKey: status.idempotencyKey,
    endpoint: provider.endpoint,
    providerEndpoint: status.providerEndpoint,
    account: provider.account,
    sizeGB: provider.sizeGB,
    encrypted: provider.encrypted,
    region: provider.region,
    lastHandledReconcileAt: status.lastHandledReconcileAt,
    conditions: status.conditions,
  });
}
