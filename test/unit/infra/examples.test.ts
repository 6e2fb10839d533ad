import { expect } from 'chai';
import { Testing } from 'cdk8s';
import { BucketsChart } from '../../../examples/buckets';

describe('example app using the typed imports', () => {
  it('synthesizes StorageBuckets with the API field names', () => {
    const app = Testing.app();
    const chart = new BucketsChart(app, 'buckets', {
      namespace: 'team-a',
      endpoint: 'https://storage.example.com',
      buckets: { logs: 50 },
    });
    const objs = Testing.synth(chart) as Array<{ kind: string; metadata: { name: string }; spec?: Record<string, unknown> }>;
    const bucket = objs.find((o) => o.kind === 'StorageBucket');
    expect(bucket?.metadata.name).to.equal('logs');
    expect(bucket?.spec).to.deep.equal({
      region: 'eu-west-1',
      sizeGB: 50,
      encrypted: true,
      providerRef: { name: 'default' },
      deletionPolicy: 'Delete',
    });
  });
});
