import { FakeClock } from '../../support/fake-clock';
import { expect } from 'chai';

import { RequestThrottle, TokenBucket } from '../../../operator/runtime/client-throttle';

describe('TokenBucket (client-side QPS/burst)', () => {
  const cases: Record<string, { args: { qps: number; burst: number; at: number[] }; want: number[] }> = {
    'a burst goes at once, then one per 1/qps': { args: { qps: 10, burst: 3, at: [0, 0, 0, 0, 0] }, want: [0, 0, 0, 100, 200] },
    'tokens refill while quiet, up to burst': { args: { qps: 10, burst: 2, at: [0, 0, 1000, 1000, 1000] }, want: [0, 0, 0, 0, 100] },
    'waits are booked in arrival order': { args: { qps: 2, burst: 1, at: [0, 0, 0] }, want: [0, 500, 1000] },
    'a partly refilled token shortens the wait': { args: { qps: 10, burst: 1, at: [0, 50] }, want: [0, 50] },
  };
  for (const [name, { args, want }] of Object.entries(cases)) {
    it(name, () => {
      const b = new TokenBucket(args.qps, args.burst, 0);
      expect(args.at.map((t) => Math.round(b.reserve(t)))).to.deep.equal(want);
    });
  }

  it('a cancelled reservation gives its slot back', () => {
    const b = new TokenBucket(10, 1, 0);
    b.reserve(0);
    expect(b.reserve(0)).to.equal(100);
    b.cancel(0);
    expect(b.reserve(0)).to.equal(100);
  });
});

describe('RequestThrottle', () => {
  it('lets requests through only as the clock allows', async () => {
    const clock = new FakeClock();
    const t = new RequestThrottle({ qps: 10, burst: 1, clock });
    let done = 0;
    const all = [t.wait(), t.wait(), t.wait()].map((p) => p.then(() => done++));
    const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
    await settle();
    expect(done).to.equal(1);
    clock.advance(100);
    await settle();
    expect(done).to.equal(2);
    clock.advance(100);
    await Promise.all(all);
    expect(done).to.equal(3);
  });

  it('is off for qps <= 0 (controller-runtime default -1)', async () => {
    const t = new RequestThrottle({ qps: -1, clock: new FakeClock() });
    expect(t.enabled).to.equal(false);
    await Promise.all(Array.from({ length: 1000 }, () => t.wait()));
  });

  it('rejects with the signal reason when aborted while waiting', async () => {
    const clock = new FakeClock();
    const t = new RequestThrottle({ qps: 1, burst: 1, clock });
    await t.wait();
    const ctl = new AbortController();
    const waiting = t.wait(ctl.signal).catch((e: unknown) => e);
    ctl.abort(new Error('stop'));
    expect(((await waiting) as Error).message).to.equal('stop');
  });
});
