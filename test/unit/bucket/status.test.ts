import { expect } from 'chai';
import { nextStatus, statusEqual } from '../../../operator/bucket/status';
import { mergePatchDiff } from '../../../operator/runtime/status';
import { Reason } from '../../../operator/bucket/reasons';
import { bucket, providerBucket, KEY1 } from '../../support/fixtures';

const t0 = new Date('2026-01-01T00:00:00Z');
const t1 = new Date('2026-01-01T00:05:00Z');
const readyFacts = {
  observation: { exists: true as const, bucket: providerBucket() },
  phase: 'Active' as const,
  ready: { status: 'True' as const, reason: Reason.Available },
  synced: { status: 'True' as const, reason: Reason.ReconcileSuccess },
};

describe('nextStatus', () => {
  it('records id, endpoint and size from the provider with Ready True', () => {
    const s = nextStatus(bucket().build(), { ...readyFacts, observation: { exists: true, bucket: providerBucket({ idempotencyKey: KEY1 }) } }, t0);
    expect(s).to.deep.include({
      id: 'bucket-000001',
      endpoint: 'bucket-000001.us-east-1.storage.example',
      sizeGB: 10,
      phase: 'Active',
      idempotencyKey: KEY1,
      observedGeneration: 1,
    });
    expect(s.conditions?.find((c) => c.type === 'Ready')).to.include({
      status: 'True',
      reason: 'Available',
      lastTransitionTime: '2026-01-01T00:00:00Z',
    });
  });

  it('is unchanged when the world is unchanged, so nothing is written', () => {
    const first = nextStatus(bucket().build(), readyFacts, t0);
    const second = nextStatus(bucket().withStatus(first).build(), readyFacts, t1);
    expect(statusEqual(first, second)).to.equal(true);
  });

  it('moves lastTransitionTime only when a condition status flips', () => {
    const first = nextStatus(bucket().build(), readyFacts, t0);
    const flipped = nextStatus(bucket().withStatus(first).build(), { ...readyFacts, ready: { status: 'False', reason: Reason.Resizing } }, t1);
    expect(flipped.conditions?.find((c) => c.type === 'Ready')?.lastTransitionTime).to.equal('2026-01-01T00:05:00Z');
    expect(flipped.conditions?.find((c) => c.type === 'Synced')?.lastTransitionTime).to.equal('2026-01-01T00:00:00Z');
  });

  it('replaces id, endpoint and key with those of a recreated bucket', () => {
    const prev = nextStatus(bucket().build(), { ...readyFacts, observation: { exists: true, bucket: providerBucket({ idempotencyKey: KEY1 }) } }, t0);
    const recreated = providerBucket({ id: 'bucket-000002', endpoint: 'bucket-000002.us-east-1.storage.example', idempotencyKey: 'uid-b1.k2' });
    const s = nextStatus(
      bucket().withStatus(prev).build(),
      {
        observation: { exists: true, bucket: recreated },
        phase: 'Provisioning',
        ready: { status: 'False', reason: Reason.Provisioning },
        synced: { status: 'True', reason: Reason.ReconcileSuccess },
      },
      t1,
    );
    expect(s).to.deep.include({ id: 'bucket-000002', endpoint: 'bucket-000002.us-east-1.storage.example', idempotencyKey: 'uid-b1.k2' });
    expect(mergePatchDiff(prev, s)).to.deep.include({ id: 'bucket-000002', idempotencyKey: 'uid-b1.k2', phase: 'Provisioning' });
  });

  it('found in review (issue 31): never records a key not minted for this object, so an observed bucket is never "ours"', () => {
    // managementPolicy Observe of another object's bucket, whose key was copied into this one.
    const observed = bucket('s5', 'obs').withKey('uid-owner.k1').withSpec({ managementPolicy: 'Observe' }).build();
    const theirs = providerBucket({ idempotencyKey: 'uid-owner.k1' });
    const s = nextStatus(observed, { ...readyFacts, observation: { exists: true, bucket: theirs } }, t0);
    expect(s.id).to.equal('bucket-000001');
    expect(s).to.not.have.property('idempotencyKey');
    // A key recorded earlier is dropped once a bucket not made by this object is seen.
    const restored = bucket('s5', 'obs').withStatus({ id: 'bucket-000001', idempotencyKey: 'uid-owner.k1' }).build();
    expect(nextStatus(restored, { ...readyFacts, observation: { exists: true, bucket: theirs } }, t0)).to.not.have.property('idempotencyKey');
  });

  it('keeps the last known facts when the provider was not asked', () => {
    const prev = nextStatus(bucket().build(), readyFacts, t0);
    const s = nextStatus(
      bucket().withStatus(prev).build(),
      {
        phase: 'Active',
        ready: { status: 'True', reason: Reason.Available },
        synced: { status: 'False', reason: Reason.ProviderUnavailable },
      },
      t1,
    );
    expect(s).to.deep.include({ id: 'bucket-000001', endpoint: 'bucket-000001.us-east-1.storage.example', sizeGB: 10 });
  });
});

describe('nextStatus: kstatus conditions and the reconcile request', () => {
  const types = (s: ReturnType<typeof nextStatus>) => Object.fromEntries((s.conditions ?? []).map((c) => [c.type, `${c.status}/${c.reason}`]));
  const cases: Record<
    string,
    {
      args: { ready: { status: 'True' | 'False'; reason: Reason }; synced: { status: 'True' | 'False'; reason: Reason } };
      want: Record<string, string>;
    }
  > = {
    'Ready: neither Reconciling nor Stalled': {
      args: { ready: { status: 'True', reason: Reason.Available }, synced: { status: 'True', reason: Reason.ReconcileSuccess } },
      want: { Ready: 'True/Available', Synced: 'True/ReconcileSuccess' },
    },
    'provisioning: Reconciling with the Ready reason': {
      args: { ready: { status: 'False', reason: Reason.Provisioning }, synced: { status: 'True', reason: Reason.ReconcileSuccess } },
      want: { Ready: 'False/Provisioning', Synced: 'True/ReconcileSuccess', Reconciling: 'True/Provisioning' },
    },
    'invalid spec: Stalled, not Reconciling': {
      args: { ready: { status: 'False', reason: Reason.InvalidSpec }, synced: { status: 'False', reason: Reason.InvalidSpec } },
      want: { Ready: 'False/InvalidSpec', Synced: 'False/InvalidSpec', Stalled: 'True/InvalidSpec' },
    },
    'credentials rejected: Stalled': {
      args: { ready: { status: 'False', reason: Reason.CredentialsRejected }, synced: { status: 'False', reason: Reason.CredentialsRejected } },
      want: { Ready: 'False/CredentialsRejected', Synced: 'False/CredentialsRejected', Stalled: 'True/CredentialsRejected' },
    },
    'paused before ever Ready: neither': {
      args: { ready: { status: 'False', reason: Reason.ReconcilePaused }, synced: { status: 'False', reason: Reason.ReconcilePaused } },
      want: { Ready: 'False/ReconcilePaused', Synced: 'False/ReconcilePaused' },
    },
    'Ready but the provider is down: Ready kept, not Reconciling': {
      args: { ready: { status: 'True', reason: Reason.Available }, synced: { status: 'False', reason: Reason.ProviderUnavailable } },
      want: { Ready: 'True/Available', Synced: 'False/ProviderUnavailable' },
    },
  };
  for (const [name, { args, want }] of Object.entries(cases)) {
    it(name, () => {
      const s = nextStatus(bucket().build(), { phase: 'Pending', ...args }, t0);
      expect(types(s)).to.deep.equal(want);
    });
  }

  it('drops Stalled once the cause is gone, and keeps its transition time while it stays', () => {
    const stalled = nextStatus(
      bucket().build(),
      { phase: 'Failed', ready: { status: 'False', reason: Reason.InvalidSpec }, synced: { status: 'False', reason: Reason.InvalidSpec } },
      t0,
    );
    const still = nextStatus(
      bucket().withStatus(stalled).build(),
      { phase: 'Failed', ready: { status: 'False', reason: Reason.InvalidSpec }, synced: { status: 'False', reason: Reason.InvalidSpec } },
      t1,
    );
    expect(statusEqual(stalled, still)).to.equal(true);
    const fixed = nextStatus(bucket().withStatus(stalled).build(), readyFacts, t1);
    expect(fixed.conditions?.map((c) => c.type).sort()).to.deep.equal(['Ready', 'Synced']);
  });

  it('echoes the reconcile-requested-at annotation, and a new request is a change to write', () => {
    const first = nextStatus(
      bucket().withAnnotation('storage.avalonhosting.example/reconcile-requested-at', '2026-12-01T10:00:00Z').build(),
      readyFacts,
      t0,
    );
    expect(first.lastHandledReconcileAt).to.equal('2026-12-01T10:00:00Z');
    const again = nextStatus(
      bucket().withStatus(first).withAnnotation('storage.avalonhosting.example/reconcile-requested-at', '2026-12-01T10:05:00Z').build(),
      readyFacts,
      t1,
    );
    expect(again.lastHandledReconcileAt).to.equal('2026-12-01T10:05:00Z');
    expect(statusEqual(first, again)).to.equal(false);
  });

  it('mirrors region and encryption the provider reports', () => {
    const s = nextStatus(
      bucket().build(),
      { ...readyFacts, observation: { exists: true, bucket: providerBucket({ region: 'eu-west-1', encrypted: true }) } },
      t0,
    );
    expect(s).to.deep.include({ region: 'eu-west-1', encrypted: true });
  });
});
