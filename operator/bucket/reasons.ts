/**
 * Condition types and reasons, and Event reasons, of the bucket controllers. CamelCase
 * constants in one place so conditions, events and tests never drift apart.
 */

/** Condition types. */
export const ConditionType = {
  /** The bucket exists at the provider, is Active and matches the spec. */
  Ready: 'Ready',
  /** The last reconcile succeeded. */
  Synced: 'Synced',
  /** kstatus: True while the operator works towards a Ready it has not reached. */
  Reconciling: 'Reconciling',
  /** kstatus: True while a terminal reason blocks progress until a user changes something. */
  Stalled: 'Stalled',
} as const;

/** Reasons used in conditions. */
export const Reason = {
  Available: 'Available',
  Provisioning: 'Provisioning',
  Resizing: 'Resizing',
  Updating: 'Updating',
  ProviderConfigNotFound: 'ProviderConfigNotFound',
  InvalidProviderConfig: 'InvalidProviderConfig',
  ProviderConfigNotReady: 'ProviderConfigNotReady',
  /** The config is being deleted: nothing new is made through it; deletions may still use it. */
  ProviderConfigDeleting: 'ProviderConfigDeleting',
  SecretNotFound: 'SecretNotFound',
  /**
   * The config's Secret exists but does not carry the credentials label: the operator will not
   * read it until a person labels it (the message gives the command).
   */
  SecretNotLabeled: 'SecretNotLabeled',
  CredentialsRejected: 'CredentialsRejected',
  InvalidSpec: 'InvalidSpec',
  ProviderUnavailable: 'ProviderUnavailable',
  /** The endpoint answered more than the client takes (bytes or JSON values); the call was cut. */
  ProviderAnswerTooLarge: 'ProviderAnswerTooLarge',
  /** The endpoint was silent past the idle timeout, or answered past the call's deadline. */
  ProviderTimeout: 'ProviderTimeout',
  Throttled: 'Throttled',
  AdoptTargetNotFound: 'AdoptTargetNotFound',
  ProviderChanged: 'ProviderChanged',
  /** The provider bucket's owner tags name another StorageBucket (it was adopted there first). */
  BucketOwnedElsewhere: 'BucketOwnedElsewhere',
  /** The provider bucket's owner tags name a StorageBucket of another cluster sharing the account. */
  BucketOwnedByOtherCluster: 'BucketOwnedByOtherCluster',
  /** Observe: the provider bucket named by the adopt-id annotation does not exist (yet). */
  ObservedBucketNotFound: 'ObservedBucketNotFound',
  ReconcileSuccess: 'ReconcileSuccess',
  ReconcilePaused: 'ReconcilePaused',
} as const;

/** A condition reason. */
export type Reason = (typeof Reason)[keyof typeof Reason];

/**
 * Reasons that need a user to change something (the spec, the config or its Secret) before
 * the operator can make progress: kstatus Stalled, Argo CD Degraded, Flux failed.
 */
export const TERMINAL_REASONS: ReadonlySet<string> = new Set<Reason>([
  Reason.InvalidSpec,
  Reason.CredentialsRejected,
  Reason.ProviderChanged,
  Reason.AdoptTargetNotFound,
  Reason.BucketOwnedElsewhere,
  Reason.BucketOwnedByOtherCluster,
  Reason.ProviderConfigDeleting,
]);

/** Reasons used in Events. */
export const EventReason = {
  CreatedBucket: 'CreatedBucket',
  AdoptedBucket: 'AdoptedBucket',
  BucketReady: 'BucketReady',
  ResizingBucket: 'ResizingBucket',
  CorrectedDrift: 'CorrectedDrift',
  BucketMissing: 'BucketMissing',
  InvalidSpec: 'InvalidSpec',
  CredentialsRejected: 'CredentialsRejected',
  ForeignIdempotencyKey: 'ForeignIdempotencyKey',
  OwnedObjectConflict: 'OwnedObjectConflict',
} as const;

/** An Event reason. */
export type EventReason = (typeof EventReason)[keyof typeof EventReason];
