import { expect } from 'chai';
import { breakdownFigures, byteBreakdown, managedPaths } from '../../../bench/object-bytes';
import { perBucketLife } from '../../../bench/scenarios';

const stored = JSON.stringify({
  apiVersion: 'storage.avalonhosting.example/v1',
  kind: 'StorageBucket',
  metadata: {
    name: 'b',
    annotations: { 'a.example/x': 'yy' },
    managedFields: [
      { manager: 'kubectl', operation: 'Apply', fieldsV1: { 'f:spec': {} } },
      { manager: 'bucketoperator', operation: 'Update', subresource: 'status', fieldsV1: { 'f:status': { 'f:phase': {} } } },
      { manager: 'bucketoperator', operation: 'Update', subresource: 'status', fieldsV1: { 'f:status': {} } },
    ],
  },
  spec: { size: '1Gi' },
  status: { phase: 'Active' },
});

describe('bench: stored object bytes', () => {
  it('splits the bytes by field, annotation and field manager', () => {
    const b = byteBreakdown(stored);
    expect(b.total).to.equal(Buffer.byteLength(stored));
    expect(b.fields['spec']).to.equal(JSON.stringify({ size: '1Gi' }).length);
    expect(b.fields['metadata.name']).to.equal(3);
    expect(b.fields).to.not.have.property('metadata.managedFields');
    expect(b.annotations['a.example/x']).to.equal('"a.example/x"'.length + '"yy"'.length + 2);
    expect(Object.keys(b.managers).sort()).to.deep.equal(['bucketoperator Update status', 'kubectl Apply']);
    // Two entries of one manager add up.
    expect(b.managers['bucketoperator Update status']).to.be.greaterThan(b.managers['kubectl Apply'] ?? 0);
  });

  it('lists the parts largest first after the total', () => {
    const f = breakdownFigures(byteBreakdown(stored));
    const [first, ...rest] = Object.entries(f);
    expect(first).to.deep.equal(['stored bytes', Buffer.byteLength(stored)]);
    const values = rest.map(([, v]) => v);
    expect(values).to.deep.equal([...values].sort((x, y) => y - x));
  });

  it('names the fields a managedFields entry holds, leaves only', () => {
    const fieldsV1 = {
      'f:metadata': { 'f:finalizers': { '.': {}, 'v:"a.example/f"': {} } },
      'f:status': { '.': {}, 'f:id': {}, 'f:conditions': { '.': {}, 'k:{"type":"Ready"}': { '.': {}, 'f:status': {} } } },
    };
    expect(managedPaths(fieldsV1)).to.deep.equal(['metadata.finalizers["a.example/f"]', 'status.id', 'status.conditions[{"type":"Ready"}].status']);
  });
});

describe('bench: kube-apiserver CPU per bucket-life', () => {
  it('adds the converge and delete phases and divides by N, in ms', () => {
    expect(perBucketLife({ 'api server CPU s': 12, 'delete api server CPU s': 8 }, 'api server CPU s', 1000)).to.deep.equal({
      'api server CPU ms per bucket-life': 20,
    });
  });

  it('says nothing when a phase was not measured', () => {
    expect(perBucketLife({ 'backlog api server CPU s': 12 }, 'backlog api server CPU s', 1000)).to.deep.equal({});
  });
});
