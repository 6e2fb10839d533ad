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
    const s = nextStatus(bucket().withStatus({ idempotencyKey: 'k' }).build(), readyFacts, t0);
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

  it('clears id and endpoint when a vanished bucket is to be recreated', () => {
    const prev = nextStatus(bucket().build(), readyFacts, t0);
    const s = nextStatus(bucket().withStatus(prev).build(), {
      phase: 'Pending', ready: { status: 'False', reason: Reason.Creating }, synced: { status: 'True', reason: Reason.ReconcileSuccess },
      idempotencyKey: 'k2', id: null,
    }, t1);
    expect(s.id).to.equal(undefined);
    expect(s.endpoint).to.equal(undefined);
    expect(s.idempotencyKey).to.equal('k2');
    const patch = mergePatchDiff(prev, s) as Record<string, unknown>;
    expect(patch['id']).to.equal(null);
    expect(patch['endpoint']).to.equal(null);
  });
});
