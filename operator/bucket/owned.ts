/**
 * The objects a StorageBucket owns: a Secret with connection details (never the provider API
 * key) and an ExternalName Service fronting the bucket in-cluster. Desired state is computed
 * here; the orchestrator applies it only when the cached live object differs, so a steady
 * state costs no API writes.
 */
import { createHash } from 'node:crypto';
import type { V1OwnerReference, V1Secret, V1Service } from '@kubernetes/client-node';
import type { StorageBucket } from '../api/v1';
import { API_VERSION, BUCKET_NAME_LABEL, MANAGED_BY_LABEL, MANAGED_BY_VALUE, StorageBucketDefinition } from '../api/v1';
import { ownerReference, type KubeObject, type Transform } from '../runtime';
import { accessSecretName, serviceName } from './names';

export { MANAGED_BY_SELECTOR, isControlledBy } from './owned-identity';

/**
 * Labels every owned object carries: exactly the keys of OWNED_OBJECT_LABELS, the only ones the
 * shipped admission policy lets the operator write on them (and no annotations at all).
 */
function ownedLabels(bucketName: string): Record<string, string> {
  return { [BUCKET_NAME_LABEL]: bucketName, [MANAGED_BY_LABEL]: MANAGED_BY_VALUE };
}

/**
 * An owned Secret as the cache holds it: `data` replaced by a SHA-256 of each value, enough
 * to tell whether the live Secret still says what we want, with no connection details in memory
 * (or in a heap dump). A Secret read from the API has `data` and no hashes; both forms compare.
 */
export type OwnedSecret = V1Secret & { readonly dataSha256?: Readonly<Record<string, string>> };

/**
 * Informer transform of the owned-Secret cache: keeps a hash per data key instead of the data.
 * Per key rather than one digest of the whole map, so the comparison stays a subset check and
 * a key someone added next to ours does not make every reconcile re-apply.
 */
export const condenseSecretData: Transform = (obj: KubeObject): KubeObject => {
  const secret = obj as OwnedSecret & { stringData?: Record<string, string> };
  const { data, stringData: _never, ...rest } = secret;
  return { ...rest, dataSha256: sha256Values(data) } as OwnedSecret;
};

function sha256Values(data: Readonly<Record<string, string>> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(data ?? {})) out[k] = createHash('sha256').update(v).digest('base64');
  return out;
}

/**
 * The controller owner reference pointing at `bucket`, in `apiVersion`: the version the
 * operator reads and writes, which is the CRD's storage version (own-version.ts). The garbage
 * collector looks the owner up in the version the reference names, so a stored version needs
 * no conversion (no webhook) for it, and the reference stays valid when the other version is
 * no longer served. `bucket` itself is the v1 form the controllers work on.
 */
export function ownerRef(bucket: StorageBucket, apiVersion: string = API_VERSION): V1OwnerReference {
  // Cached objects may lack apiVersion/kind (list items of some servers omit them).
  return ownerReference({ ...bucket, apiVersion, kind: StorageBucketDefinition.kind });
}

/** Connection details published to workloads. */
export interface AccessDetails {
  readonly id: string;
  readonly endpoint: string;
  readonly region: string;
  readonly providerEndpoint: string;
}

/** The desired `<name>-access` Secret; its owner reference in `ownerApiVersion` (see {@link ownerRef}). */
export function desiredSecret(bucket: StorageBucket, access: AccessDetails, ownerApiVersion: string = API_VERSION): V1Secret {
  const name = bucket.metadata.name ?? '';
  const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: accessSecretName(name),
      namespace: bucket.metadata.namespace,
      labels: ownedLabels(name),
      ownerReferences: [ownerRef(bucket, ownerApiVersion)],
    },
    type: 'Opaque',
    data: {
      bucketId: b64(access.id),
      endpoint: b64(access.endpoint),
      region: b64(access.region),
      providerEndpoint: b64(access.providerEndpoint),
    },
  };
}

/** The desired Service: an in-cluster DNS name that resolves to the bucket's endpoint; owner reference as {@link desiredSecret}'s. */
export function desiredService(bucket: StorageBucket, access: AccessDetails, ownerApiVersion: string = API_VERSION): V1Service {
  const name = bucket.metadata.name ?? '';
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: serviceName(name),
      namespace: bucket.metadata.namespace,
      labels: ownedLabels(name),
      ownerReferences: [ownerRef(bucket, ownerApiVersion)],
    },
    spec: {
      type: 'ExternalName',
      externalName: endpointHost(access.endpoint),
      ports: [{ name: 'https', port: 443, protocol: 'TCP', targetPort: 443 }],
    },
  };
}

/** The host of an endpoint given as a URL or a bare host name; ExternalName takes only a host. */
export function endpointHost(endpoint: string): string {
  try {
    return new URL(endpoint).hostname;
  } catch {
    return endpoint;
  }
}

/**
 * True when the live Secret (controlled by the bucket, or absent) lacks anything the desired one
 * sets. `live` may be the cached form (hashes) or one read from the API (data).
 */
export function secretNeedsApply(desired: V1Secret, live: OwnedSecret | undefined): boolean {
  if (!live) return true;
  const liveHashes = live.dataSha256 ?? sha256Values(live.data);
  return (
    !subset(desired.metadata?.labels, live.metadata?.labels) || !subset(sha256Values(desired.data), liveHashes) || !sameOwnerVersion(desired, live)
  );
}

/** True when the live Service (controlled by the bucket, or absent) lacks anything the desired one sets. */
export function serviceNeedsApply(desired: V1Service, live: V1Service | undefined): boolean {
  if (!live) return true;
  return (
    !subset(desired.metadata?.labels, live.metadata?.labels) ||
    !sameOwnerVersion(desired, live) ||
    live.spec?.type !== desired.spec?.type ||
    live.spec?.externalName !== desired.spec?.externalName
  );
}

/**
 * The live object's reference to the desired controller names it in the same version: one
 * written before the CRDs' storage version changed is rewritten (an apply keyed by uid).
 */
function sameOwnerVersion(desired: KubeObject, live: KubeObject): boolean {
  const [want] = desired.metadata?.ownerReferences ?? [];
  const have = (live.metadata?.ownerReferences ?? []).find((r) => r.uid === want?.uid);
  return !want || !have || have.apiVersion === want.apiVersion;
}

function subset(want: Readonly<Record<string, string>> | undefined, have: Readonly<Record<string, string>> | undefined): boolean {
  return Object.entries(want ?? {}).every(([k, v]) => have?.[k] === v);
}
