/** Shapes of the provider API as the operator sees them. */

/** Provider lifecycle phases. */
export type ProviderPhase = 'Provisioning' | 'Active' | 'Resizing';

/** A bucket as the provider reports it. */
export interface ProviderBucket {
  readonly id: string;
  readonly region: string;
  readonly sizeGB: number;
  readonly encrypted: boolean;
  readonly phase: ProviderPhase;
  readonly endpoint: string;
  readonly tags: Readonly<Record<string, string>>;
  readonly idempotencyKey?: string;
  /** The provider account the bucket belongs to (absent from providers that do not say). */
  readonly account?: string;
}

/** Body of a create call. */
export interface CreateBucketRequest {
  readonly region: string;
  readonly sizeGB: number;
  readonly encrypted: boolean;
  readonly tags: Readonly<Record<string, string>>;
}

/** Body of an update call; only the fields that change. */
export interface UpdateBucketRequest {
  readonly sizeGB?: number;
  readonly encrypted?: boolean;
  readonly tags?: Readonly<Record<string, string>>;
}

/** Answer of `POST /idempotency-keys/{key}/revoke`. */
export interface RevokeIdempotencyKeyResponse {
  /** The live bucket the key made, or null. */
  readonly bucket: ProviderBucket | null;
}

/** Answer of `GET /account`. */
export interface AccountInfo {
  /** The account the API key belongs to, as the provider names it. */
  readonly account: string;
}
