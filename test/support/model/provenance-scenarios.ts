/**
 * The sequences issue 31 found on the real control plane, as model actions: an object that
 * observes another's bucket with that bucket's idempotency key copied in (a manifest taken
 * with `kubectl get -o yaml`), its adopt-id removed as the block message advises, switched to
 * Full and deleted. Before provenance was recorded from the operator's own actions, the
 * Observe mirror wrote the observed bucket's key into status.idempotencyKey and the deletion
 * fast path trusted it, so the DELETE went to the owner's bucket. The same sequences run in
 * process (test/unit/bucket/provenance.test.ts) and on the real control plane
 * (test/integration/provenance.test.ts).
 */
import type { ModelAction, ObjRef } from './actions';

const OWNER: ObjRef = { ns: 'ns1', name: 'b1' };

/** The observer's sequence after the owner's bucket (the only one, #0) exists. */
function observeCopyDelete(observer: ObjRef): ModelAction[] {
  return [
    { type: 'createWithKeyOf', obj: observer, adopt: 0, policy: 'Observe' },
    { type: 'quiesce' },
    { type: 'setAdopt', obj: observer, adopt: null },
    { type: 'setPolicy', obj: observer, policy: 'Full' },
    { type: 'quiesce' },
    { type: 'delete', obj: observer },
    { type: 'quiesce' },
  ];
}

const OWNER_CREATES: ModelAction[] = [
  { type: 'create', obj: OWNER, sizeGB: 10, encrypted: false, deletionPolicy: 'Delete', policy: 'Full' },
  { type: 'quiesce' },
];

/** Each scenario: the owner's bucket and the observer that must never delete it. */
export const PROVENANCE_SCENARIOS: Readonly<Record<string, readonly ModelAction[]>> = {
  'the same namespace': [...OWNER_CREATES, ...observeCopyDelete({ ns: 'ns1', name: 'b2' })],
  'across namespaces': [...OWNER_CREATES, ...observeCopyDelete({ ns: 'ns2', name: 'b2' })],
  // The bucket belongs to an object of another cluster sharing the account: the observer is
  // a manifest copied from that cluster (same namespace and name, its key).
  "another cluster's bucket": [{ type: 'otherCluster', obj: OWNER }, ...observeCopyDelete(OWNER)],
};
