import { expect } from 'chai';
import { remainingAfterDelete } from '../../../operator/bucket/cleanup';
import { keyObservation } from '../../../operator/bucket/external';
import { decide, statusTrusted, type DecisionFacts, type Need, type Observation, type Step } from '../../../operator/bucket/plan';
import type { StorageBucket } from '../../../operator/api/v1';
import { Reason } from '../../../operator/bucket/reasons';
import { DEFAULT_TAGS, bucket, providerBucket, readyStatus, KEY1 } from '../../support/fixtures';

const ENDPOINT = 'http://provider.example';
const absent: Observation = { exists: false };
const active: Observation = { exists: true, bucket: providerBucket() };
const CLUSTER = 'cluster-1';
/** The owner tags of the fixture object ns1/b1 in CLUSTER: the condition of a delete from the status. */
const { 'managed-by': _managedBy, ...OWNER_TAGS } = DEFAULT_TAGS;
/** The same, by an operator that does not know its cluster. */
const { 'kubernetes-cluster': _cluster, ...OWNER_TAGS_NO_CLUSTER } = OWNER_TAGS;
const ACCOUNT = 'acct-1';
const connected: DecisionFacts = { driftReported: false, clusterId: CLUSTER, connection: { endpoint: ENDPOINT, accountId: ACCOUNT } };
const observed = (observation: Observation): DecisionFacts => ({ ...connected, observation });
const ready = () => bucket().prepared(KEY1).withStatus(readyStatus(ENDPOINT));
const observe: Need = { type: 'observe', fence: false };
const observeFenced: Need = { type: 'observe', fence: true };
const otherOwnerTags = { ...DEFAULT_TAGS, 'kubernetes-namespace': 'ns2', 'kubernetes-name': 'first' };

interface Case {
  readonly args: { readonly bucket: StorageBucket; readonly facts: DecisionFacts };
  readonly want: Step | Need;
}

/** Stage by stage, the way the orchestrator walks them: object, connection, preplan, observation. */
const cases: Record<string, Case> = {
  // The object alone.
  'deleting without our finalizer: nothing, not even a connection': {
    args: { bucket: bucket().deleting().build(), facts: { driftReported: false } },
    want: { type: 'nothing' },
  },
  'paused: report it before connecting': {
    args: { bucket: ready().paused().build(), facts: { driftReported: false } },
    want: { type: 'paused', message: 'reconciliation paused by storage.avalonhosting.example/paused' },
  },
  'deleting with Orphan: release before connecting (no provider needed)': {
    args: { bucket: ready().withSpec({ deletionPolicy: 'Orphan' }).deleting().build(), facts: { driftReported: false } },
    want: { type: 'removeFinalizer', why: 'orphan' },
  },
  'managementPolicy Observe, deleting: release, never DELETE': {
    args: { bucket: ready().withSpec({ managementPolicy: 'Observe' }).deleting().build(), facts: { driftReported: false } },
    want: { type: 'removeFinalizer', why: 'orphan' },
  },
  'invalid spec: blocked before connecting': {
    args: { bucket: bucket().withSpec({ sizeGB: 0 }).build(), facts: { driftReported: false } },
    want: { type: 'blocked', reason: 'InvalidSpec', message: 'spec/sizeGB: Expected integer to be greater or equal to 1' },
  },
  'valid and not deleting: connect next': { args: { bucket: bucket().build(), facts: { driftReported: false } }, want: { type: 'connect' } },

  // Not connected.
  'no config: wait for it with its reason': {
    args: {
      bucket: bucket().prepared().build(),
      facts: {
        driftReported: false,
        connection: { failure: { reason: 'ProviderConfigNotFound', message: 'BucketProviderConfig ns1/default not found' } },
      },
    },
    want: { type: 'waitForConfig', reason: 'ProviderConfigNotFound', message: 'BucketProviderConfig ns1/default not found' },
  },
  'no config, deleting, nothing ever sent: release': {
    args: {
      bucket: bucket().withFinalizer().deleting().build(),
      facts: { driftReported: false, connection: { failure: { reason: 'SecretNotFound', message: 'x' } } },
    },
    want: { type: 'removeFinalizer', why: 'gone' },
  },
  'no config, deleting, a key was minted: wait (a create may have happened)': {
    args: {
      bucket: bucket().prepared().deleting().build(),
      facts: { driftReported: false, connection: { failure: { reason: 'SecretNotFound', message: 'x' } } },
    },
    want: { type: 'waitForConfig', reason: 'SecretNotFound', message: 'x' },
  },

  // Connected, before asking the provider.
  'new object: finalizer and key, then create at once': {
    args: { bucket: bucket().build(), facts: connected },
    want: { type: 'prepare', addFinalizer: true, mintKey: true, createNow: true },
  },
  'finalizer but no key: mint it and create': {
    args: { bucket: bucket().withFinalizer().build(), facts: connected },
    want: { type: 'prepare', addFinalizer: false, mintKey: true, createNow: true },
  },
  'key but no finalizer: add it, then ask the provider (the key may have been used)': {
    args: { bucket: bucket().withKey(KEY1).build(), facts: connected },
    want: { type: 'prepare', addFinalizer: true, mintKey: false, createNow: false },
  },
  'adopting: prepare, never create': {
    args: { bucket: bucket().adopting('bucket-7').build(), facts: connected },
    want: { type: 'prepare', addFinalizer: true, mintKey: true, createNow: false },
  },
  'prepared, never created: observe (the key may have made a bucket)': {
    args: { bucket: bucket().prepared().build(), facts: connected },
    want: observe,
  },
  'Ready for this generation: trust the status, no provider call': {
    args: { bucket: ready().build(), facts: connected },
    want: { type: 'upToDate' },
  },
  'Ready, but the drift scan named it: observe': { args: { bucket: ready().build(), facts: { ...connected, driftReported: true } }, want: observe },
  'spec changed since Ready: observe': {
    args: { bucket: ready().withSpec({ sizeGB: 20 }).withGeneration(2).build(), facts: connected },
    want: observe,
  },
  "config points elsewhere now: observe (ProviderChanged is the provider's to prove)": {
    args: { bucket: ready().build(), facts: { driftReported: false, connection: { endpoint: 'http://other' } } },
    want: observe,
  },
  'last reconcile failed (Synced False): observe': {
    args: {
      bucket: ready()
        .withStatus({
          conditions: [
            { type: 'Ready', status: 'True', reason: 'Available', message: '', lastTransitionTime: '2026-01-01T00:00:00Z', observedGeneration: 1 },
            {
              type: 'Synced',
              status: 'False',
              reason: 'ProviderUnavailable',
              message: 'x',
              lastTransitionTime: '2026-01-01T00:00:00Z',
              observedGeneration: 1,
            },
          ],
        })
        .build(),
      facts: connected,
    },
    want: observe,
  },
  'a reconcile requested by annotation and not yet handled: observe': {
    args: { bucket: ready().withAnnotation('storage.avalonhosting.example/reconcile-requested-at', 't1').build(), facts: connected },
    want: observe,
  },
  'a reconcile request already handled: trust the status': {
    args: {
      bucket: ready()
        .withAnnotation('storage.avalonhosting.example/reconcile-requested-at', 't1')
        .withStatus({ lastHandledReconcileAt: 't1' })
        .build(),
      facts: connected,
    },
    want: { type: 'upToDate' },
  },
  'managementPolicy Observe, Ready: observe (untagged, so the scan cannot cover it)': {
    args: { bucket: ready().withSpec({ managementPolicy: 'Observe' }).build(), facts: connected },
    want: observe,
  },
  'managementPolicy Observe, new: observe, never prepare': {
    args: { bucket: bucket().withSpec({ managementPolicy: 'Observe' }).build(), facts: connected },
    want: observe,
  },
  'deleting with a recorded id: DELETE at once on condition of the owner tags, a 404 means gone': {
    args: { bucket: ready().deleting().build(), facts: connected },
    want: { type: 'delete', id: 'bucket-000001', ifTags: OWNER_TAGS },
  },
  'deleting after a key rotation: the id is not proof, observe first (by id, then by key), fenced': {
    args: { bucket: bucket().prepared('k2').withStatus(readyStatus(ENDPOINT)).deleting().build(), facts: connected },
    want: observeFenced,
  },
  "found in review: deleting an id recorded while observing another object's bucket (annotation removed, policy Full): observe first": {
    args: { bucket: bucket().prepared('k9').withStatus(readyStatus(ENDPOINT)).deleting().build(), facts: connected },
    want: observeFenced,
  },
  "found in review: deleting, the observed bucket's tags name another live object: release, never DELETE": {
    args: {
      bucket: bucket().prepared('k9').withStatus(readyStatus(ENDPOINT)).deleting().build(),
      facts: observed({ exists: true, bucket: providerBucket({ tags: otherOwnerTags, idempotencyKey: KEY1 }) }),
    },
    want: { type: 'removeFinalizer', why: 'notOurs' },
  },
  'found in review: deleting, an untagged bucket not made by our key: release, never DELETE': {
    args: {
      bucket: bucket().prepared('k9').withStatus(readyStatus(ENDPOINT)).deleting().build(),
      facts: observed({ exists: true, bucket: providerBucket({ tags: {}, idempotencyKey: 'other' }) }),
    },
    want: { type: 'removeFinalizer', why: 'notOurs' },
  },
  'deleting, our key made it though its tags were changed at the provider: DELETE': {
    args: {
      bucket: bucket().prepared(KEY1).withStatus(readyStatus(ENDPOINT)).deleting().build(),
      facts: observed({ exists: true, bucket: providerBucket({ tags: {}, idempotencyKey: KEY1 }) }),
    },
    want: { type: 'delete', id: 'bucket-000001' },
  },
  'deleting with no id (create answer lost): look the key up, fenced': {
    args: { bucket: bucket().prepared(KEY1).deleting().build(), facts: connected },
    want: observeFenced,
  },
  'deleting, never prepared: release, nothing was ever sent': {
    args: { bucket: bucket().withFinalizer().deleting().build(), facts: connected },
    want: { type: 'removeFinalizer', why: 'gone' },
  },
  'deleting an adopted bucket: observe first (its tags must show it is ours)': {
    args: { bucket: ready().adopting('bucket-000001').deleting().build(), facts: connected },
    want: observeFenced,
  },
  'deleting an adopt target never recorded: observe first': {
    args: { bucket: bucket().prepared(KEY1).adopting('bucket-7').deleting().build(), facts: connected },
    want: observeFenced,
  },
  'deleting after the config moved: observe (a 404 there proves nothing)': {
    args: { bucket: ready().deleting().build(), facts: { driftReported: false, connection: { endpoint: 'http://other' } } },
    want: observeFenced,
  },

  // The provider's answer.
  'prepared, nothing at the provider: create with that key': {
    args: { bucket: bucket().prepared(KEY1).build(), facts: observed(absent) },
    want: { type: 'create', idempotencyKey: KEY1 },
  },
  'the bucket made with the current key vanished: rotate the key and create': {
    args: { bucket: bucket().prepared(KEY1).withStatus({ id: 'bucket-000001', idempotencyKey: KEY1 }).build(), facts: observed(absent) },
    want: { type: 'rotateKey', reason: 'vanished', createNow: true },
  },
  "the key found another object's bucket: rotate the key and create": {
    args: { bucket: bucket().prepared(KEY1).build(), facts: observed({ exists: false, foreignKey: true }) },
    want: { type: 'rotateKey', reason: 'foreign', createNow: true },
  },
  'a create was refused with 410 (key spent): rotate, the watch brings the create': {
    args: { bucket: bucket().prepared(KEY1).build(), facts: observed({ exists: false, keySpent: true }) },
    want: { type: 'rotateKey', reason: 'spent', createNow: false },
  },
  'key already rotated but not yet used: create with it, never mint again': {
    args: { bucket: bucket().prepared('k2').withStatus({ id: 'bucket-000001', idempotencyKey: KEY1 }).build(), facts: observed(absent) },
    want: { type: 'create', idempotencyKey: 'k2' },
  },
  "the config points at another provider than the bucket's: blocked, never recreate": {
    args: {
      bucket: bucket().prepared(KEY1).withStatus({ id: 'bucket-000001', idempotencyKey: KEY1, providerEndpoint: 'http://old' }).build(),
      facts: observed(absent),
    },
    want: {
      type: 'blocked',
      reason: 'ProviderChanged',
      message: `bucket bucket-000001 was created at http://old, but the BucketProviderConfig now points at ${ENDPOINT}; point the config back, or set deletionPolicy Orphan and delete this StorageBucket to let it go`,
    },
  },
  'deleting after the provider changed: blocked, never release the finalizer': {
    args: {
      bucket: bucket().prepared(KEY1).withStatus({ id: 'bucket-000001', providerEndpoint: 'http://old' }).deleting().build(),
      facts: observed(absent),
    },
    want: {
      type: 'blocked',
      reason: 'ProviderChanged',
      message: `bucket bucket-000001 was created at http://old, but the BucketProviderConfig now points at ${ENDPOINT}; point the config back, or set deletionPolicy Orphan and delete this StorageBucket to let it go`,
    },
  },
  'same provider, bucket gone, deleting: release the finalizer': {
    args: {
      bucket: bucket().prepared(KEY1).withStatus({ id: 'bucket-000001', providerEndpoint: ENDPOINT }).deleting().build(),
      facts: observed(absent),
    },
    want: { type: 'removeFinalizer', why: 'gone' },
  },
  'provisioning: wait': {
    args: { bucket: bucket().prepared().build(), facts: observed({ exists: true, bucket: providerBucket({ phase: 'Provisioning' }) }) },
    want: { type: 'wait', phase: 'Provisioning' },
  },
  'resizing: wait': {
    args: { bucket: bucket().prepared().build(), facts: observed({ exists: true, bucket: providerBucket({ phase: 'Resizing' }) }) },
    want: { type: 'wait', phase: 'Resizing' },
  },
  'active and matching, first time: ready, announced': {
    args: { bucket: bucket().prepared().build(), facts: observed(active) },
    want: { type: 'ready', announce: true, adopting: false },
  },
  'active and matching, already Ready: ready, not announced again': {
    args: { bucket: ready().build(), facts: observed(active) },
    want: { type: 'ready', announce: false, adopting: false },
  },
  'spec grew: resize (requested by a new generation)': {
    args: { bucket: ready().withSpec({ sizeGB: 20 }).withGeneration(2).build(), facts: observed(active) },
    want: { type: 'update', id: 'bucket-000001', patch: { sizeGB: 20 }, requested: true, grows: true, adopting: false },
  },
  'provider shrank behind our back: grow it back (drift)': {
    args: { bucket: ready().build(), facts: observed({ exists: true, bucket: providerBucket({ sizeGB: 5 }) }) },
    want: { type: 'update', id: 'bucket-000001', patch: { sizeGB: 10 }, requested: false, grows: true, adopting: false },
  },
  'provider larger than spec: never shrink': {
    args: { bucket: ready().build(), facts: observed({ exists: true, bucket: providerBucket({ sizeGB: 50 }) }) },
    want: { type: 'ready', announce: false, adopting: false },
  },
  'encryption drifted: correct it': {
    args: { bucket: ready().withSpec({ encrypted: true }).build(), facts: observed(active) },
    want: { type: 'update', id: 'bucket-000001', patch: { encrypted: true }, requested: false, grows: false, adopting: false },
  },
  "adopted bucket without the operator's tags: add them, keeping its own": {
    args: {
      bucket: bucket().prepared().adopting('bucket-000001').build(),
      facts: observed({ exists: true, bucket: providerBucket({ tags: { team: 'a', 'kubernetes-name': 'old' } }) }),
    },
    want: { type: 'update', id: 'bucket-000001', patch: { tags: { team: 'a', ...DEFAULT_TAGS } }, requested: true, grows: false, adopting: true },
  },
  'restored object (new uid, the key its predecessor made the bucket with): the uid tag follows': {
    args: {
      bucket: bucket().prepared('uid-before-restore.k1').build(),
      facts: observed({
        exists: true,
        bucket: providerBucket({ tags: { ...DEFAULT_TAGS, 'kubernetes-uid': 'uid-before-restore' }, idempotencyKey: 'uid-before-restore.k1' }),
      }),
    },
    // A restored object has no status yet, so its first write is for its (new) generation.
    want: { type: 'update', id: 'bucket-000001', patch: { tags: { ...DEFAULT_TAGS } }, requested: true, grows: false, adopting: false },
  },
  'found by the exhaustive search: a status id naming the bucket of an object that is gone, not made by this key: blocked until adopt-id names it': {
    args: {
      bucket: ready().build(),
      facts: observed({
        exists: true,
        bucket: providerBucket({ tags: { ...DEFAULT_TAGS, 'kubernetes-uid': 'uid-gone' }, idempotencyKey: 'uid-gone.k1' }),
      }),
    },
    want: {
      type: 'blocked',
      reason: Reason.BucketOwnedElsewhere,
      message:
        "provider bucket bucket-000001 is not tagged as this object's and was not made by its idempotency key; set storage.avalonhosting.example/adopt-id to bucket-000001 to adopt it",
      recheck: true,
    },
  },
  'adopt target missing: blocked': {
    args: { bucket: bucket().prepared().adopting('bucket-9').build(), facts: observed(absent) },
    want: {
      type: 'blocked',
      reason: 'AdoptTargetNotFound',
      message: 'provider bucket bucket-9 named by storage.avalonhosting.example/adopt-id does not exist',
    },
  },
  'adopt target present and tagged as ours: ready, adoption recorded': {
    args: { bucket: bucket().prepared().adopting('bucket-000001').build(), facts: observed(active) },
    want: { type: 'ready', announce: true, adopting: true },
  },
  'adopt target already owned by another StorageBucket: blocked, never re-tagged': {
    args: {
      bucket: bucket().prepared().adopting('bucket-000001').build(),
      facts: observed({ exists: true, bucket: providerBucket({ tags: otherOwnerTags }) }),
    },
    want: {
      type: 'blocked',
      reason: 'BucketOwnedElsewhere',
      message:
        'provider bucket bucket-000001 is managed by StorageBucket ns2/first; remove storage.avalonhosting.example/adopt-id, or delete ns2/first (deletionPolicy Orphan keeps the bucket) and this one adopts it',
      recheck: true,
    },
  },
  'adopt target tagged for a StorageBucket that no longer exists (orphaned): adopt it, re-tagging': {
    args: {
      bucket: bucket().prepared().adopting('bucket-000001').build(),
      facts: { ...observed({ exists: true, bucket: providerBucket({ tags: otherOwnerTags }) }), ownerExists: () => false },
    },
    want: { type: 'update', id: 'bucket-000001', patch: { tags: { ...DEFAULT_TAGS } }, requested: true, grows: false, adopting: true },
  },
  'config moved, a bucket of the same id there is not ours: ProviderChanged, never taken over': {
    args: {
      bucket: ready().withStatus({ providerEndpoint: 'http://old' }).build(),
      facts: observed({ exists: true, bucket: providerBucket({ tags: { team: 'x' } }) }),
    },
    want: {
      type: 'blocked',
      reason: 'ProviderChanged',
      message: `bucket bucket-000001 was created at http://old, but the BucketProviderConfig now points at ${ENDPOINT}; point the config back, or set deletionPolicy Orphan and delete this StorageBucket to let it go`,
    },
  },
  'config moved, the bucket there is tagged as ours: carry on': {
    args: { bucket: ready().withStatus({ providerEndpoint: 'http://old' }).build(), facts: observed(active) },
    want: { type: 'ready', announce: false, adopting: false },
  },
  'config being deleted, new object: nothing starts through it': {
    args: { bucket: bucket().build(), facts: { driftReported: false, connection: { endpoint: ENDPOINT, accountId: ACCOUNT, configDeleting: true } } },
    want: {
      type: 'waitForConfig',
      reason: 'ProviderConfigDeleting',
      message:
        'BucketProviderConfig ns1/default is being deleted: nothing new is created through it; delete this StorageBucket or point it at another config',
    },
  },
  'config being deleted, Ready bucket: still trusted, still Ready': {
    args: { bucket: ready().build(), facts: { driftReported: false, connection: { endpoint: ENDPOINT, accountId: ACCOUNT, configDeleting: true } } },
    want: { type: 'upToDate' },
  },
  'config being deleted, resize of a managed bucket: goes on': {
    args: {
      bucket: ready().withSpec({ sizeGB: 20 }).withGeneration(2).build(),
      facts: { ...observed(active), connection: { endpoint: ENDPOINT, accountId: ACCOUNT, configDeleting: true } },
    },
    want: { type: 'update', id: 'bucket-000001', patch: { sizeGB: 20 }, requested: true, grows: true, adopting: false },
  },
  'config being deleted, deleting a managed bucket: DELETE through it': {
    args: {
      bucket: ready().deleting().build(),
      facts: { driftReported: false, connection: { endpoint: ENDPOINT, accountId: ACCOUNT, configDeleting: true } },
    },
    want: { type: 'delete', id: 'bucket-000001', ifTags: OWNER_TAGS_NO_CLUSTER },
  },
  "deleting a second adopter: release, never delete the owner's bucket": {
    args: {
      bucket: bucket().prepared().adopting('bucket-000001').deleting().build(),
      facts: observed({ exists: true, bucket: providerBucket({ tags: otherOwnerTags }) }),
    },
    want: { type: 'removeFinalizer', why: 'notOurs' },
  },
  'deleting an adoption that never tagged the bucket: release, leave it': {
    args: {
      bucket: bucket().prepared().adopting('bucket-000001').deleting().build(),
      facts: observed({ exists: true, bucket: providerBucket({ tags: { team: 'a' } }) }),
    },
    want: { type: 'removeFinalizer', why: 'notOurs' },
  },
  'deleting an adoption that tagged the bucket (status not yet written): delete it': {
    args: { bucket: bucket().prepared().adopting('bucket-000001').deleting().build(), facts: observed(active) },
    want: { type: 'delete', id: 'bucket-000001' },
  },
  'deleting with a bucket: delete it': {
    args: { bucket: bucket().prepared().deleting().build(), facts: observed(active) },
    want: { type: 'delete', id: 'bucket-000001' },
  },
  'deleting while provisioning: delete anyway': {
    args: { bucket: bucket().prepared().deleting().build(), facts: observed({ exists: true, bucket: providerBucket({ phase: 'Provisioning' }) }) },
    want: { type: 'delete', id: 'bucket-000001' },
  },
  'deleting, nothing found by key (fenced): release the finalizer': {
    args: { bucket: bucket().prepared().deleting().build(), facts: observed(absent) },
    want: { type: 'removeFinalizer', why: 'gone' },
  },
};

describe('decide', () => {
  for (const [name, { args, want }] of Object.entries(cases)) {
    it(name, () => {
      expect(decide(args.bucket, args.facts)).to.deep.equal(want);
    });
  }

  it('statusTrusted needs Ready and Synced for the current generation', () => {
    const to = { endpoint: ENDPOINT, accountId: ACCOUNT };
    expect(statusTrusted(ready().build(), to)).to.equal(true);
    expect(statusTrusted(ready().withGeneration(2).build(), to)).to.equal(false);
    expect(statusTrusted(ready().withStatus({ endpoint: '' }).build(), to)).to.equal(false);
    // Credentials of another account since: asked, so ProviderChanged shows at once.
    expect(statusTrusted(ready().build(), { endpoint: ENDPOINT, accountId: 'acct-2' })).to.equal(false);
    // Account unknown on either side (a status written before it was recorded): no check.
    expect(statusTrusted(ready().withStatus({ account: undefined }).build(), to)).to.equal(true);
    expect(statusTrusted(ready().build(), { endpoint: ENDPOINT })).to.equal(true);
  });
});

describe('the account, asked only when a decision needs it', () => {
  const unknown = (observation?: Observation): DecisionFacts => ({
    driftReported: false,
    clusterId: CLUSTER,
    connection: { endpoint: ENDPOINT },
    ...(observation ? { observation } : {}),
  });
  it('a Ready bucket decided from its status: no account needed', () => {
    expect(decide(ready().build(), unknown())).to.deep.equal({ type: 'upToDate' });
  });
  it('a provider answer for a Full bucket (a vanished one could be an account switch): ask for it', () => {
    expect(decide(ready().build(), unknown(absent))).to.deep.equal({ type: 'account' });
  });
  it('Observe reads without it', () => {
    expect(decide(ready().withSpec({ managementPolicy: 'Observe' }).adopting('bucket-000001').build(), unknown(active))).to.deep.include({
      type: 'mirror',
    });
  });
});

describe('deletion, step after step', () => {
  const facts = (observation: Observation): DecisionFacts => ({ ...connected, observation });
  it('the config moved, the bucket there is tagged as this object’s: DELETE it, then release', () => {
    const b = ready().withStatus({ providerEndpoint: 'http://old' }).deleting().build();
    expect(decide(b, facts(active))).to.deep.equal({ type: 'delete', id: 'bucket-000001' });
    const left = remainingAfterDelete(active, 'bucket-000001');
    expect(decide(b, facts(left))).to.deep.equal({ type: 'removeFinalizer', why: 'gone' });
  });

  it('found by the model: the adopt-id names another object’s bucket, the key made one too: DELETE the key’s, keep the other', () => {
    const others = providerBucket({ id: 'bucket-000002', tags: otherOwnerTags });
    const made = providerBucket({ tags: {}, idempotencyKey: KEY1 });
    const b = bucket().prepared(KEY1).adopting('bucket-000002').deleting().build();
    const obs: Observation = { exists: true, bucket: others, more: [made] };
    expect(decide(b, facts(obs))).to.deep.equal({ type: 'delete', id: 'bucket-000001' });
    const left = remainingAfterDelete(obs, 'bucket-000001');
    expect(left).to.deep.equal({ exists: true, bucket: others });
    expect(decide(b, facts(left))).to.deep.equal({ type: 'removeFinalizer', why: 'notOurs' });
  });

  it('decided from the status alone: after the DELETE nothing is left', () => {
    expect(remainingAfterDelete(undefined, 'bucket-000001')).to.deep.equal({ exists: false, deleted: true });
  });
});

describe('keyObservation', () => {
  const table: Record<string, { args: { tags: Record<string, string> | undefined }; want: Observation }> = {
    'nothing made with the key': { args: { tags: undefined }, want: { exists: false } },
    'made for this object': { args: { tags: { ...DEFAULT_TAGS } }, want: { exists: true, bucket: providerBucket() } },
    'made for another object (key copied with a manifest)': { args: { tags: otherOwnerTags }, want: { exists: false, foreignKey: true } },
  };
  for (const [name, { args, want }] of Object.entries(table)) {
    it(name, () => {
      const found = args.tags ? providerBucket({ tags: args.tags }) : undefined;
      expect(keyObservation(bucket().prepared().build(), found, CLUSTER)).to.deep.equal(want);
    });
  }
});
