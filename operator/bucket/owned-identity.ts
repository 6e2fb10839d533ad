/**
 * How an object the operator owns is recognised: the managed-by label its informers select
 * on, and the controller ownerReference that, unlike the label, makes it the bucket's. A leaf
 * (the API's names only), so the kubectl plugin tells owned objects apart without loading the
 * runtime; owned.ts, which builds those objects, re-exports both.
 */
import type { V1OwnerReference } from '@kubernetes/client-node';
import type { StorageBucket } from '../api/v1';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE } from '../api/v1/well-known';

/** Label selector of the owned-object informers: only what the operator made is cached. */
export const MANAGED_BY_SELECTOR = `${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}`;

/** True when `obj` carries a controller ownerReference to `owner`. */
export function isControlledBy(obj: { metadata?: { ownerReferences?: V1OwnerReference[] } }, owner: StorageBucket): boolean {
  return (obj.metadata?.ownerReferences ?? []).some((r) => r.controller === true && r.uid === owner.metadata.uid);
}
