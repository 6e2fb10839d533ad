/**
 * `conversionWebhook.storageVersion` and `migrateStorage`, as rendered: which version the CRDs
 * store, which version the operator is told to read and write, and the StorageVersionMigrations
 * that rewrite what is stored (both ways: v2 to upgrade, v1 to go back).
 */
import { expect } from 'chai';
import { OperatorCrds } from '../../../infra/crds';
import type { BucketOperatorProps } from '../../../infra/operator';
import { ofKind, synthOperator as synth, type Manifest as Obj } from '../../support/synth-operator';
import { testChart } from '../../support/test-app';

const stored = (objs: Obj[]) =>
  ofKind(objs, 'CustomResourceDefinition').map((c) => [
    c['metadata'].name,
    (c['spec'].versions as Obj[]).filter((v) => v['storage']).map((v) => v['name']),
  ]);
const args = (objs: Obj[]) => ofKind(objs, 'Deployment')[0]?.['spec'].template.spec.containers[0].args as string[];

const CRDS = ['bucketproviderconfigs.storage.avalonhosting.example', 'storagebuckets.storage.avalonhosting.example'];

describe('BucketOperator storage version and migration', () => {
  it('by default v1 is stored and read by the operator, and nothing is migrated', () => {
    for (const props of [{}, { conversionWebhook: {} }] as BucketOperatorProps[]) {
      const objs = synth(props);
      expect(stored(objs).map(([, v]) => v)).to.deep.equal([['v1'], ['v1']]);
      expect(args(objs)).to.include('--api-version=v1');
      expect(ofKind(objs, 'StorageVersionMigration')).to.deep.equal([]);
    }
  });

  it("storageVersion 'v2': both CRDs store v2, the operator reads and writes v2, and one migration per CRD rewrites the rest", () => {
    const objs = synth({ conversionWebhook: { storageVersion: 'v2' } });
    expect(stored(objs)).to.have.deep.members(CRDS.map((n) => [n, ['v2']]));
    // v1 is still served, so v1 clients and a roll back of the Deployment keep working.
    for (const crd of ofKind(objs, 'CustomResourceDefinition')) {
      expect((crd['spec'].versions as Obj[]).map((v) => [v['name'], v['served']])).to.deep.equal([
        ['v1', true],
        ['v2', true],
      ]);
    }
    expect(args(objs)).to.include('--api-version=v2').and.not.include('--api-version=v1');
    const migrations = ofKind(objs, 'StorageVersionMigration');
    expect(migrations.map((m) => [m['apiVersion'], m['metadata'].name, m['spec']])).to.have.deep.members([
      [
        'storagemigration.k8s.io/v1',
        'storagebuckets.storage.avalonhosting.example-to-v2',
        { resource: { group: 'storage.avalonhosting.example', resource: 'storagebuckets' } },
      ],
      [
        'storagemigration.k8s.io/v1',
        'bucketproviderconfigs.storage.avalonhosting.example-to-v2',
        { resource: { group: 'storage.avalonhosting.example', resource: 'bucketproviderconfigs' } },
      ],
    ]);
    for (const m of migrations) {
      // Cluster-scoped, and applied by Argo CD after the CRDs and the Deployment are healthy.
      expect(m['metadata']).to.not.have.property('namespace');
      expect(m['metadata'].annotations).to.deep.equal({ 'argocd.argoproj.io/sync-wave': '1' });
    }
  });

  it("going back: storageVersion 'v1' with migrateStorage renders migrations to v1, and v2 without it none", () => {
    const back = synth({ conversionWebhook: { storageVersion: 'v1', migrateStorage: true } });
    expect(stored(back).map(([, v]) => v)).to.deep.equal([['v1'], ['v1']]);
    expect(ofKind(back, 'StorageVersionMigration').map((m) => m['metadata'].name)).to.have.members(CRDS.map((n) => `${n}-to-v1`));
    expect(ofKind(synth({ conversionWebhook: { storageVersion: 'v2', migrateStorage: false } }), 'StorageVersionMigration')).to.deep.equal([]);
  });

  it('refuses a version it does not know, and v2 storage without the webhook', () => {
    expect(() => synth({ conversionWebhook: { storageVersion: 'v3' as 'v2' } })).to.throw(
      "BucketOperator: props.conversionWebhook.storageVersion must be one of v1, v2, got 'v3'",
    );
    const chart = testChart();
    expect(() => new OperatorCrds(chart, 'crds', { storageVersion: 'v2' })).to.throw("props.storageVersion 'v2' needs props.conversionWebhook");
  });
});
