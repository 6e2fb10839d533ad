/**
 * What each condition reason means to someone watching from outside (Argo CD health, Flux
 * healthCheckExprs, alerts). A `Record` over every `Reason`, so adding a reason fails to
 * compile until it is classified here; unit tests then hold gitops/ to this table.
 */
import { Reason } from './reasons';

/**
 * `ready`: the bucket is as asked. `progressing`: the operator is working or waiting for
 * something that may yet appear. `terminal`: nothing changes until a person edits an object
 * (the bucket, its config or its Secret). `paused`: the user stopped reconciliation.
 */
export type ReasonClass = 'ready' | 'progressing' | 'terminal' | 'paused';

/** The class of every reason. */
export const REASON_CLASS: Readonly<Record<Reason, ReasonClass>> = {
  [Reason.Available]: 'ready',
  [Reason.ReconcileSuccess]: 'ready',
  [Reason.Provisioning]: 'progressing',
  [Reason.Resizing]: 'progressing',
  [Reason.Updating]: 'progressing',
  // A GitOps sync often creates the config and Secret together with the bucket.
  [Reason.ProviderConfigNotFound]: 'progressing',
  [Reason.ProviderConfigNotReady]: 'progressing',
  [Reason.SecretNotFound]: 'progressing',
  [Reason.ProviderUnavailable]: 'progressing',
  [Reason.Throttled]: 'progressing',
  [Reason.Unknown]: 'progressing',
  [Reason.InvalidSpec]: 'terminal',
  [Reason.CredentialsRejected]: 'terminal',
  [Reason.AdoptTargetNotFound]: 'terminal',
  [Reason.ProviderChanged]: 'terminal',
  // The config's endpoint must be fixed by a person; its buckets cannot proceed until then.
  [Reason.InvalidProviderConfig]: 'terminal',
  [Reason.ReconcilePaused]: 'paused',
};

/** Reasons after which nothing happens until a person acts, sorted. */
export const TERMINAL_REASONS: readonly Reason[] = (Object.keys(REASON_CLASS) as Reason[])
  .filter((r) => REASON_CLASS[r] === 'terminal')
  .sort();
