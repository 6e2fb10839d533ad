import { expect } from 'chai';
import { CLEANUP, relation, type Relation } from '../../../operator/bucket/ownership';
import type { ProviderBucket } from '../../../operator/provider-client';
import { DEFAULT_TAGS, bucket, providerBucket, KEY1 } from '../../support/fixtures';

const CLUSTER = 'cluster-1';
const { 'kubernetes-cluster': _c, ...withoutCluster } = DEFAULT_TAGS;
const { 'kubernetes-uid': _u, ...withoutUid } = DEFAULT_TAGS;

interface Case {
  readonly args: { readonly external: ProviderBucket; readonly key?: string; readonly clusterId?: string };
  readonly want: Relation;
}

/** Every way a provider bucket can relate to the fixture object ns1/b1 (uid uid-b1, key k1). */
const cases: Record<string, Case> = {
  'tags name this object, uid and cluster included': { args: { external: providerBucket() }, want: { type: 'thisObject' } },
  'tags name this object, no cluster tag yet (tagged before it existed)': {
    args: { external: providerBucket({ tags: withoutCluster }) },
    want: { type: 'thisObject' },
  },
  'tags name this object, but the operator does not know its cluster': {
    args: { external: providerBucket(), clusterId: '' },
    want: { type: 'thisObject' },
  },
  'same namespace and name in another cluster, even made with the same key': {
    args: { external: providerBucket({ tags: { ...DEFAULT_TAGS, 'kubernetes-cluster': 'cluster-2' }, idempotencyKey: KEY1 }) },
    want: { type: 'otherCluster', cluster: 'cluster-2', owner: 'ns1/b1' },
  },
  'another object of this cluster, even made with the same key (copied annotation)': {
    args: { external: providerBucket({ tags: { ...DEFAULT_TAGS, 'kubernetes-name': 'b2' }, idempotencyKey: KEY1 }) },
    want: { type: 'otherObject', owner: 'ns1/b2' },
  },
  'this name with another uid, made with the key minted for that uid (a restored backup): only the tags speak': {
    args: { external: providerBucket({ tags: { ...DEFAULT_TAGS, 'kubernetes-uid': 'uid-old' }, idempotencyKey: 'uid-old.k1' }), key: 'uid-old.k1' },
    want: { type: 'earlierObject' },
  },
  'this name with another uid, another key (an earlier object of this name)': {
    args: { external: providerBucket({ tags: { ...DEFAULT_TAGS, 'kubernetes-uid': 'uid-old' }, idempotencyKey: 'k0' }) },
    want: { type: 'earlierObject' },
  },
  'this name without a uid tag, another key': {
    args: { external: providerBucket({ tags: withoutUid, idempotencyKey: 'k0' }) },
    want: { type: 'earlierObject' },
  },
  'untagged, made with our key (tags never written)': {
    args: { external: providerBucket({ tags: {}, idempotencyKey: KEY1 }) },
    want: { type: 'ourKey' },
  },
  'untagged, not ours (made outside the operator)': { args: { external: providerBucket({ tags: { team: 'x' } }) }, want: { type: 'untagged' } },
  'untagged, made with a key minted for this object whose annotation was removed since': {
    args: { external: providerBucket({ tags: {}, idempotencyKey: KEY1 }), key: '' },
    want: { type: 'ourKey' },
  },
  'found in review (issue 31): untagged, made with a key copied from another object': {
    args: { external: providerBucket({ tags: {}, idempotencyKey: 'uid-owner.k1' }), key: 'uid-owner.k1' },
    want: { type: 'untagged' },
  },
  'untagged, made with a key from before keys carried a uid, copied into this object': {
    args: { external: providerBucket({ tags: {}, idempotencyKey: 'legacy-key' }), key: 'legacy-key' },
    want: { type: 'untagged' },
  },
};

describe('relation', () => {
  for (const [name, { args, want }] of Object.entries(cases)) {
    it(name, () => {
      const b =
        args.key === ''
          ? bucket().withFinalizer().build()
          : bucket()
              .prepared(args.key ?? KEY1)
              .build();
      expect(relation(b, args.external, args.clusterId ?? CLUSTER)).to.deep.equal(want);
    });
  }
});

describe('CLEANUP', () => {
  it('deletes only what is provably this object’s: its tags with its uid, or its key', () => {
    const deleting = Object.entries(CLEANUP)
      .filter(([, what]) => what === 'delete')
      .map(([rel]) => rel)
      .sort();
    expect(deleting).to.deep.equal(['ourKey', 'thisObject']);
  });
});
