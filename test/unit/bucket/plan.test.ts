import { expect } from 'chai';
import { plan, preplan, statusTrusted, type ObserveFirst, type Observation, type PreplanFacts, type Step } from '../../../operator/bucket/plan';
import type { StorageBucket } from '../../../operator/api/v1';
import { DEFAULT_TAGS, bucket, providerBucket, readyStatus } from '../../support/fixtures';

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
  'adopted bucket without the operator\'s tags: add them, keeping its own': [
    bucket().prepared().adopting('bucket-000001').build(), { exists: true, bucket: providerBucket({ tags: { team: 'a', 'kubernetes-name': 'old' } }) },
    { type: 'update', id: 'bucket-000001', patch: { tags: { team: 'a', ...DEFAULT_TAGS } } },
  ],
  'restored object (new uid): the uid tag follows': [
    bucket().prepared().build(), { exists: true, bucket: providerBucket({ tags: { ...DEFAULT_TAGS, 'kubernetes-uid': 'uid-before-restore' } }) },
    { type: 'update', id: 'bucket-000001', patch: { tags: { ...DEFAULT_TAGS } } },
  ],
  'adopt target missing: blocked': [
    bucket().prepared().adopting('bucket-9').build(), absent,
    { type: 'blocked', reason: 'AdoptTargetNotFound', message: 'provider bucket bucket-9 named by storage.avalonhosting.example/adopt-id does not exist' },
  ],
  'adopt target present: treated like our own': [bucket().prepared().adopting('bucket-000001').build(), active, { type: 'none', waiting: false }],
  'deleting with a bucket: delete it': [bucket().prepared().deleting().build(), active, { type: 'delete', id: 'bucket-000001', ifGone: 'release' }],
  'deleting while provisioning: delete anyway': [
    bucket().prepared().deleting().build(), { exists: true, bucket: providerBucket({ phase: 'Provisioning' }) }, { type: 'delete', id: 'bucket-000001', ifGone: 'release' },
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

const facts: PreplanFacts = { endpoint: ENDPOINT, driftReported: false };
const ready = () => bucket().prepared('k1').withStatus(readyStatus(ENDPOINT));
const observe: ObserveFirst = { type: 'observe' };

const preplanCases: Record<string, { obj: StorageBucket; facts?: Partial<PreplanFacts>; want: Step | ObserveFirst }> = {
  'new object: prepare without asking the provider': { obj: bucket().build(), want: { type: 'prepare' } },
  'prepared, never created: observe (the key may have made a bucket)': { obj: bucket().prepared().build(), want: observe },
  'Ready for this generation: trust the status, no provider call': { obj: ready().build(), want: { type: 'upToDate' } },
  'Ready, but the drift scan named it: observe': { obj: ready().build(), facts: { driftReported: true }, want: observe },
  'spec changed since Ready: observe': { obj: ready().withSpec({ sizeGB: 20 }).withGeneration(2).build(), want: observe },
  'config points elsewhere now: observe (ProviderChanged is the provider\'s to prove)': {
    obj: ready().build(), facts: { endpoint: 'http://other' }, want: observe,
  },
  'last reconcile failed (Synced False): observe': {
    obj: ready().withStatus({
      conditions: [
        { type: 'Ready', status: 'True', reason: 'Available', message: '', lastTransitionTime: '2026-01-01T00:00:00Z', observedGeneration: 1 },
        { type: 'Synced', status: 'False', reason: 'ProviderUnavailable', message: 'x', lastTransitionTime: '2026-01-01T00:00:00Z', observedGeneration: 1 },
      ],
    }).build(),
    want: observe,
  },
  'provisioning: observe (poll)': {
    obj: bucket().prepared().withStatus({ ...readyStatus(ENDPOINT), phase: 'Provisioning', conditions: [] }).build(), want: observe,
  },
  'deleting with a recorded id: DELETE at once, a 404 means gone': {
    obj: ready().deleting().build(), want: { type: 'delete', id: 'bucket-000001', ifGone: 'release' },
  },
  'deleting after a key rotation: DELETE, but confirm by key if gone': {
    obj: bucket().prepared('k2').withStatus(readyStatus(ENDPOINT)).deleting().build(),
    want: { type: 'delete', id: 'bucket-000001', ifGone: 'lookUpKey' },
  },
  'deleting with no id (create answer lost): look the key up first': { obj: bucket().prepared('k1').deleting().build(), want: observe },
  'deleting, never prepared: release, nothing was ever sent': { obj: bucket().withFinalizer().deleting().build(), want: { type: 'removeFinalizer', orphaned: false } },
  'deleting an adopt target never recorded: DELETE it, confirm by key if gone': {
    obj: bucket().prepared('k1').adopting('bucket-7').deleting().build(), want: { type: 'delete', id: 'bucket-7', ifGone: 'lookUpKey' },
  },
  'deleting after the config moved: observe (a 404 there proves nothing)': {
    obj: ready().deleting().build(), facts: { endpoint: 'http://other' }, want: observe,
  },
  'deleting with Orphan: release': {
    obj: ready().withSpec({ deletionPolicy: 'Orphan' }).deleting().build(), want: { type: 'removeFinalizer', orphaned: true },
  },
  'deleting without our finalizer: nothing': { obj: bucket().deleting().build(), want: { type: 'none', waiting: false } },
  'a reconcile requested by annotation and not yet handled: observe': {
    obj: ready().withAnnotation('storage.avalonhosting.example/reconcile-requested-at', 't1').build(), want: observe,
  },
  'a reconcile request already handled: trust the status': {
    obj: ready().withAnnotation('storage.avalonhosting.example/reconcile-requested-at', 't1').withStatus({ lastHandledReconcileAt: 't1' }).build(),
    want: { type: 'upToDate' },
  },
  'managementPolicy Observe, Ready: observe (untagged, so the scan cannot cover it)': {
    obj: ready().withSpec({ managementPolicy: 'Observe' }).build(), want: observe,
  },
  'managementPolicy Observe, new: observe, never prepare': { obj: bucket().withSpec({ managementPolicy: 'Observe' }).build(), want: observe },
  'managementPolicy Observe, deleting: release, never DELETE': {
    obj: ready().withSpec({ managementPolicy: 'Observe' }).deleting().build(), want: { type: 'removeFinalizer', orphaned: true },
  },
};

describe('preplan', () => {
  for (const [name, tc] of Object.entries(preplanCases)) {
    it(name, () => {
      expect(preplan(tc.obj, { ...facts, ...tc.facts })).to.deep.equal(tc.want);
    });
  }

  it('statusTrusted needs Ready and Synced for the current generation', () => {
    expect(statusTrusted(ready().build(), ENDPOINT)).to.equal(true);
    expect(statusTrusted(ready().withGeneration(2).build(), ENDPOINT)).to.equal(false);
    expect(statusTrusted(ready().withStatus({ endpoint: '' }).build(), ENDPOINT)).to.equal(false);
  });
});
