import { expect } from 'chai';
import { Testing } from 'cdk8s';
import { BucketsChart, buildExampleApp } from '../../../examples/buckets';
import { testApp } from '../../support/test-app';

type Obj = { kind: string; metadata: { name: string; namespace?: string }; spec?: Record<string, unknown>; data?: Record<string, string> };

describe('example app using the package', () => {
  it('synthesizes StorageBuckets with the API field names', () => {
    const app = testApp();
    const chart = new BucketsChart(app, 'buckets', {
      namespace: 'team-a',
      endpoint: 'https://storage.example.com',
      buckets: { logs: 50 },
    });
    const objs = Testing.synth(chart) as Obj[];
    const bucket = objs.find((o) => o.kind === 'StorageBucket');
    expect(bucket?.metadata.name).to.equal('logs');
    expect(bucket?.spec).to.deep.equal({
      region: 'eu-west-1',
      sizeGB: 50,
      encrypted: true,
      providerRef: { name: 'default' },
      deletionPolicy: 'Delete',
    });
    expect(objs.find((o) => o.kind === 'ConfigMap')?.data).to.deep.equal({ 'logs-secret': 'logs-access' });
    // Opted in as provider credentials, or the config would report SecretNotLabeled.
    expect((objs.find((o) => o.kind === 'Secret')?.metadata as { labels?: Record<string, string> }).labels).to.deep.equal({
      'storage.avalonhosting.example/secret-type': 'provider-credentials',
    });
  });

  it('installs the operator beside the buckets', () => {
    const app = buildExampleApp('unused');
    const objs = app.charts.flatMap((c) => Testing.synth(c) as Obj[]);
    const deployment = objs.find((o) => o.kind === 'Deployment');
    expect(deployment?.metadata.namespace).to.equal('bucketoperator-system');
    expect(objs.filter((o) => o.kind === 'StorageBucket').map((o) => o.metadata.namespace)).to.deep.equal(['team-a', 'team-a']);
  });
});
