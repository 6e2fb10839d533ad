/**
 * What each condition reason means to someone watching from outside (Argo CD health, Flux
 * healthCheckExprs, alerts). A `Record` over every `Reason`, so adding a reason fails to
 * compile until it is classified here; unit tests hold TERMINAL_REASONS (which drives the
 * kstatus Stalled condition) and gitops/ to this table.
 */
import { Reason } from './reasons';

/**
 * `ready`: the object is as asked. `progressing`: the operator is working or waiting for
 * something that may yet appear. `terminal`: nothing changes until a person edits an object
 * (the bucket, its config or its Secret). `paused`: the user stopped reconciliation.
 */
export type ReasonClass = 'ready' | 'progressing' | 'terminal' | 'paused';

/** The class of every reason on a StorageBucket's Ready condition. */
export const BUCKET_REASON_CLASS: Readonly<Record<Reason, ReasonClass>> = {
  [Reason.Available]: 'ready',
  [Reason.ReconcileSuccess]: 'ready',
  [Reason.Provisioning]: 'progressing',
  [Reason.Resizing]: 'progressing',
  [Reason.Updating]: 'progressing',
  // A GitOps sync often creates the config and Secret together with the bucket.
  [Reason.ProviderConfigNotFound]: 'progressing',
  [Reason.ProviderConfigNotReady]: 'progressing',
  [Reason.SecretNotFound]: 'progressing',
  // The bucket waits for its config, which reports the problem (and is Degraded) itself.
  [Reason.InvalidProviderConfig]: 'progressing',
  // Likewise: the config is Degraded with the kubectl label command; the bucket only waits.
  [Reason.SecretNotLabeled]: 'progressing',
  [Reason.ProviderUnavailable]: 'progressing',
  // Retried with backoff like ProviderUnavailable: the endpoint may be fixed (or its config
  // re-pointed) without the bucket changing.
  [Reason.ProviderAnswerTooLarge]: 'progressing',
  [Reason.ProviderTimeout]: 'progressing',
  [Reason.Throttled]: 'progressing',
  // Observe mode checks again every drift interval; the bucket may yet be created elsewhere.
  [Reason.ObservedBucketNotFound]: 'progressing',
  [Reason.InvalidSpec]: 'terminal',
  [Reason.CredentialsRejected]: 'terminal',
  [Reason.AdoptTargetNotFound]: 'terminal',
  [Reason.ProviderChanged]: 'terminal',
  [Reason.BucketOwnedElsewhere]: 'terminal',
  [Reason.BucketOwnedByOtherCluster]: 'terminal',
  // The bucket itself keeps the config's in-use finalizer, so the config cannot finish
  // deleting and come back while the bucket exists: a person must delete the bucket (or
  // point a new bucket at another config).
  [Reason.ProviderConfigDeleting]: 'terminal',
  [Reason.ReconcilePaused]: 'paused',
};

/** Reasons after which a StorageBucket waits for a person, sorted. */
export const BUCKET_TERMINAL_REASONS: readonly Reason[] = (Object.keys(BUCKET_REASON_CLASS) as Reason[])
  .filter((r) => BUCKET_REASON_CLASS[r] === 'terminal')
  .sort();

/**
 * Reasons after which a BucketProviderConfig waits for a person: its endpoint must be fixed,
 * or its Secret labelled as credentials (nothing labels a Secret on its own). A missing Secret
 * may still be created, so SecretNotFound is not one.
 */
export const CONFIG_TERMINAL_REASONS: readonly Reason[] = [Reason.InvalidProviderConfig, Reason.SecretNotLabeled];
