import { expect } from 'chai';
import { plan, type Observation, type Step } from '../../../operator/bucket/plan';
import type { StorageBucket } from '../../../operator/api/v1';
import { bucket, providerBucket } from '../../support/fixtures';

const absent: Observation = { exists: false };
const active: Observation = { exists: true, bucket: providerBucket() };

const cases: Record<string, [StorageBucket, Observation, Step]> = {
  'new object: add the finalizer before anything else': [bucket().build(), absent, { type: 'addFinalizer' }],
  'finalizer but no key: record a key before creating': [bucket().withFinalizer().build(), absent, { type: 'recordKey', recreate: false }],
  'key recorded, nothing at the provider: create with that key': [
    bucket().withFinalizer().withStatus({ idempotencyKey: 'k1' }).build(), absent, { type: 'create', idempotencyKey: 'k1' },
  ],
  'known id vanished at the provider: new key to recreate': [
    bucket().withFinalizer().withStatus({ id: 'bucket-000001', idempotencyKey: 'k1' }).build(), absent, { type: 'recordKey', recreate: true },
  ],
  'provisioning: wait': [
    bucket().withFinalizer().build(), { exists: true, bucket: providerBucket({ phase: 'Provisioning' }) }, { type: 'none', waiting: 'Provisioning' },
  ],
  'resizing: wait': [
    bucket().withFinalizer().build(), { exists: true, bucket: providerBucket({ phase: 'Resizing' }) }, { type: 'none', waiting: 'Resizing' },
  ],
  'active and matching: nothing to do': [bucket().withFinalizer().build(), active, { type: 'none', waiting: false }],
  'spec grew: resize': [
    bucket().withFinalizer().withSpec({ sizeGB: 20 }).build(), active, { type: 'update', id: 'bucket-000001', patch: { sizeGB: 20 } },
  ],
  'provider shrank behind our back: grow it back': [
    bucket().withFinalizer().build(), { exists: true, bucket: providerBucket({ sizeGB: 5 }) }, { type: 'update', id: 'bucket-000001', patch: { sizeGB: 10 } },
  ],
  'provider larger than spec: never shrink': [
    bucket().withFinalizer().build(), { exists: true, bucket: providerBucket({ sizeGB: 50 }) }, { type: 'none', waiting: false },
  ],
  'encryption drifted: correct it': [
    bucket().withFinalizer().withSpec({ encrypted: true }).build(), active, { type: 'update', id: 'bucket-000001', patch: { encrypted: true } },
  ],
  'adopt target missing: blocked': [
    bucket().withFinalizer().adopting('bucket-9').build(), absent,
    { type: 'blocked', reason: 'AdoptTargetNotFound', message: 'provider bucket bucket-9 named by storage.avalonhosting.example/adopt-id does not exist' },
  ],
  'adopt target present: treated like our own': [bucket().withFinalizer().adopting('bucket-000001').build(), active, { type: 'none', waiting: false }],
  'deleting with a bucket: delete it': [bucket().withFinalizer().deleting().build(), active, { type: 'delete', id: 'bucket-000001' }],
  'deleting while provisioning: delete anyway': [
    bucket().withFinalizer().deleting().build(), { exists: true, bucket: providerBucket({ phase: 'Provisioning' }) }, { type: 'delete', id: 'bucket-000001' },
  ],
  'deleting, already gone: release the finalizer': [bucket().withFinalizer().deleting().build(), absent, { type: 'removeFinalizer', orphaned: false }],
  'deleting with Orphan policy: keep the bucket': [
    bucket().withFinalizer().withSpec({ deletionPolicy: 'Orphan' }).deleting().build(), active, { type: 'removeFinalizer', orphaned: true },
  ],
  'deleting without our finalizer: nothing to do': [bucket().deleting().build(), active, { type: 'none', waiting: false }],
};

describe('plan', () => {
  for (const [name, [obj, obs, want]] of Object.entries(cases)) {
    it(name, () => {
      expect(plan(obj, obs)).to.deep.equal(want);
    });
  }
});
