/** StorageBucket v2 <-> hub: the grouping and renames, and quantities to and from whole GB. */
import * as v2 from '../v2';
import type { HubSize, StorageBucketHub, StorageBucketHubStatus } from './hub';
import { compact } from './objects';

/** A v2 StorageBucket in hub form. */
export function v2ToHub(bucket: v2.StorageBucket): StorageBucketHub {
  const { spec } = bucket;
  const { forProvider } = spec;
  return compact({
    metadata: bucket.metadata,
    spec: compact({
      region: forProvider.region,
      size: sizeToHub(forProvider.size),
      encrypted: forProvider.encrypted,
      providerConfigName: spec.providerConfigRef.name,
      deletionPolicy: spec.deletionPolicy,
      managementPolicy: spec.managementPolicy,
    }),
    status: bucket.status && statusToHub(bucket.status),
  });
}

/** The v2 form of `hub`. */
export function hubToV2(hub: StorageBucketHub): v2.StorageBucket {
  const { spec } = hub;
  return compact({
    apiVersion: v2.API_VERSION,
    kind: 'StorageBucket' as const,
    metadata: hub.metadata,
    spec: compact({
      forProvider: compact({
        region: spec.region,
        size: spec.size.quantity ?? v2.canonicalSize(spec.size.gb),
        encrypted: spec.encrypted,
      }),
      providerConfigRef: { name: spec.providerConfigName },
      deletionPolicy: spec.deletionPolicy,
      managementPolicy: spec.managementPolicy,
    }),
    status: hub.status && statusFromHub(hub.status),
  });
}

/**
 * Whole GB, rounded up, and the spelling when it is not `<gb>G`. The schema admits only sizes
 * that parse; should one not (an object admitted under some other schema), it keeps its
 * spelling with 0 GB rather than fail the conversion.
 */
function sizeToHub(size: string): HubSize {
  const gb = v2.sizeToGB(size) ?? 0;
  return size === v2.canonicalSize(gb) ? { gb } : { gb, quantity: size };
}

/** The GB of a reported size (`<n>G`); other quantities round up as requested ones do. */
function reportedToGB(size: string | undefined): number | undefined {
  if (size === undefined) return undefined;
  return /^[0-9]+G$/.test(size) ? Number(size.slice(0, -1)) : v2.sizeToGB(size);
}

function statusToHub(status: v2.StorageBucketStatus): StorageBucketHubStatus {
  const at = status.atProvider ?? {};
  return compact({
    observedGeneration: status.observedGeneration,
    conditions: status.conditions,
    phase: status.phase,
    lastHandledReconcileAt: status.lastHandledReconcileAt,
    idempotencyKey: status.idempotencyKey,
    providerEndpoint: status.providerEndpoint,
    provider: compact({
      id: at.id,
      account: at.account,
      endpoint: at.endpoint,
      region: at.region,
      sizeGB: reportedToGB(at.size),
      encrypted: at.encrypted,
    }),
  });
}

function statusFromHub(status: StorageBucketHubStatus): v2.StorageBucketStatus {
  const { provider } = status;
  const atProvider = compact({
    id: provider.id,
    account: provider.account,
    endpoint: provider.endpoint,
    region: provider.region,
    size: provider.sizeGB === undefined ? undefined : v2.canonicalSize(provider.sizeGB),
    encrypted: provider.encrypted,
  });
  return compact({
    observedGeneration: status.observedGeneration,
    conditions: status.conditions,
    phase: status.phase,
    lastHandledReconcileAt: status.lastHandledReconcileAt,
    idempotencyKey: status.idempotencyKey,
    providerEndpoint: status.providerEndpoint,
    atProvider: Object.keys(atProvider).length > 0 ? atProvider : undefined,
  });
}
