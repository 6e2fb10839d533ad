import { expect } from 'chai';
import type { StorageBucket } from '../../../operator/api/v1';
import { ADOPT_ANNOTATION, IDEMPOTENCY_KEY_ANNOTATION } from '../../../operator/api/v1';
import { ConnectError } from '../../../operator/bucket/connect';
import { keyMintedFor } from '../../../operator/bucket/ownership';
import { randomNonce } from '../../../operator/bucket/reconciler';
import { ProviderError } from '../../../operator/provider-client';
import { ApiError, isTerminalError, type Action, type KubeObject } from '../../../operator/runtime';
import { accessSecretName } from '../../../operator/bucket/names';
import { BucketWorld } from '../../support/bucket-world';
import { DEFAULT_TAGS, bucket, readyStatus, KEY1 } from '../../support/fixtures';

const condition = (b: StorageBucket | undefined, type: string) =>
  (b?.status?.conditions as { type: string; status: string; reason: string; message?: string }[] | undefined)?.find((c) => c.type === type);

async function outcome(p: Promise<Action>): Promise<Action | Error> {
  try {
    return await p;
  } catch (err) {
    return err as Error;
  }
}

describe('BucketReconciler (orchestrator, with plain fakes)', () => {
  let world: BucketWorld;
  beforeEach(() => {
    world = new BucketWorld();
  });

  describe('creation', () => {
    it('a new bucket gets finalizer and key in one write, one create, then Ready after provisioning', async () => {
      world.apply(bucket().build());
      const first = await world.reconcile();
      expect(first).to.deep.include({ type: 'requeueAfter', afterMs: 3000 });
      const b = world.bucket();
      expect(world.hasFinalizer()).to.equal(true);
      expect(b?.metadata.annotations?.[IDEMPOTENCY_KEY_ANNOTATION]).to.equal('uid-b1.key-1');
      expect([...world.provider.buckets.values()].map((x) => x.idempotencyKey)).to.deep.equal(['uid-b1.key-1']);
      expect(condition(b, 'Ready')).to.include({ status: 'False', reason: 'Provisioning' });

      expect(await world.settle()).to.deep.equal({ type: 'done' });
      const ready = world.bucket();
      expect(condition(ready, 'Ready')).to.include({ status: 'True', reason: 'Available' });
      expect(ready?.status?.id).to.equal('bucket-000001');
      expect(world.store.all('Secret')).to.have.length(1);
      expect(world.store.all('Service')).to.have.length(1);
      expect(world.provider.buckets.size).to.equal(1);
      // Ready is the condition's news, not an Event's: CreatedBucket is the one Event of a create.
      expect(world.events.recorded).to.deep.equal(['Normal CreatedBucket: created provider bucket bucket-000001']);
    });

    it('mints keys as <uid>.<16 hex characters> by default, recorded in status once Ready', async () => {
      world.apply(bucket().build());
      await world.reconcile('b1', { newKey: undefined });
      const key = world.bucket()?.metadata.annotations?.[IDEMPOTENCY_KEY_ANNOTATION] ?? '';
      expect(key).to.match(/^uid-b1\.[0-9a-f]{16}$/);
      expect(keyMintedFor(world.bucket() as StorageBucket, key)).to.equal(true);
      expect([...world.provider.buckets.values()].map((x) => x.idempotencyKey)).to.deep.equal([key]);
      await world.settle();
      expect(world.bucket()?.status?.idempotencyKey).to.equal(key);
      expect(randomNonce()).to.not.equal(randomNonce());
    });

    it('a Ready bucket whose status is trusted costs no provider call', async () => {
      world.apply(bucket().build());
      await world.settle();
      const calls = world.provider.calls;
      expect(await world.reconcile()).to.deep.equal({ type: 'done' });
      expect(world.provider.calls).to.equal(calls);
    });

    it('a create refused with 410 (key spent) rotates the key and creates nothing', async () => {
      world.apply(bucket().prepared(KEY1).build());
      world.provider.failNext.set(
        'createBucket',
        new ProviderError('bucket created with this key was deleted', { status: 410, code: 'BucketDeleted' }),
      );
      expect(await world.reconcile()).to.deep.equal({ type: 'done' });
      expect(world.bucket()?.metadata.annotations?.[IDEMPOTENCY_KEY_ANNOTATION]).to.equal('uid-b1.key-1');
      expect(world.provider.buckets.size).to.equal(0);
      expect(world.events.recorded.join()).to.contain('BucketMissing');
    });

    it('a foreign Secret of the owned name is left untouched and reported; the Service is still made', async () => {
      world.store.put('Secret', {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: accessSecretName('b1'), namespace: 'ns1', labels: { app: 'theirs' } },
        data: { k: 'dGhlaXJz' },
      } as KubeObject);
      world.apply(bucket().build());
      await world.settle();
      const secret = world.store.read<KubeObject & { data?: Record<string, string> }>('Secret', accessSecretName('b1'));
      expect(secret?.data).to.deep.equal({ k: 'dGhlaXJz' });
      expect(world.store.all('Service')).to.have.length(1);
      expect(world.events.recorded.join()).to.contain(
        `Warning OwnedObjectConflict: Secret ${accessSecretName('b1')} exists and is not controlled by this StorageBucket`,
      );
    });
  });

  describe('status and owned objects, written at once', () => {
    /** Creates b1 and lets the provider finish it, so the next reconcile writes Ready and the owned objects. */
    async function created(): Promise<void> {
      world.apply(bucket().build());
      await world.reconcile();
      for (const [id, b] of world.provider.buckets) world.provider.buckets.set(id, { ...b, phase: 'Active' });
    }

    it('a failed Secret create still leaves the Service made and Ready written; the next pass makes the Secret', async () => {
      await created();
      world.store.failNextCreate.set('Secret', new ApiError(500, 'InternalError', 'etcd leader changed'));
      expect(await outcome(world.reconcile())).to.be.instanceOf(Error);
      expect(world.store.all('Service')).to.have.length(1);
      expect(world.store.all('Secret')).to.have.length(0);
      expect(condition(world.bucket(), 'Ready')).to.include({ status: 'True' });
      await world.settle();
      expect(world.store.all('Secret')).to.have.length(1);
    });

    it('a failed status write still leaves the Secret and Service made', async () => {
      await created();
      world.store.failNextStatusPatch = new ApiError(500, 'InternalError', 'etcd leader changed');
      expect(await outcome(world.reconcile())).to.be.instanceOf(Error);
      expect(world.store.all('Secret')).to.have.length(1);
      expect(world.store.all('Service')).to.have.length(1);
      await world.settle();
      expect(condition(world.bucket(), 'Ready')).to.include({ status: 'True' });
    });
  });

  describe('failures, as classifyFailure decides', () => {
    const cases: Record<
      string,
      {
        args: { err: ProviderError };
        want: { outcome: 'backoff' | 'terminal' | { requeueAfter: number }; reason: string; readyStatus: string; event?: string };
      }
    > = {
      'provider unavailable: backoff, Synced False, Ready False with a reason on a new bucket': {
        args: { err: new ProviderError('provider unavailable', { status: 503, code: 'Unavailable' }) },
        want: { outcome: 'backoff', reason: 'ProviderUnavailable', readyStatus: 'False' },
      },
      'throttled with a Retry-After: requeue after it': {
        args: { err: new ProviderError('slow down', { status: 429, code: 'Throttled', retryAfterMs: 2000 }) },
        want: { outcome: { requeueAfter: 2000 }, reason: 'Throttled', readyStatus: 'False' },
      },
      'credentials rejected: slow retry and a Warning': {
        args: { err: new ProviderError('invalid API key', { status: 401, code: 'Unauthorized' }) },
        want: {
          outcome: { requeueAfter: 300_000 },
          reason: 'CredentialsRejected',
          readyStatus: 'False',
          event: 'Warning CredentialsRejected: invalid API key',
        },
      },
      'rejected by the provider: terminal, Failed': {
        args: { err: new ProviderError('region not offered', { status: 422, code: 'ValidationFailed' }) },
        want: { outcome: 'terminal', reason: 'InvalidSpec', readyStatus: 'False', event: 'Warning InvalidSpec: region not offered' },
      },
    };
    for (const [name, { args, want }] of Object.entries(cases)) {
      it(name, async () => {
        world.apply(bucket().prepared(KEY1).build());
        world.provider.failNext.set('createBucket', args.err);
        const got = await outcome(world.reconcile());
        if (want.outcome === 'backoff')
          expect(got)
            .to.be.instanceOf(Error)
            .and.satisfy((e: Error) => !isTerminalError(e));
        else if (want.outcome === 'terminal') expect(isTerminalError(got)).to.equal(true);
        else expect(got).to.deep.include({ type: 'requeueAfter', afterMs: want.outcome.requeueAfter });
        const b = world.bucket();
        expect(condition(b, 'Synced')).to.include({ status: 'False', reason: want.reason });
        expect(condition(b, 'Ready')).to.include({ status: want.readyStatus });
        if (want.event) expect(world.events.recorded).to.include(want.event);
        expect(world.provider.buckets.size).to.equal(0);
      });
    }

    it('a transient failure keeps a Ready bucket Ready', async () => {
      world.apply(bucket().prepared(KEY1).withStatus(readyStatus('http://provider.example')).withSpec({ sizeGB: 20 }).withGeneration(2).build());
      world.provider.seed({ id: 'bucket-000001', tags: { ...DEFAULT_TAGS }, idempotencyKey: KEY1 });
      world.provider.failNext.set('updateBucket', new ProviderError('provider unavailable', { status: 503, code: 'Unavailable' }));
      expect(await outcome(world.reconcile())).to.be.instanceOf(Error);
      expect(condition(world.bucket(), 'Ready')).to.include({ status: 'True', reason: 'Available' });
      expect(world.bucket()?.status?.observedGeneration).to.equal(1);
    });

    it('a failure reported from a stale snapshot never overwrites a fresher Ready', async () => {
      world.apply(bucket().prepared(KEY1).build());
      const stale = world.bucket();
      await world.settle();
      expect(condition(world.bucket(), 'Ready')?.status).to.equal('True');
      world.staleBucket = stale;
      world.provider.failNext.set('findByIdempotencyKey', new ProviderError('provider unavailable', { status: 503, code: 'Unavailable' }));
      const got = await outcome(world.reconcile());
      expect(got).to.be.instanceOf(ApiError).and.have.property('status', 409);
      expect(condition(world.bucket(), 'Ready')).to.include({ status: 'True', reason: 'Available' });
    });

    it('a status write that fails while reporting (missing RBAC) is surfaced, and the original error still reaches the runner', async () => {
      world.apply(bucket().prepared(KEY1).build());
      world.provider.failNext.set('findByIdempotencyKey', new ProviderError('provider unavailable', { status: 503, code: 'Unavailable' }));
      world.store.failNextStatusPatch = new ApiError(403, 'Forbidden', 'storagebuckets.storage.avalonhosting.example "b1" is forbidden');
      const got = await outcome(world.reconcile());
      expect(got).to.be.instanceOf(Error).and.have.property('message').that.contains('cannot reconcile bucket ns1/b1');
      expect(world.writeFailures.reported).to.deep.equal([
        'storagebuckets/status patch: storagebuckets.storage.avalonhosting.example "b1" is forbidden',
      ]);
    });
  });

  describe('found in review', () => {
    it('a new bucket whose first create is rejected (422) is reported and terminal on that same pass', async () => {
      world.apply(bucket().build());
      world.provider.failNext.set('createBucket', new ProviderError('region not offered', { status: 422, code: 'ValidationFailed' }));
      expect(isTerminalError(await outcome(world.reconcile()))).to.equal(true);
      expect(condition(world.bucket(), 'Synced')).to.include({ status: 'False', reason: 'InvalidSpec' });
    });

    it('a new bucket whose first create gets 401 has CredentialsRejected and the slow retry on that same pass', async () => {
      world.apply(bucket().build());
      world.provider.failNext.set('createBucket', new ProviderError('invalid API key', { status: 401, code: 'Unauthorized' }));
      expect(await outcome(world.reconcile())).to.deep.include({ type: 'requeueAfter', afterMs: 300_000 });
      expect(world.events.recorded).to.include('Warning CredentialsRejected: invalid API key');
    });

    it('a bucket orphaned by a deleted StorageBucket can be adopted under another name', async () => {
      world.apply(bucket('a').withSpec({ deletionPolicy: 'Orphan' }).build());
      await world.settle('a');
      const id = world.bucket('a')?.status?.id ?? '';
      world.delete('a');
      await world.reconcile('a');
      expect(world.bucket('a')).to.equal(undefined);
      world.apply(bucket('b').adopting(id).build());
      await world.settle('b');
      expect(condition(world.bucket('b'), 'Ready')?.status).to.equal('True');
      expect(world.provider.buckets.get(id)?.tags['kubernetes-name']).to.equal('b');
    });

    it('a second adopter blocked by a live owner is looked at again every drift interval (the owner may go)', async () => {
      world.provider.seed({ id: 'bucket-7' });
      world.apply(bucket('first').adopting('bucket-7').build());
      await world.settle('first');
      world.apply(bucket('second').adopting('bucket-7').build());
      await world.reconcile('second');
      expect(await world.reconcile('second')).to.deep.include({ type: 'requeueAfter', afterMs: 60_000 });
      expect(condition(world.bucket('second'), 'Ready')?.reason).to.equal('BucketOwnedElsewhere');
    });

    it("after the config moved, a stranger's bucket with the same id is neither deleted nor taken over", async () => {
      world.apply(bucket().prepared(KEY1).withStatus(readyStatus('http://old-provider.example')).build());
      world.provider.seed({ id: 'bucket-000001', tags: { team: 'someone-else' } });
      expect(isTerminalError(await outcome(world.reconcile()))).to.equal(true);
      expect(condition(world.bucket(), 'Ready')?.reason).to.equal('ProviderChanged');
      expect(world.provider.buckets.get('bucket-000001')?.tags).to.deep.equal({ team: 'someone-else' });
      world.delete();
      await outcome(world.reconcile());
      expect(world.provider.buckets.has('bucket-000001'), "the stranger's bucket").to.equal(true);
      expect(world.hasFinalizer()).to.equal(true);
    });

    it('a Ready bucket stays Ready while its config is being deleted; a new one is not created through it', async () => {
      world.apply(bucket().build());
      await world.settle();
      world.configDeleting = true;
      expect(await world.reconcile()).to.deep.equal({ type: 'done' });
      expect(condition(world.bucket(), 'Ready')).to.include({ status: 'True', reason: 'Available' });

      world.apply(bucket('newcomer').build());
      expect(await world.reconcile('newcomer')).to.deep.equal({ type: 'done' });
      expect(condition(world.bucket('newcomer'), 'Ready')).to.include({ status: 'False', reason: 'ProviderConfigDeleting' });
      expect(world.hasFinalizer('newcomer')).to.equal(false);
      expect(world.provider.buckets.size).to.equal(1);
    });

    it('a 410 with another code is not a spent key: no key rotation loop', async () => {
      world.apply(bucket().prepared(KEY1).build());
      world.provider.failNext.set('createBucket', new ProviderError('gone for another reason', { status: 410, code: 'Gone' }));
      expect(isTerminalError(await outcome(world.reconcile()))).to.equal(true);
      expect(world.bucket()?.metadata.annotations?.[IDEMPOTENCY_KEY_ANNOTATION]).to.equal(KEY1);
    });
  });

  describe('without a connection', () => {
    it('waits for its config with the reason, and a Warning once', async () => {
      world.apply(bucket().prepared(KEY1).build());
      world.connectFailure = new ConnectError('ProviderConfigNotFound', 'BucketProviderConfig ns1/default not found');
      expect(await world.reconcile()).to.deep.equal({ type: 'done' });
      expect(await world.reconcile()).to.deep.equal({ type: 'done' });
      expect(condition(world.bucket(), 'Ready')).to.include({
        status: 'False',
        reason: 'ProviderConfigNotFound',
        message: 'BucketProviderConfig ns1/default not found',
      });
      expect(world.events.recorded).to.deep.equal(['Warning ProviderConfigNotFound: BucketProviderConfig ns1/default not found']);
    });

    it('a deletion that never sent anything finishes without a config', async () => {
      world.apply(bucket().withFinalizer().build());
      world.delete();
      world.connectFailure = new ConnectError('ProviderConfigNotFound', 'gone');
      expect(await world.reconcile()).to.deep.equal({ type: 'done' });
      expect(world.bucket()).to.equal(undefined);
    });
  });

  describe('pause, Orphan and deletion', () => {
    it('paused: status says so, and the provider is not called', async () => {
      world.apply(bucket().prepared(KEY1).paused().build());
      expect(await world.reconcile()).to.deep.equal({ type: 'done' });
      expect(condition(world.bucket(), 'Synced')).to.include({ status: 'False', reason: 'ReconcilePaused' });
      expect(world.provider.calls).to.equal(0);
    });

    it('Orphan: the finalizer goes, the provider bucket stays, nothing is called', async () => {
      world.apply(bucket().withSpec({ deletionPolicy: 'Orphan' }).build());
      await world.settle();
      const calls = world.provider.calls;
      world.delete();
      expect(await world.reconcile()).to.deep.equal({ type: 'done' });
      expect(world.bucket()).to.equal(undefined);
      expect(world.provider.buckets.size).to.equal(1);
      expect(world.provider.calls).to.equal(calls);
    });

    it('Delete: the provider bucket goes with the object', async () => {
      world.apply(bucket().build());
      await world.settle();
      world.delete();
      expect(await world.reconcile()).to.deep.equal({ type: 'done' });
      expect(world.bucket()).to.equal(undefined);
      expect(world.provider.buckets.size).to.equal(0);
    });

    it('found in review: a reconcile from a cache that still shows a released object calls the provider no more', async () => {
      world.apply(bucket().build());
      await world.settle();
      world.delete();
      const lagging = world.bucket();
      expect(await world.reconcile()).to.deep.equal({ type: 'done' });
      const calls = world.provider.calls;
      // The key was re-added while it was processed; the cache has not seen the object go.
      world.staleBucket = lagging;
      expect(await world.reconcile()).to.deep.equal({ type: 'done' });
      expect(world.provider.calls, 'provider calls after the release').to.equal(calls);
    });

    it('deleting with only a key (the create answer was lost): the key is revoked before the finalizer goes', async () => {
      world.apply(bucket().prepared(KEY1).build());
      world.delete();
      expect(await world.reconcile()).to.deep.equal({ type: 'done' });
      expect(world.bucket()).to.equal(undefined);
      expect([...world.provider.revoked]).to.deep.equal([`acct-1/${KEY1}`]);
      // A create with that key arriving late can no longer commit.
      const late = await world.provider
        .createBucket({ region: 'us-east-1', sizeGB: 10, encrypted: false, tags: {} }, KEY1)
        .catch((e: ProviderError) => e.status);
      expect(late).to.equal(410);
    });

    it('deleting with only a key whose create did commit: that bucket is deleted', async () => {
      world.apply(bucket().prepared(KEY1).build());
      await world.provider.createBucket({ region: 'us-east-1', sizeGB: 10, encrypted: false, tags: { ...DEFAULT_TAGS } }, KEY1);
      world.delete();
      expect(await world.reconcile()).to.deep.equal({ type: 'done' });
      expect(world.bucket()).to.equal(undefined);
      expect(world.provider.buckets.size).to.equal(0);
    });

    it('gone by id after a key rotation: the bucket of the current key is found and deleted too', async () => {
      world.apply(
        bucket()
          .prepared('k2')
          .withStatus(readyStatus('http://provider.example', { idempotencyKey: KEY1 }))
          .build(),
      );
      await world.provider.createBucket({ region: 'us-east-1', sizeGB: 10, encrypted: false, tags: { ...DEFAULT_TAGS } }, 'k2');
      world.delete();
      expect(await world.reconcile()).to.deep.equal({ type: 'done' });
      expect(world.bucket()).to.equal(undefined);
      expect(world.provider.buckets.size).to.equal(0);
    });
  });

  describe('adoption', () => {
    it('adopts an untagged bucket: our tags are recorded at the provider, its own kept', async () => {
      world.provider.seed({ id: 'bucket-7', tags: { team: 'a' } });
      world.apply(bucket().adopting('bucket-7').build());
      await world.settle();
      expect(world.provider.buckets.get('bucket-7')?.tags).to.deep.equal({ team: 'a', ...DEFAULT_TAGS });
      expect(world.bucket()?.status?.id).to.equal('bucket-7');
      expect(condition(world.bucket(), 'Ready')?.status).to.equal('True');
      expect(world.events.recorded).to.include('Normal AdoptedBucket: adopted provider bucket bucket-7');
    });

    it("a second adopter is blocked, and deleting it leaves the first one's bucket alone", async () => {
      world.provider.seed({ id: 'bucket-7' });
      world.apply(bucket('first').adopting('bucket-7').build());
      await world.settle('first');
      world.apply(bucket('second').adopting('bucket-7').build());
      const got = await world.settle('second');
      // Blocked while the owner lives, and looked at again every drift interval.
      expect(got).to.deep.include({ type: 'requeueAfter', afterMs: 60_000 });
      const second = world.bucket('second');
      expect(condition(second, 'Ready')).to.include({ status: 'False', reason: 'BucketOwnedElsewhere' });
      expect(condition(second, 'Stalled')).to.include({ status: 'True' });
      expect(world.provider.buckets.get('bucket-7')?.tags['kubernetes-name']).to.equal('first');

      world.delete('second');
      expect(await world.reconcile('second')).to.deep.equal({ type: 'done' });
      expect(world.bucket('second')).to.equal(undefined);
      expect(world.provider.buckets.has('bucket-7')).to.equal(true);

      world.delete('first');
      expect(await world.reconcile('first')).to.deep.equal({ type: 'done' });
      expect(world.provider.buckets.has('bucket-7')).to.equal(false);
    });

    it("found in review: an observer switched to Full after dropping its adopt-id, then deleted, leaves the owner's bucket alone", async () => {
      world.apply(bucket('owner').build());
      await world.settle('owner');
      const id = world.bucket('owner')?.status?.id ?? '';
      expect(world.provider.buckets.has(id)).to.equal(true);
      world.apply(bucket('obs').withSpec({ managementPolicy: 'Observe' }).adopting(id).build());
      await world.settle('obs');
      expect(world.bucket('obs')?.status?.id).to.equal(id);

      // The user removes the annotation and switches the policy to Full, keeping the status.
      const observer = world.bucket('obs');
      if (!observer) throw new Error('obs is gone');
      const annotations = { ...observer.metadata.annotations };
      delete annotations[ADOPT_ANNOTATION];
      world.apply({ ...observer, metadata: { ...observer.metadata, annotations }, spec: { ...observer.spec, managementPolicy: 'Full' } });
      await world.settle('obs');
      world.delete('obs');
      await world.settle('obs');

      expect(world.bucket('obs')).to.equal(undefined);
      expect(world.provider.buckets.has(id), "the owner's provider bucket").to.equal(true);
      expect(world.provider.buckets.get(id)?.tags['kubernetes-name']).to.equal('owner');
    });

    it('an adopt target that does not exist: blocked with the reason', async () => {
      world.apply(bucket().adopting('bucket-9').build());
      const got = await world.settle();
      expect(isTerminalError(got)).to.equal(true);
      expect(condition(world.bucket(), 'Ready')).to.include({ status: 'False', reason: 'AdoptTargetNotFound' });
      expect(world.provider.buckets.size).to.equal(0);
    });
  });
});
