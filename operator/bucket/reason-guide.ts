/**
 * What each condition reason tells the person reading it, and what they can do about it: the
 * text of docs/reference/conditions.md, which `npm run docs` renders from this table next to
 * each reason's class (reason-classes.ts). A `Record` over every `Reason`, so a new reason does
 * not compile until it is explained here. The operator itself never loads this module.
 */
import { DRIFT_SCAN_CONDITION, SCAN_FAILED_REASON, SCAN_SUCCEEDED_REASON } from './drift-scan-state';
import { IN_USE_REASON } from './config-reconciler';
import { Reason } from './reasons';

/** One reason, for a reader. */
export interface ReasonGuide {
  /** What the operator saw or is doing. */
  readonly meaning: string;
  /** What a person can do; "nothing" when the operator goes on by itself. */
  readonly fix: string;
}

const WAIT = 'nothing: the operator goes on by itself';
const RETRIED =
  'nothing: retried with backoff; if it lasts, check the endpoint named in the message (`kubectl bucket reconcile NAME` retries at once)';

/** Every reason that can appear on a StorageBucket's Ready or Synced condition. */
export const REASON_GUIDE: Readonly<Record<Reason, ReasonGuide>> = {
  [Reason.Available]: {
    meaning: 'Ready=True: the provider bucket exists, is Active and matches the spec (or, for Observe, exists and is Active)',
    fix: WAIT,
  },
  [Reason.ReconcileSuccess]: { meaning: 'Synced=True: the last reconcile succeeded', fix: WAIT },
  [Reason.Provisioning]: { meaning: 'the provider is creating the bucket; polled every `--poll-interval`', fix: WAIT },
  [Reason.Resizing]: { meaning: 'the provider is growing the bucket to the new `sizeGB`', fix: WAIT },
  [Reason.Updating]: { meaning: 'the provider is applying a change other than growth (drift put back, tags)', fix: WAIT },
  [Reason.ProviderConfigNotFound]: {
    meaning: "the BucketProviderConfig in `spec.providerRef` does not exist in the bucket's namespace (yet)",
    fix: 'create that BucketProviderConfig; a GitOps sync that creates both goes on by itself',
  },
  [Reason.ProviderConfigNotReady]: {
    meaning: 'the config exists but the operator has not yet put its in-use finalizer on it',
    fix: WAIT,
  },
  [Reason.InvalidProviderConfig]: {
    meaning:
      'the config names an endpoint the operator refuses (`http://` without `spec.insecure`, a user name or password, a link-local or metadata address); on a bucket it waits for its config',
    fix: 'edit the config: `kubectl edit bucketproviderconfig NAME -n NS` (the config shows the problem in its own Ready condition)',
  },
  [Reason.ProviderConfigDeleting]: {
    meaning: 'the config is being deleted: nothing new (a create, a key rotation, an adoption) starts through it',
    fix: 'point a new StorageBucket at another config, or delete this one; buckets already Ready stay Ready and are deleted through it',
  },
  [Reason.SecretNotFound]: {
    meaning: "the config's credential Secret does not exist (or lacks the key `spec.secretRef.key`)",
    fix: 'create the Secret with the key and the opt-in label; the message gives both commands',
  },
  [Reason.SecretNotLabeled]: {
    meaning: 'the Secret exists but lacks the opt-in label, so the operator does not read it',
    fix: '`kubectl label secret -n NS NAME storage.avalonhosting.example/secret-type=provider-credentials` (the message gives the exact command)',
  },
  [Reason.CredentialsRejected]: {
    meaning: 'the provider refused the API key (401/403)',
    fix: 'put a valid key into the Secret; its change brings the bucket back at once',
  },
  [Reason.InvalidSpec]: {
    meaning: 'the provider refused the bucket as specified (a 4xx other than auth), or the endpoint redirected',
    fix: 'change the spec as the message says: `kubectl edit sbucket NAME -n NS`',
  },
  [Reason.ProviderUnavailable]: { meaning: 'the provider answered 5xx or could not be reached', fix: RETRIED },
  [Reason.ProviderAnswerTooLarge]: {
    meaning: 'the endpoint answered more than the client reads (bytes or JSON values); the call was cut',
    fix: RETRIED,
  },
  [Reason.ProviderTimeout]: { meaning: 'the endpoint was silent past the idle timeout, or answered past the call deadline', fix: RETRIED },
  [Reason.Throttled]: { meaning: 'the provider answered 429', fix: RETRIED },
  [Reason.AdoptTargetNotFound]: {
    meaning: 'the provider bucket named by the `adopt-id` annotation does not exist',
    fix: 'correct or remove the `adopt-id` annotation',
  },
  [Reason.ProviderChanged]: {
    meaning:
      'the config now points at another provider or account than the one the bucket was made in (or a create whose answer was lost was sent there)',
    fix: 'point the config back; or, once sure nothing was created at the old target, remove the `create-target` annotation',
  },
  [Reason.BucketOwnedElsewhere]: {
    meaning: "the provider bucket's owner tags name another StorageBucket that still exists",
    fix: 'adopt another bucket, or delete this StorageBucket (the other keeps its bucket)',
  },
  [Reason.BucketOwnedByOtherCluster]: {
    meaning: "the provider bucket's owner tags name another cluster sharing the provider account",
    fix: "nothing to do here: only a cluster running with that cluster's `--cluster-id` may take it over",
  },
  [Reason.ObservedBucketNotFound]: {
    meaning: '`managementPolicy: Observe`: the bucket named by `adopt-id` does not exist (yet); looked for again every drift interval',
    fix: 'check the `adopt-id` annotation, or wait for the bucket to be made elsewhere',
  },
  [Reason.ReconcilePaused]: {
    meaning: 'the `paused` annotation is "true": no provider call is made for this bucket',
    fix: '`kubectl bucket resume NAME -n NS`',
  },
};

/** One reason on a BucketProviderConfig, with the condition it appears in. */
export interface ConfigReasonGuide extends ReasonGuide {
  /** `Ready=True`, `Ready=False`, `DriftScanned=False`, ... */
  readonly condition: string;
}

/** Every reason that can appear on a BucketProviderConfig's conditions. */
export const CONFIG_REASON_GUIDE: Readonly<Record<string, ConfigReasonGuide>> = {
  [Reason.Available]: {
    condition: 'Ready=True',
    meaning: 'the endpoint is one the operator accepts, and the credential Secret exists, carries the opt-in label and holds the key',
    fix: WAIT,
  },
  [Reason.InvalidProviderConfig]: {
    condition: 'Ready=False',
    meaning:
      'the endpoint is one the operator refuses: `http://` without `spec.insecure`, a user name or password, a link-local or cloud metadata address (unless `--allow-link-local-endpoints`)',
    fix: '`kubectl edit bucketproviderconfig NAME -n NS`',
  },
  [Reason.SecretNotFound]: { condition: 'Ready=False', ...REASON_GUIDE[Reason.SecretNotFound] },
  [Reason.SecretNotLabeled]: { condition: 'Ready=False', ...REASON_GUIDE[Reason.SecretNotLabeled] },
  [IN_USE_REASON]: {
    condition: 'Ready=False',
    meaning: 'the config is being deleted and StorageBuckets still use it (its in-use finalizer holds it)',
    fix: 'delete or re-point those StorageBuckets first; the message counts them',
  },
  [SCAN_SUCCEEDED_REASON]: {
    condition: `${DRIFT_SCAN_CONDITION}=True`,
    meaning: "the last drift scan of the config's provider account worked",
    fix: WAIT,
  },
  [SCAN_FAILED_REASON]: {
    condition: `${DRIFT_SCAN_CONDITION}=False`,
    meaning:
      "the last drift scan of the config's provider account failed; only that account's scan stopped (the message starts with UnusableAnswer, DeadlineExceeded, ProviderError, Unreachable or CredentialsRejected)",
    fix: 'check the endpoint; the next scan runs after `--drift-interval`',
  },
};
