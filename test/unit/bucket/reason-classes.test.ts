import { expect } from 'chai';
import { BUCKET_REASON_CLASS, BUCKET_TERMINAL_REASONS } from '../../../operator/bucket/reason-classes';
import { Reason, TERMINAL_REASONS } from '../../../operator/bucket/reasons';

describe('reason classes', () => {
  it('classify every reason', () => {
    expect(Object.keys(BUCKET_REASON_CLASS).sort()).to.deep.equal(Object.values(Reason).sort());
  });

  // The kstatus Stalled condition, Argo CD's Degraded and Flux's failed must agree.
  it('name as terminal exactly the reasons that set Stalled', () => {
    expect([...BUCKET_TERMINAL_REASONS]).to.deep.equal([...TERMINAL_REASONS].sort());
  });
});
