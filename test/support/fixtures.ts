/** Builders for test objects: `bucket().withFinalizer().deleting().build()`. */
import type { BucketProviderConfig, BucketProviderConfigSpec, StorageBucket, StorageBucketSpec, StorageBucketStatus } from '../../operator/api/v1';
import {
  ADOPT_ANNOTATION,
  API_VERSION,
  BUCKET_FINALIZER,
  CONFIG_IN_USE_FINALIZER,
  CREDENTIALS_SECRET_LABEL,
  CREDENTIALS_SECRET_TYPE,
  IDEMPOTENCY_KEY_ANNOTATION,
  PAUSED_ANNOTATION,
} from '../../operator/api/v1';
import type { V1Secret } from '@kubernetes/client-node';
import type { CredentialSecrets } from '../../operator/bucket/connect';
import type { ProviderBucket } from '../../operator/provider-client';
import { IndexedCache } from '../../operator/runtime/cache';
import { keyString, type ObjectKey } from '../../operator/runtime/types';

/**
 * The key the operator mints for the default builder's object (uid `uid-b1`): `<uid>.<nonce>`,
 * so a provider bucket made with it is provably that object's (see operator/bucket/ownership.ts).
 */
export const KEY1 = 'uid-b1.k1';

/** Fluent builder of StorageBucket objects. */
export class BucketBuilder {
  private obj: StorageBucket;

  constructor(name = 'b1', namespace = 'ns1') {
    this.obj = {
      apiVersion: API_VERSION,
      kind: 'StorageBucket',
      metadata: { name, namespace, generation: 1, uid: `uid-${name}`, resourceVersion: '1' },
      spec: { region: 'us-east-1', sizeGB: 10, encrypted: false, providerRef: { name: 'default' }, deletionPolicy: 'Delete' },
    };
  }

  withSpec(spec: Partial<StorageBucketSpec>): this {
    this.obj = { ...this.obj, spec: { ...this.obj.spec, ...spec } };
    return this;
  }

  withStatus(status: StorageBucketStatus): this {
    this.obj = { ...this.obj, status: { ...this.obj.status, ...status } };
    return this;
  }

  /** Sets metadata.generation, as the API server does when the spec changes. */
  withGeneration(generation: number): this {
    this.obj.metadata = { ...this.obj.metadata, generation };
    return this;
  }

  withFinalizer(): this {
    this.obj.metadata = { ...this.obj.metadata, finalizers: [BUCKET_FINALIZER] };
    return this;
  }

  withAnnotation(key: string, value: string): this {
    this.obj.metadata = { ...this.obj.metadata, annotations: { ...this.obj.metadata.annotations, [key]: value } };
    return this;
  }

  /** Sets the idempotency key annotation. */
  withKey(key: string): this {
    return this.withAnnotation(IDEMPOTENCY_KEY_ANNOTATION, key);
  }

  /** Finalizer and key in place, as after the first reconcile. */
  prepared(key = KEY1): this {
    return this.withFinalizer().withKey(key);
  }

  paused(): this {
    return this.withAnnotation(PAUSED_ANNOTATION, 'true');
  }

  adopting(id: string): this {
    return this.withAnnotation(ADOPT_ANNOTATION, id);
  }

  deleting(): this {
    this.obj.metadata = { ...this.obj.metadata, deletionTimestamp: new Date('2026-01-01T00:00:00Z') };
    return this;
  }

  build(): StorageBucket {
    return structuredClone(this.obj);
  }
}

/** Starts a StorageBucket builder. */
export function bucket(name?: string, namespace?: string): BucketBuilder {
  return new BucketBuilder(name, namespace);
}

/** The tags the operator sets on the default builder's provider bucket. */
export const DEFAULT_TAGS: Readonly<Record<string, string>> = {
  'managed-by': 'bucketoperator',
  'kubernetes-namespace': 'ns1',
  'kubernetes-name': 'b1',
  'kubernetes-uid': 'uid-b1',
  'kubernetes-cluster': 'cluster-1',
};

/** A provider bucket matching the default builder's spec and carrying the operator's tags. */
export function providerBucket(overrides: Partial<ProviderBucket> = {}): ProviderBucket {
  return {
    id: 'bucket-000001',
    region: 'us-east-1',
    sizeGB: 10,
    encrypted: false,
    phase: 'Active',
    endpoint: 'bucket-000001.us-east-1.storage.example',
    tags: { ...DEFAULT_TAGS },
    ...overrides,
  };
}

/**
 * The status of a bucket that went Ready for generation 1 at `providerEndpoint`, as the
 * reconciler writes it (Ready and Synced True for that generation).
 */
export function readyStatus(providerEndpoint: string, overrides: Partial<StorageBucketStatus> = {}): StorageBucketStatus {
  const at = '2026-01-01T00:00:00Z';
  return {
    phase: 'Active',
    id: 'bucket-000001',
    endpoint: 'bucket-000001.us-east-1.storage.example',
    sizeGB: 10,
    idempotencyKey: KEY1,
    providerEndpoint,
    account: 'acct-1',
    observedGeneration: 1,
    conditions: [
      { type: 'Ready', status: 'True', reason: 'Available', message: '', lastTransitionTime: at, observedGeneration: 1 },
      { type: 'Synced', status: 'True', reason: 'ReconcileSuccess', message: '', lastTransitionTime: at, observedGeneration: 1 },
    ],
    ...overrides,
  };
}

/** Fluent builder of BucketProviderConfig objects: `providerConfig().inUse().deleting().build()`. */
export class ProviderConfigBuilder {
  private obj: BucketProviderConfig;

  constructor(name = 'default', namespace = 'ns1') {
    this.obj = {
      apiVersion: API_VERSION,
      kind: 'BucketProviderConfig',
      metadata: { name, namespace, generation: 1, uid: `uid-${name}`, resourceVersion: '1' },
      spec: { endpoint: 'https://storage.example.com', secretRef: { name: 'key', key: 'apiKey' } },
    };
  }

  withSpec(spec: Partial<BucketProviderConfigSpec>): this {
    this.obj = { ...this.obj, spec: { ...this.obj.spec, ...spec } };
    return this;
  }

  /** The in-use finalizer in place, as after the config controller's first pass. */
  inUse(): this {
    this.obj.metadata = { ...this.obj.metadata, finalizers: [CONFIG_IN_USE_FINALIZER] };
    return this;
  }

  deleting(): this {
    this.obj.metadata = { ...this.obj.metadata, deletionTimestamp: new Date('2026-01-01T00:00:00Z') };
    return this;
  }

  build(): BucketProviderConfig {
    return structuredClone(this.obj);
  }
}

/** Starts a BucketProviderConfig builder. */
export function providerConfig(name?: string, namespace?: string): ProviderConfigBuilder {
  return new ProviderConfigBuilder(name, namespace);
}

/** Labels that opt a Secret in as provider credentials, as users are told to set them. */
export const CREDENTIALS_LABELS: Readonly<Record<string, string>> = { [CREDENTIALS_SECRET_LABEL]: CREDENTIALS_SECRET_TYPE };

/** A credentials Secret holding `apiKey` under `key`; labelled unless `labelled: false`. */
export function credentialsSecret(
  opts: { name?: string; namespace?: string; apiKey?: string; key?: string; labelled?: boolean; finalizers?: string[] } = {},
): V1Secret {
  const { name = 'key', namespace = 'ns1', apiKey = 'secret-api-key-42', key = 'apiKey', labelled = true } = opts;
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name,
      namespace,
      resourceVersion: '1',
      ...(labelled ? { labels: { ...CREDENTIALS_LABELS } } : {}),
      ...(opts.finalizers ? { finalizers: opts.finalizers } : {}),
    },
    data: { [key]: Buffer.from(apiKey).toString('base64') },
  };
}

/**
 * CredentialSecrets over Secrets given by hand, as the operator sees them: only labelled ones
 * are in the cache (the informer selects on the label), every one is found by `lookup` (the
 * API server), and each lookup is recorded.
 */
export function credentialSecrets(all: readonly V1Secret[] = []): CredentialSecrets & { readonly lookups: ObjectKey[] } {
  const cache = new IndexedCache<V1Secret>();
  const byKey = new Map<string, V1Secret>();
  for (const s of all) {
    const key = { namespace: s.metadata?.namespace ?? '', name: s.metadata?.name ?? '' };
    byKey.set(keyString(key), s);
    if (s.metadata?.labels?.[CREDENTIALS_SECRET_LABEL] === CREDENTIALS_SECRET_TYPE) cache.upsert(s);
  }
  const lookups: ObjectKey[] = [];
  return {
    cache,
    lookups,
    waitForSync: async () => undefined,
    lookup: async (key) => {
      lookups.push(key);
      return structuredClone(byKey.get(keyString(key)));
    },
  };
}
