import { expect } from 'chai';
import { nextStatus, statusEqual } from '../../../operator/bucket/status';
import { mergePatchDiff } from '../../../operator/runtime/status';
import { Reason } from '../../../operator/bucket/reasons';
import { bucket, providerBucket } from '../../support/fixtures';

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
    const s = nextStatus(bucket().build(), { ...readyFacts, observation: { exists: true, bucket: providerBucket({ idempotencyKey: 'k' }) } }, t0);
    expect(s).to.deep.include({ id: 'bucket-000001', endpoint: 'bucket-000001.us-east-1.storage.example', sizeGB: 10, phase: 'Active', idempotencyKey: 'k', observedGeneration: 1 });
    expect(s.conditions?.find((c) => c.type === 'Ready')).to.include({ status: 'True', reason: 'Available', lastTransitionTime: '2026-01-01T00:00:00Z' });
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
    const prev = nextStatus(bucket().build(), { ...readyFacts, observation: { exists: true, bucket: providerBucket({ idempotencyKey: 'k1' }) } }, t0);
    const recreated = providerBucket({ id: 'bucket-000002', endpoint: 'bucket-000002.us-east-1.storage.example', idempotencyKey: 'k2' });
    const s = nextStatus(bucket().withStatus(prev).build(), {
      observation: { exists: true, bucket: recreated },
      phase: 'Provisioning', ready: { status: 'False', reason: Reason.Provisioning }, synced: { status: 'True', reason: Reason.ReconcileSuccess },
    }, t1);
    expect(s).to.deep.include({ id: 'bucket-000002', endpoint: 'bucket-000002.us-east-1.storage.example', idempotencyKey: 'k2' });
    expect(mergePatchDiff(prev, s)).to.deep.include({ id: 'bucket-000002', idempotencyKey: 'k2', phase: 'Provisioning' });
  });

  it('keeps the last known facts when the provider was not asked', () => {
    const prev = nextStatus(bucket().build(), readyFacts, t0);
    const s = nextStatus(bucket().withStatus(prev).build(), {
      phase: 'Active', ready: { status: 'True', reason: Reason.Available }, synced: { status: 'False', reason: Reason.ProviderUnavailable },
    }, t1);
    expect(s).to.deep.include({ id: 'bucket-000001', endpoint: 'bucket-000001.us-east-1.storage.example', sizeGB: 10 });
  });
});
