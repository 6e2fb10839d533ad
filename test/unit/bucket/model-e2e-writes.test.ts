import { expect } from 'chai';
import type { StorageBucket } from '../../../operator/api/v1';
import type { PlacedBucket } from '../../support/model/provider';
import { loggedWrites } from '../../support/model-e2e/operator-log';
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
    expect(
      checkInterval(before, { objects: [a], buckets: [] }, none, [{ op: 'delete', namespace: 'ns1', name: 'c', id: 'b-1' }])[0]?.detail,
    ).to.include('deleted by the reconcile of ns1/c');
    expect(checkInterval(before, { objects: [], buckets: [] }, new Set(['ns1/a']))).to.deep.equal([]);
  });

  it("flags a bucket retagged from a live object to another one, or updated by another object's reconcile", () => {
    const a = obj('a', 'u1', {}, {}, 'b-1');
    const b = obj('b', 'u2', {}, { annotations: { 'storage.avalonhosting.example/adopt-id': 'b-1' } });
    const before = { objects: [a, b], buckets: [placed('b-1', tagsOf('a', 'u1'))] };
    expect(checkInterval(before, { objects: [a, b], buckets: [placed('b-1', tagsOf('b', 'u2'))] }, none).map((x) => x.invariant)).to.deep.equal([
      'noForeignWrite',
    ]);
    const grown = { objects: [a, b], buckets: [placed('b-1', tagsOf('a', 'u1'), 30)] };
    expect(checkInterval(before, grown, none, [{ op: 'update', namespace: 'ns1', name: 'b', id: 'b-1' }]).map((x) => x.invariant)).to.deep.equal([
      'noForeignWrite',
    ]);
    // The owner's own resize while another object's adopt-id names the bucket (seed 114 of the first long run), or no logged writer: not judged.
    expect(checkInterval(before, grown, none, [{ op: 'update', namespace: 'ns1', name: 'a', id: 'b-1' }])).to.deep.equal([]);
    expect(checkInterval(before, grown, none)).to.deep.equal([]);
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

describe('model-e2e: provider writes read from the operator log', () => {
  it('reads creates, updates and deletes with their reconcile, and skips everything else', () => {
    const text = [
      '{"level":30,"namespace":"n","name":"b1","msg":"created provider bucket","bucketID":"bucket-1"}',
      '{"level":30,"namespace":"n","name":"b2","bucketID":"bucket-2","msg":"updating provider bucket","patch":{"sizeGB":20}}',
      '{"level":30,"namespace":"n","name":"b3","bucketID":"bucket-3","msg":"deleted provider bucket"}',
      '{"level":30,"namespace":"n","name":"b3","bucketID":"bucket-3","msg":"provider bucket already gone"}',
      'not json, provider bucket',
    ].join('\n');
    expect(loggedWrites(text)).to.deep.equal([
      { op: 'create', namespace: 'n', name: 'b1', id: 'bucket-1' },
      { op: 'update', namespace: 'n', name: 'b2', id: 'bucket-2' },
      { op: 'delete', namespace: 'n', name: 'b3', id: 'bucket-3' },
    ]);
  });
});
