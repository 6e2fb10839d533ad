/**
 * The hub: one version-independent form of each kind that every served version converts to
 * and from, so n versions need 2n conversion functions rather than n^2. It holds the union of
 * what the versions can say, so neither spoke loses anything on the way in.
 */
import type { V1ObjectMeta } from '@kubernetes/client-node';
import type { BucketPhase, BucketProviderConfigSpec, BucketProviderConfigStatus, Condition, ManagementPolicy } from '../v1';

/** What happens to the provider bucket when its StorageBucket is deleted. */
export type DeletionPolicy = 'Delete' | 'Orphan';

/** A requested size: whole GB, plus how a v2 user spelled it when not `<gb>G`. */
export interface HubSize {
  /** Whole GB the provider allocates (v1's `sizeGB`). */
  readonly gb: number;
  /** The v2 spelling, e.g. `1500Mi`; only set when it is not the canonical `<gb>G`. */
  readonly quantity?: string;
}

/** Desired state of a StorageBucket. */
export interface StorageBucketHubSpec {
  readonly region: string;
  readonly size: HubSize;
  readonly encrypted?: boolean;
  readonly providerConfigName: string;
  readonly deletionPolicy?: DeletionPolicy;
  readonly managementPolicy?: ManagementPolicy;
}

/** What the provider last reported about the bucket. */
export interface StorageBucketHubProviderFacts {
  readonly id?: string;
  readonly account?: string;
  readonly endpoint?: string;
  readonly region?: string;
  readonly sizeGB?: number;
  readonly encrypted?: boolean;
}

/** Observed state of a StorageBucket. */
export interface StorageBucketHubStatus {
  readonly observedGeneration?: number;
  readonly conditions?: Condition[];
  readonly phase?: BucketPhase;
  readonly lastHandledReconcileAt?: string;
  readonly idempotencyKey?: string;
  readonly providerEndpoint?: string;
  /** Empty when the provider has reported nothing yet. */
  readonly provider: StorageBucketHubProviderFacts;
}

/**
 * A StorageBucket in hub form. `metadata` is the object's own, as users see it in any version:
 * annotations the conversion uses to carry data through v1 are not in it.
 */
export interface StorageBucketHub {
  readonly metadata: V1ObjectMeta;
  readonly spec: StorageBucketHubSpec;
  readonly status?: StorageBucketHubStatus;
}

/** A BucketProviderConfig in hub form: its versions do not differ, so neither does the hub. */
export interface BucketProviderConfigHub {
  readonly metadata: V1ObjectMeta;
  readonly spec: BucketProviderConfigSpec;
  readonly status?: BucketProviderConfigStatus;
}
