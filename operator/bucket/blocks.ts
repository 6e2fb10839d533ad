/**
 * The blocks both Apply and Cleanup report when the bucket may exist where the connection no
 * longer reaches. Pure.
 */
import type { StorageBucket } from '../api/v1';
import { CREATE_TARGET_ANNOTATION } from '../api/v1';
import { describeTarget, type Place } from './ownership';
import type { Step } from './plan';
import { Reason } from './reasons';

/** The ProviderChanged block: where the bucket was made, and where the config points now. */
export function providerChanged(bucket: StorageBucket, to: Place): Step {
  const status = bucket.status ?? {};
  const where =
    status.providerEndpoint !== undefined && status.providerEndpoint !== to.endpoint
      ? `was created at ${status.providerEndpoint}, but the BucketProviderConfig now points at ${to.endpoint}`
      : `was created in provider account ${status.account ?? ''}, but the BucketProviderConfig's Secret now holds credentials of account ${to.accountId ?? ''}`;
  return {
    type: 'blocked',
    reason: Reason.ProviderChanged,
    message: `bucket ${status.id ?? ''} ${where}; point the config back, or set deletionPolicy Orphan and delete this StorageBucket to let it go`,
  };
}

/** The block for a create whose answer was lost, sent to `sentTo`, where the config no longer points. */
export function sentElsewhereBlock(sentTo: string, to: Place): Step {
  return {
    type: 'blocked',
    reason: Reason.ProviderChanged,
    message: `a create with this object's idempotency key was sent to ${sentTo} and its answer never came, but the BucketProviderConfig now points at ${describeTarget(to.endpoint, to.accountId)}; point the config back so the operator can look the key up there, or remove the annotation ${CREATE_TARGET_ANNOTATION} if nothing was created there`,
  };
}
