/**
 * The uninstall guard in cleanup(): when the StorageBucket CRD is being deleted, every object
 * the API server deletes with it is released and its provider bucket kept, whatever its
 * policy and however the bucket came to be its own. Each case says what cleanup decides for
 * the same object when the CRD is not being deleted (a user's delete), so the table shows the
 * guard is the only thing between an uninstall and that step.
 */
import { expect } from 'chai';
import type { StorageBucket } from '../../../operator/api/v1';
import { cleanup } from '../../../operator/bucket/cleanup';
import { decide, type DecisionFacts, type Need, type Step } from '../../../operator/bucket/plan';
import type { CrdGuard } from '../../../operator/bucket/crd-guard';
import { BucketWorld } from '../../support/bucket-world';
import { DEFAULT_TAGS, KEY1, bucket, providerBucket, readyStatus } from '../../support/fixtures';

const ENDPOINT = 'http://provider.example';
const CLUSTER = 'cluster-1';
const connected: DecisionFacts = { driftReported: false, clusterId: CLUSTER, connection: { endpoint: ENDPOINT, accountId: 'acct-1' } };
const { 'managed-by': _managedBy, ...OWNER_TAGS } = DEFAULT_TAGS;
const ready = () => bucket().prepared(KEY1).withStatus(readyStatus(ENDPOINT));
const KEPT: Step = { type: 'removeFinalizer', why: 'crdDeleting' };

interface Case {
  readonly args: { readonly bucket: StorageBucket; readonly facts: DecisionFacts };
  /** What a user's delete of the same object leads to. */
  readonly withoutGuard: Step | Need;
}

const cases: Record<string, Case> = {
  'Ready, recorded as made by our key: a user delete would DELETE it from the status': {
    args: { bucket: ready().deleting().build(), facts: connected },
    withoutGuard: { type: 'delete', id: 'bucket-000001', ifTags: OWNER_TAGS },
  },
  'found at the provider, made by our key: a user delete would DELETE it': {
    args: {
      bucket: ready().deleting().build(),
      facts: { ...connected, observation: { exists: true, bucket: providerBucket({ idempotencyKey: KEY1 }) } },
    },
    withoutGuard: { type: 'delete', id: 'bucket-000001' },
  },
  'adopted, its tags ours: a user delete would DELETE it': {
    args: {
      bucket: ready().adopting('bucket-000001').deleting().build(),
      facts: { ...connected, observation: { exists: true, bucket: providerBucket({ idempotencyKey: 'someone-else' }) } },
    },
    withoutGuard: { type: 'delete', id: 'bucket-000001' },
  },
  'only a key (the create answer was lost): a user delete would look it up, fenced': {
    args: { bucket: bucket().prepared(KEY1).deleting().build(), facts: connected },
    withoutGuard: { type: 'observe', fence: true },
  },
  'not connected yet: a user delete would connect first': {
    args: { bucket: ready().deleting().build(), facts: { driftReported: false, clusterId: CLUSTER } },
    withoutGuard: { type: 'connect' },
  },
  'its config is gone: a user delete would wait for it': {
    args: {
      bucket: ready().deleting().build(),
      facts: {
        driftReported: false,
        connection: { failure: { reason: 'ProviderConfigNotFound', message: 'BucketProviderConfig ns1/default not found' } },
      },
    },
    withoutGuard: { type: 'waitForConfig', reason: 'ProviderConfigNotFound', message: 'BucketProviderConfig ns1/default not found' },
  },
  'deletionPolicy Orphan: released either way': {
    args: { bucket: ready().withSpec({ deletionPolicy: 'Orphan' }).deleting().build(), facts: connected },
    withoutGuard: { type: 'removeFinalizer', why: 'orphan' },
  },
};

describe('cleanup: the StorageBucket CRD is being deleted', () => {
  for (const [name, { args, withoutGuard }] of Object.entries(cases)) {
    it(name, () => {
      expect(cleanup(args.bucket, args.facts), 'a user delete').to.deep.equal(withoutGuard);
      expect(cleanup(args.bucket, { ...args.facts, crdDeleting: true }), 'the CRD is being deleted').to.deep.equal(KEPT);
      expect(cleanup(args.bucket, { ...args.facts, crdDeleting: false }), 'the CRD is not being deleted').to.deep.equal(withoutGuard);
    });
  }

  it('is decided before any connection: keeping a bucket needs no provider', () => {
    expect(decide(ready().deleting().build(), { driftReported: false, crdDeleting: true })).to.deep.equal(KEPT);
  });

  it('leaves a paused object to its pause: it keeps the finalizer (and the CRD waits) until resumed', () => {
    const paused = ready().paused().deleting().build();
    expect(decide(paused, { ...connected, crdDeleting: true })).to.deep.include({ type: 'paused' });
  });

  it('does not apply to an object that is not being deleted', () => {
    expect(decide(ready().build(), { ...connected, crdDeleting: true })).to.deep.equal({ type: 'upToDate' });
  });
});

describe('BucketReconciler with the uninstall guard (plain fakes)', () => {
  let world: BucketWorld;
  let asked: number;
  let releasedCount: number;
  const guard = (deleting: () => Promise<boolean>): CrdGuard => ({
    deleting: () => {
      asked++;
      return deleting();
    },
    released: () => {
      releasedCount++;
    },
  });
  beforeEach(() => {
    world = new BucketWorld();
    asked = 0;
    releasedCount = 0;
  });

  it('the CRD is being deleted: the object goes, its provider bucket stays, the provider is not called', async () => {
    world.apply(bucket().build());
    await world.settle();
    const calls = world.provider.calls;
    world.delete();
    expect(await world.reconcile('b1', { crd: guard(async () => true) })).to.deep.equal({ type: 'done' });
    expect(world.bucket()).to.equal(undefined);
    expect([...world.provider.buckets.values()].map((b) => b.phase)).to.deep.equal(['Active']);
    expect(world.provider.calls, 'provider calls').to.equal(calls);
    expect(releasedCount, 'released counter').to.equal(1);
  });

  it('the CRD stays: a delete by a user deprovisions as before', async () => {
    world.apply(bucket().build());
    await world.settle();
    world.delete();
    expect(await world.reconcile('b1', { crd: guard(async () => false) })).to.deep.equal({ type: 'done' });
    expect(world.bucket()).to.equal(undefined);
    expect(world.provider.buckets.size).to.equal(0);
    expect(releasedCount).to.equal(0);
  });

  it('the CRD cannot be read: nothing is deleted and the finalizer stays, for a retry', async () => {
    world.apply(bucket().build());
    await world.settle();
    world.delete();
    const failed = await world.reconcile('b1', { crd: guard(async () => Promise.reject(new Error('forbidden'))) }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(failed).to.be.instanceOf(Error);
    expect(world.hasFinalizer()).to.equal(true);
    expect(world.provider.buckets.size).to.equal(1);
  });

  it('is asked only about objects being deleted', async () => {
    world.apply(bucket().build());
    await world.settle();
    expect(await world.reconcile('b1', { crd: guard(async () => true) })).to.deep.equal({ type: 'done' });
    expect(asked).to.equal(0);
  });
});
