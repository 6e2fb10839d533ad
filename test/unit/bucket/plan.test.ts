import { expect } from 'chai';
import { plan, type Observation, type Step } from '../../../operator/bucket/plan';
import type { StorageBucket } from '../../../operator/api/v1';
import { bucket, providerBucket } from '../../support/fixtures';

const ENDPOINT = 'http://provider.example';
const absent: Observation = { exists: false };
const active: Observation = { exists: true, bucket: providerBucket() };

const cases: Record<string, [StorageBucket, Observation, Step]> = {
  'new object: finalizer and key before anything else': [bucket().build(), absent, { type: 'prepare' }],
  'finalizer but no key: prepare': [bucket().withFinalizer().build(), absent, { type: 'prepare' }],
  'key but no finalizer: prepare': [bucket().withKey('k1').build(), absent, { type: 'prepare' }],
  'prepared, nothing at the provider: create with that key': [bucket().prepared('k1').build(), absent, { type: 'create', idempotencyKey: 'k1' }],
  'the bucket made with the current key vanished: rotate the key': [
    bucket().prepared('k1').withStatus({ id: 'bucket-000001', idempotencyKey: 'k1' }).build(), absent, { type: 'rotateKey', reason: 'vanished' },
  ],
  'the key found another object\'s bucket: rotate the key': [
    bucket().prepared('k1').build(), { exists: false, foreignKey: true }, { type: 'rotateKey', reason: 'foreign' },
  ],
  'the config points at another provider than the bucket\'s: blocked, never recreate': [
    bucket().prepared('k1').withStatus({ id: 'bucket-000001', idempotencyKey: 'k1', providerEndpoint: 'http://old' }).build(), absent,
    { type: 'blocked', reason: 'ProviderChanged', message: `bucket bucket-000001 was created at http://old, but the BucketProviderConfig now points at ${ENDPOINT}` },
  ],
  'deleting after the provider changed: blocked, never release the finalizer': [
    bucket().prepared('k1').withStatus({ id: 'bucket-000001', providerEndpoint: 'http://old' }).deleting().build(), absent,
    { type: 'blocked', reason: 'ProviderChanged', message: `bucket bucket-000001 was created at http://old, but the BucketProviderConfig now points at ${ENDPOINT}` },
  ],
  'same provider, bucket gone, deleting: release the finalizer': [
    bucket().prepared('k1').withStatus({ id: 'bucket-000001', providerEndpoint: ENDPOINT }).deleting().build(), absent, { type: 'removeFinalizer', orphaned: false },
  ],
  'key already rotated but not yet used: create with it, never mint again': [
    bucket().prepared('k2').withStatus({ id: 'bucket-000001', idempotencyKey: 'k1' }).build(), absent, { type: 'create', idempotencyKey: 'k2' },
  ],
  'provisioning: wait': [
    bucket().prepared().build(), { exists: true, bucket: providerBucket({ phase: 'Provisioning' }) }, { type: 'none', waiting: 'Provisioning' },
  ],
  'resizing: wait': [
    bucket().prepared().build(), { exists: true, bucket: providerBucket({ phase: 'Resizing' }) }, { type: 'none', waiting: 'Resizing' },
  ],
  'active and matching: nothing to do': [bucket().prepared().build(), active, { type: 'none', waiting: false }],
  'spec grew: resize': [
    bucket().prepared().withSpec({ sizeGB: 20 }).build(), active, { type: 'update', id: 'bucket-000001', patch: { sizeGB: 20 } },
  ],
  'provider shrank behind our back: grow it back': [
    bucket().prepared().build(), { exists: true, bucket: providerBucket({ sizeGB: 5 }) }, { type: 'update', id: 'bucket-000001', patch: { sizeGB: 10 } },
  ],
  'provider larger than spec: never shrink': [
    bucket().prepared().build(), { exists: true, bucket: providerBucket({ sizeGB: 50 }) }, { type: 'none', waiting: false },
  ],
  'encryption drifted: correct it': [
    bucket().prepared().withSpec({ encrypted: true }).build(), active, { type: 'update', id: 'bucket-000001', patch: { encrypted: true } },
  ],
  'adopt target missing: blocked': [
    bucket().prepared().adopting('bucket-9').build(), absent,
    { type: 'blocked', reason: 'AdoptTargetNotFound', message: 'provider bucket bucket-9 named by storage.avalonhosting.example/adopt-id does not exist' },
  ],
  'adopt target present: treated like our own': [bucket().prepared().adopting('bucket-000001').build(), active, { type: 'none', waiting: false }],
  'deleting with a bucket: delete it': [bucket().prepared().deleting().build(), active, { type: 'delete', id: 'bucket-000001' }],
  'deleting while provisioning: delete anyway': [
    bucket().prepared().deleting().build(), { exists: true, bucket: providerBucket({ phase: 'Provisioning' }) }, { type: 'delete', id: 'bucket-000001' },
  ],
  'deleting, already gone: release the finalizer': [bucket().prepared().deleting().build(), absent, { type: 'removeFinalizer', orphaned: false }],
  'deleting with Orphan policy: keep the bucket': [
    bucket().prepared().withSpec({ deletionPolicy: 'Orphan' }).deleting().build(), active, { type: 'removeFinalizer', orphaned: true },
  ],
  'deleting without our finalizer: nothing to do': [bucket().deleting().build(), active, { type: 'none', waiting: false }],
};

describe('plan', () => {
  for (const [name, [obj, obs, want]] of Object.entries(cases)) {
    it(name, () => {
      expect(plan(obj, obs, ENDPOINT)).to.deep.equal(want);
    });
  }
});
