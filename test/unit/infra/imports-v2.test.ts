/**
 * The typed constructs in imports/ cover both versions: `StorageBucketV2` and
 * `BucketProviderConfigV2` (from `cdk8s import` of the CRDs as the construct renders them with
 * the conversion webhook on) render objects their own version's schema accepts, and v1's
 * classes stay `StorageBucket` and `BucketProviderConfig`.
 */
import { expect } from 'chai';
import { Testing } from 'cdk8s';
import * as lib from '../../../infra/index';
import * as v2 from '../../../operator/api/v2';
import { testChart } from '../../support/test-app';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- synthesized YAML is untyped; tests index into it freely

describe('imports/: both versions of both kinds', () => {
  it('renders a v2 StorageBucket and BucketProviderConfig that the v2 schemas accept', () => {
    const chart = testChart();
    new lib.StorageBucketV2(chart, 'logs', {
      metadata: { name: 'logs', namespace: 'team-a' },
      spec: { forProvider: { region: 'eu-west-1', size: '1500Mi' }, providerConfigRef: { name: 'default' } },
    });
    new lib.BucketProviderConfigV2(chart, 'cfg', {
      metadata: { name: 'default', namespace: 'team-a' },
      spec: { endpoint: 'https://storage.example.com', secretRef: { name: 'provider-credentials' } },
    });
    const [bucket, config] = Testing.synth(chart) as Obj[];
    expect(bucket?.['apiVersion']).to.equal(v2.API_VERSION);
    expect(config?.['apiVersion']).to.equal(v2.API_VERSION);
    const specOf = (def: v2.ApiDefinition) => def.versions[0]?.spec;
    const bucketSpec = specOf(v2.StorageBucketDefinition);
    const configSpec = specOf(v2.BucketProviderConfigDefinition);
    if (!bucketSpec || !configSpec) throw new Error('v2 definitions without a spec schema');
    expect(v2.validate(bucketSpec, bucket?.['spec'])).to.deep.equal([]);
    expect(v2.validate(configSpec, config?.['spec'])).to.deep.equal([]);
  });

  it("keeps v1's class names, so an app written against v1 compiles and renders as before", () => {
    const chart = testChart();
    new lib.StorageBucket(chart, 'logs', { metadata: { name: 'logs' }, spec: { region: 'eu-west-1', sizeGb: 5, providerRef: { name: 'default' } } });
    expect((Testing.synth(chart) as Obj[])[0]?.['apiVersion']).to.equal('storage.avalonhosting.example/v1');
  });
});
