/**
 * What a failed reconcile means, decided in one pure function (kube-rs keeps the same in a
 * controller's `error_policy`): the status to report, the Event to record, and whether the
 * runner retries with backoff, after a given delay, or not at all until the object changes.
 */
import type { StorageBucket } from '../api/v1';
import { isProviderError, ProviderAnswerTooLargeError, ProviderTimeoutError, type ProviderError } from '../provider-client';
import { isConflict, isTerminalError } from '../runtime';
import { EventReason, Reason } from './reasons';
import { keepReady, type StatusFacts } from './status';

/** An Event to record about the failure. */
export interface FailureEvent {
  readonly reason: EventReason;
  readonly action: string;
  readonly note: string;
}

/** The runner's next move after a failure, with what to report first. */
export type FailurePolicy =
  /**
   * Report nothing and hand the error to the runner as it is: a conflict (stale cache,
   * concurrent writer) or an unexpected error backs off; a terminal error stops.
   */
  | { readonly type: 'rethrow' }
  /**
   * Report, then retry: after `requeueAfterMs` when the provider named a delay (or the wait
   * is deliberately long), else through the runner's exponential backoff.
   */
  | { readonly type: 'retry'; readonly status: StatusFacts; readonly event?: FailureEvent; readonly requeueAfterMs?: number }
  /** Report, then stop until a user changes the object. */
  | { readonly type: 'terminal'; readonly status: StatusFacts; readonly event: FailureEvent; readonly message: string };

/** Retry interval while the provider rejects the credentials. */
export const CREDENTIALS_RETRY_MS = 5 * 60_000;

/** Provider codes of a create refused because its idempotency key can never create again. */
const SPENT_KEY_CODES: ReadonlySet<string> = new Set(['BucketDeleted', 'IdempotencyKeyRevoked']);

/** The shortest provider Retry-After honoured as such; shorter ones use the runner's backoff. */
const MIN_RETRY_AFTER_MS = 1000;

/**
 * True when `err` is a create's refusal of its idempotency key: the key's bucket was deleted,
 * or the key was revoked, so it can never create again. Only the contract's two refusals
 * count; any other 410 is no reason to mint keys in a loop, and is terminal below. The create
 * path treats this as an answer (decide again with a new key), so it never reaches
 * {@link classifyFailure}.
 */
export function isKeySpent(err: unknown): boolean {
  return isProviderError(err) && err.status === 410 && SPENT_KEY_CODES.has(err.code);
}

/**
 * True when `err` is a create's refusal of a key already used for another request (409
 * IdempotencyKeyReused): a key copied with a manifest whose bucket is gone, or a create of
 * ours still pending with an older spec. The create path fences the key and decides again.
 */
export function isKeyReused(err: unknown): boolean {
  return isProviderError(err) && err.status === 409 && err.code === 'IdempotencyKeyReused';
}

/**
 * Classifies `err`, thrown while reconciling `bucket`. Transient failures keep the Ready condition and observed generation as they were, so
 * a blip neither flips a Ready bucket nor tells `kubectl wait` that a new spec is done.
 */
export function classifyFailure(err: unknown, bucket: StorageBucket): FailurePolicy {
  if (isTerminalError(err) || isConflict(err) || !isProviderError(err)) return { type: 'rethrow' };
  const message = err.message;
  const phase = bucket.status?.phase ?? 'Pending';
  const unchangedGeneration = bucket.status?.observedGeneration;
  if (err.isAuthError) {
    // A Secret rotation re-enqueues the bucket at once; the slow retry covers a provider that
    // was merely slow to accept a new key.
    return {
      type: 'retry',
      status: {
        phase,
        ready: { status: 'False', reason: Reason.CredentialsRejected, message },
        synced: { status: 'False', reason: Reason.CredentialsRejected, message },
        observedGeneration: unchangedGeneration,
      },
      event: { reason: EventReason.CredentialsRejected, action: 'Connect', note: message },
      requeueAfterMs: CREDENTIALS_RETRY_MS,
    };
  }
  // 404 (gone between observe and act) and 409 (not ready yet) clear up on the next pass.
  const transient = err.retryable || err.status === 404 || err.status === 409;
  if (!transient) {
    return {
      type: 'terminal',
      status: {
        phase: 'Failed',
        ready: { status: 'False', reason: Reason.InvalidSpec, message },
        synced: { status: 'False', reason: Reason.InvalidSpec, message },
      },
      event: { reason: EventReason.InvalidSpec, action: 'Provider', note: message },
      message: `provider rejected the bucket: ${message}`,
    };
  }
  const reason = transientReason(err);
  const honoured = err.retryAfterMs !== undefined && err.retryAfterMs >= MIN_RETRY_AFTER_MS;
  return {
    type: 'retry',
    status: {
      phase,
      ready: keepReady(bucket, { status: 'False', reason, message }),
      synced: { status: 'False', reason, message },
      observedGeneration: unchangedGeneration,
    },
    ...(honoured ? { requeueAfterMs: err.retryAfterMs } : {}),
  };
}

/** The reason a transient provider failure is reported with: the client's own limits by name. */
function transientReason(err: ProviderError): Reason {
  if (err instanceof ProviderAnswerTooLargeError) return Reason.ProviderAnswerTooLarge;
  if (err instanceof ProviderTimeoutError) return Reason.ProviderTimeout;
  return err.status === 429 ? Reason.Throttled : Reason.ProviderUnavailable;
}
