import { expect } from 'chai';
import type { StorageBucket } from '../../../operator/api/v1';
import type { PlacedBucket } from '../../support/model/provider';
import { checkInterval } from '../../support/model-e2e/writes';

const obj = (
  name: string,
  uid: string,
  spec: Partial<StorageBucket['spec']> = {},
  extra: Partial<StorageBucket['metadata']> = {},
  id?: string,
): StorageBucket => ({
  apiVersion: 'storage.avalonhosting.example/v1',
  kind: 'StorageBucket',
  metadata: { namespace: 'ns1', name, uid, ...extra },
  spec: { region: 'us-east-1', sizeGB: 10, providerRef: { name: 'default' }, ...spec },
  ...(id ? { status: { id } } : {}),
});
const placed = (id: string, tags: Record<string, string>, sizeGB = 10): PlacedBucket => ({
  endpoint: 'http://127.0.0.1:1',
  account: 'alpha',
  bucket: { id, region: 'us-east-1', sizeGB, encrypted: false, phase: 'Active', endpoint: `${id}.example`, tags },
});
const tagsOf = (name: string, uid: string) => ({
  'managed-by': 'bucketoperator',
  'kubernetes-namespace': 'ns1',
  'kubernetes-name': name,
  'kubernetes-uid': uid,
});
const none = new Set<string>();

describe('model-e2e: write invariants judged between two quiet points', () => {
  it('passes an owner growing its own bucket', () => {
    const a = obj('a', 'u1', {}, {}, 'b-1');
    const v = checkInterval(
      { objects: [a], buckets: [placed('b-1', tagsOf('a', 'u1'))] },
      { objects: [a], buckets: [placed('b-1', tagsOf('a', 'u1'), 20)] },
      none,
    );
    expect(v).to.deep.equal([]);
  });

  it('flags a bucket of a live object that disappeared, unless the run deleted the object', () => {
    const a = obj('a', 'u1', {}, {}, 'b-1');
    const before = { objects: [a], buckets: [placed('b-1', tagsOf('a', 'u1'))] };
    expect(checkInterval(before, { objects: [a], buckets: [] }, none).map((x) => x.invariant)).to.deep.equal(['noForeignWrite']);
    expect(checkInterval(before, { objects: [], buckets: [] }, new Set(['ns1/a']))).to.deep.equal([]);
  });

  it('flags a bucket retagged from a live object to another one, or changed while another object names it', () => {
    const a = obj('a', 'u1', {}, {}, 'b-1');
    const b = obj('b', 'u2', {}, { annotations: { 'storage.avalonhosting.example/adopt-id': 'b-1' } });
    const before = { objects: [a, b], buckets: [placed('b-1', tagsOf('a', 'u1'))] };
    expect(checkInterval(before, { objects: [a, b], buckets: [placed('b-1', tagsOf('b', 'u2'))] }, none).map((x) => x.invariant)).to.deep.equal([
      'noForeignWrite',
    ]);
    expect(checkInterval(before, { objects: [a, b], buckets: [placed('b-1', tagsOf('a', 'u1'), 30)] }, none).map((x) => x.invariant)).to.deep.equal([
      'noForeignWrite',
    ]);
  });

  it('flags an Observe object whose observed bucket changed or that got a bucket of its own', () => {
    const o = obj('o', 'u3', { managementPolicy: 'Observe' }, { annotations: { 'storage.avalonhosting.example/adopt-id': 'b-9' } });
    const before = { objects: [o], buckets: [placed('b-9', { team: 'elsewhere' })] };
    expect(checkInterval(before, { objects: [o], buckets: [placed('b-9', { team: 'elsewhere' }, 40)] }, none).map((x) => x.invariant)).to.deep.equal([
      'observeNeverWrites',
    ]);
    expect(
      checkInterval(before, { objects: [o], buckets: [placed('b-9', { team: 'elsewhere' }), placed('b-2', tagsOf('o', 'u3'))] }, none).map(
        (x) => x.invariant,
      ),
    ).to.deep.equal(['observeNeverWrites']);
    expect(checkInterval(before, { objects: [o], buckets: [placed('b-9', { team: 'elsewhere' }, 40)] }, new Set(['ns1/o']))).to.deep.equal([]);
  });
});
