/**
 * Identity is the uid, the cluster and the provider account: sequences of ordinary edits in
 * which names alone made the operator act on a bucket that was not its object's. Each runs
 * the real orchestrator against the plain fakes; the fake provider scopes buckets and keys by
 * account, as the mock provider and a real cloud do.
 */
import { expect } from 'chai';
import type { StorageBucket } from '../../../operator/api/v1';
import { ADOPT_ANNOTATION, BUCKET_FINALIZER } from '../../../operator/api/v1';
import { ProviderError, type ProviderBucket } from '../../../operator/provider-client';
import { BucketWorld } from '../../support/bucket-world';
import { DEFAULT_TAGS, bucket, KEY1 } from '../../support/fixtures';

const condition = (b: StorageBucket | undefined, type: string) =>
  (b?.status?.conditions as { type: string; status: string; reason: string; message?: string }[] | undefined)?.find((c) => c.type === type);

const CREATE = { region: 'us-east-1', sizeGB: 10, encrypted: false } as const;

/** The provider's buckets by id, as plain data to compare. */
const snapshot = (world: BucketWorld): Record<string, ProviderBucket> => Object.fromEntries(structuredClone([...world.provider.buckets]));

describe('ownership by identity (uid, cluster, provider account)', () => {
  let world: BucketWorld;
  beforeEach(() => {
    world = new BucketWorld();
  });

  it("found in review: a config's Secret switched to another account reports ProviderChanged, never a second bucket", async () => {
    world.apply(bucket().build());
    await world.settle();
    const id = world.bucket()?.status?.id;
    expect(world.bucket()?.status?.account).to.equal('acct-1');

    // The Secret now holds a key of another account, at the same endpoint: it sees none of ours.
    world.provider.account = 'acct-2';
    await world.settle();
    expect(condition(world.bucket(), 'Ready')).to.include({ status: 'False', reason: 'ProviderChanged' });
    expect(condition(world.bucket(), 'Ready')?.message).to.include('account acct-1').and.include('account acct-2');
    expect([...world.provider.buckets.keys()]).to.deep.equal([id]);

    // Deleting meanwhile cannot prove the bucket gone: the finalizer stays, nothing is orphaned.
    world.delete();
    await world.settle();
    expect(world.hasFinalizer()).to.equal(true);
    expect([...world.provider.buckets.keys()]).to.deep.equal([id]);

    // Pointed back, the deletion completes at the account that holds the bucket.
    world.provider.account = 'acct-1';
    await world.settle();
    expect(world.bucket()).to.equal(undefined);
    expect(world.provider.buckets.size).to.equal(0);
  });

  it('found in review: a manifest copied from another cluster (same namespace, name and key) makes its own bucket and never deletes theirs', async () => {
    const theirs = await world.provider.createBucket(
      { ...CREATE, tags: { ...DEFAULT_TAGS, 'kubernetes-uid': 'uid-in-cluster-2', 'kubernetes-cluster': 'cluster-2' } },
      KEY1,
    );
    const before = structuredClone(theirs);
    world.apply(bucket().prepared(KEY1).build());
    await world.settle();
    const ours = world.bucket()?.status?.id;
    expect(ours).to.be.a('string').and.not.equal(theirs.id);
    expect(condition(world.bucket(), 'Ready')).to.include({ status: 'True' });
    expect(world.provider.buckets.get(theirs.id), "the other cluster's bucket").to.deep.equal({ ...before, phase: 'Active' });

    world.delete();
    await world.settle();
    expect(world.bucket()).to.equal(undefined);
    expect([...world.provider.buckets.keys()]).to.deep.equal([theirs.id]);
  });

  it("found in review: an adopt-id naming another cluster's bucket is blocked, never re-tagged, and deleting leaves it", async () => {
    const tags = { ...DEFAULT_TAGS, 'kubernetes-namespace': 'team-x', 'kubernetes-name': 'logs', 'kubernetes-cluster': 'cluster-2' };
    world.provider.seed({ id: 'bucket-7', tags });
    const before = snapshot(world);
    world.apply(bucket().adopting('bucket-7').build());
    const got = await world.settle();
    expect(got).to.deep.include({ type: 'requeueAfter', afterMs: 60_000 });
    expect(condition(world.bucket(), 'Ready')).to.include({ status: 'False', reason: 'BucketOwnedByOtherCluster' });
    expect(condition(world.bucket(), 'Ready')?.message).to.include('--cluster-id=cluster-2');
    expect(condition(world.bucket(), 'Stalled')).to.include({ status: 'True' });

    world.delete();
    await world.settle();
    expect(world.bucket()).to.equal(undefined);
    expect(snapshot(world)).to.deep.equal(before);
  });

  it('found in review: an earlier object of the same name, observed, switched to Full without its adopt-id and deleted at once, keeps the bucket', async () => {
    // The first b1 made the bucket, then was deleted with deletionPolicy Orphan.
    world.apply(bucket().withSpec({ deletionPolicy: 'Orphan' }).build());
    await world.settle();
    const id = world.bucket()?.status?.id ?? '';
    world.delete();
    await world.settle();
    expect(world.bucket()).to.equal(undefined);

    // A new b1 (another uid) observes it.
    const second = bucket().withSpec({ managementPolicy: 'Observe' }).adopting(id).build();
    world.apply({ ...second, metadata: { ...second.metadata, uid: 'uid-b1-second' } });
    await world.settle();
    expect(world.bucket()?.status?.id).to.equal(id);

    // One edit drops the annotation and switches to Full, and the object is deleted before
    // the operator reconciles it: nothing proves the bucket is this object's.
    const observer = world.bucket();
    if (!observer) throw new Error('b1 is gone');
    const annotations = { ...observer.metadata.annotations };
    delete annotations[ADOPT_ANNOTATION];
    world.apply({
      ...observer,
      metadata: { ...observer.metadata, annotations, finalizers: [BUCKET_FINALIZER] },
      spec: { ...observer.spec, managementPolicy: 'Full' },
    });
    world.delete();
    await world.settle();
    expect(world.bucket()).to.equal(undefined);
    expect(world.provider.buckets.has(id), 'the provider bucket').to.equal(true);
  });

  it('a restored backup (new uid, the same key annotation, no status) keeps its bucket and its tags follow the new uid', async () => {
    const made = await world.provider.createBucket({ ...CREATE, tags: { ...DEFAULT_TAGS, 'kubernetes-uid': 'uid-before-restore' } }, KEY1);
    world.apply(bucket().prepared(KEY1).build());
    await world.settle();
    expect(world.bucket()?.status?.id).to.equal(made.id);
    expect(world.provider.buckets.size).to.equal(1);
    expect(world.provider.buckets.get(made.id)?.tags['kubernetes-uid']).to.equal('uid-b1');
    expect(condition(world.bucket(), 'Ready')).to.include({ status: 'True' });
  });

  it('a bucket tagged before the cluster tag existed gets it, and stays this object’s', async () => {
    const { 'kubernetes-cluster': _cluster, ...legacy } = DEFAULT_TAGS;
    const made = await world.provider.createBucket({ ...CREATE, tags: legacy }, KEY1);
    world.apply(bucket().prepared(KEY1).build());
    await world.settle();
    expect(world.provider.buckets.get(made.id)?.tags).to.deep.equal(DEFAULT_TAGS);
    world.delete();
    await world.settle();
    expect(world.provider.buckets.size).to.equal(0);
  });

  it('found by the model: a manifest copied with its key, whose bucket is gone, fences the key and makes a bucket of its own', async () => {
    world.apply(bucket('b3').build());
    await world.settle('b3');
    const original = world.bucket('b3');
    if (!original) throw new Error('b3 is gone');
    world.apply(bucket('b1').build());
    const copy = world.bucket('b1');
    if (!copy) throw new Error('b1 is gone');
    world.apply({ ...copy, metadata: { ...copy.metadata, annotations: { ...original.metadata.annotations } } });
    world.provider.buckets.delete(original.status?.id ?? '');

    const got = await world.settle('b1');
    expect(got).to.deep.equal({ type: 'done' });
    expect(condition(world.bucket('b1'), 'Ready')).to.include({ status: 'True' });
    const ofB1 = [...world.provider.buckets.values()].filter((b) => b.tags['kubernetes-name'] === 'b1');
    expect(ofB1.map((b) => b.id)).to.deep.equal([world.bucket('b1')?.status?.id]);
  });

  it('found by the model: a create whose answer was lost, then a Secret of another account, reports ProviderChanged and never creates twice', async () => {
    world.apply(bucket().build());
    world.provider.loseNextCreateAnswer = true;
    await world.reconcile().catch(() => undefined);
    expect(world.provider.buckets.size, 'the create committed').to.equal(1);
    world.provider.account = 'acct-2';
    await world.settle();
    expect(condition(world.bucket(), 'Ready')).to.include({ status: 'False', reason: 'ProviderChanged' });
    expect(condition(world.bucket(), 'Ready')?.message).to.include('account acct-1');
    expect(world.provider.buckets.size).to.equal(1);

    // Pointed back, the key finds the bucket its create made.
    world.provider.account = 'acct-1';
    await world.settle();
    expect(condition(world.bucket(), 'Ready')).to.include({ status: 'True' });
    expect(world.provider.buckets.size).to.equal(1);
  });

  it("found by the model: adopting a bucket whose tags were stripped, made by a live object's key, is blocked; its maker keeps it", async () => {
    world.apply(bucket('b1').build());
    await world.settle('b1');
    const id = world.bucket('b1')?.status?.id ?? '';
    const made = world.provider.buckets.get(id);
    if (!made) throw new Error('no bucket');
    world.provider.buckets.set(id, { ...made, tags: {} });

    world.apply(bucket('b3').adopting(id).build());
    await world.settle('b3');
    expect(condition(world.bucket('b3'), 'Ready')).to.include({ status: 'False', reason: 'BucketOwnedElsewhere' });
    expect(condition(world.bucket('b3'), 'Ready')?.message).to.include('ns1/b1');
    expect(world.provider.buckets.get(id)?.tags).to.deep.equal({});

    // The maker, told by the drift scan, puts its tags back.
    await world.reconcile('b1', { driftReports: { reported: () => true } });
    expect(world.provider.buckets.get(id)?.tags['kubernetes-name']).to.equal('b1');
  });

  it('found by the full suite: a Ready bucket needs no account lookup, so a provider that is down does not fail it', async () => {
    world.apply(bucket().build());
    await world.settle();
    world.provider.failNext.set('accountId', new ProviderError('provider account failed: ECONNREFUSED', { status: 0, code: 'ECONNREFUSED' }));
    expect(await world.reconcile()).to.deep.equal({ type: 'done' });
    expect(condition(world.bucket(), 'Ready')).to.include({ status: 'True' });
    expect(condition(world.bucket(), 'Synced')).to.include({ status: 'True' });
  });

  it('a vanished bucket is not recreated while the account cannot be told', async () => {
    world.apply(bucket().build());
    await world.settle();
    world.provider.buckets.clear();
    world.provider.failNext.set('accountId', new ProviderError('provider account failed: ECONNREFUSED', { status: 0, code: 'ECONNREFUSED' }));
    const got = await world.reconcile('b1', { driftReports: { reported: () => true } }).catch((e: Error) => e);
    expect(got).to.be.instanceOf(Error);
    expect(world.provider.buckets.size).to.equal(0);
    expect(condition(world.bucket(), 'Synced')).to.include({ status: 'False', reason: 'ProviderUnavailable' });
    // Once the account is known again (the same one), the vanished bucket is made anew.
    await world.reconcile('b1', { driftReports: { reported: () => true } });
    expect(world.provider.buckets.size).to.equal(1);
  });
});
