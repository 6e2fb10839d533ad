import { FakeClock } from '../../support/fake-clock';
import { expect } from 'chai';
import { newControllerManagedBy } from '../../../operator/runtime/builder';

import { LeaderElectionLostError, Manager, type Runnable } from '../../../operator/runtime/manager';
import { done } from '../../../operator/runtime/reconcile';
import { FakeInformerSource, captureLogger, leaseStore, settle, testKind } from './fakes';

const Widget = testKind('Widget');

/** A runnable that records whether it runs and ends when its signal aborts. */
function probe(): Runnable & { running: boolean; started: number } {
  const r = {
    name: 'probe',
    running: false,
    started: 0,
    start: (signal: AbortSignal) =>
      new Promise<void>((resolve) => {
        r.running = true;
        r.started += 1;
        signal.addEventListener(
          'abort',
          () => {
            r.running = false;
            resolve();
          },
          { once: true },
        );
      }),
  };
  return r;
}

function manager(lease = leaseStore()) {
  const clock = new FakeClock();
  const mgr = new Manager({
    logger: captureLogger().logger,
    informers: new FakeInformerSource(),
    leaderElection: {
      enabled: true,
      namespace: 'ns',
      name: 'lease',
      identity: 'me',
      leaseDurationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 2_000,
    },
    metricsBindAddress: '0',
    healthProbeBindAddress: '0',
    client: lease,
    clock,
  });
  // A manager whose controllers all ended stops; one idle controller keeps it running.
  newControllerManagedBy(mgr, 'widgets')
    .for(Widget)
    .complete({ reconcile: async () => done() });
  return { clock, lease, mgr };
}

describe('Manager runnables (leader only)', () => {
  it('never starts one on a standby', async () => {
    const lease = leaseStore();
    lease.lease = { metadata: { name: 'lease', namespace: 'ns', resourceVersion: '1' }, spec: { holderIdentity: 'other', leaseDurationSeconds: 15 } };
    const { mgr } = manager(lease);
    const r = probe();
    mgr.addRunnable(r);
    const ac = new AbortController();
    const running = mgr.start(ac.signal);
    await settle(10);
    expect(r.started).to.equal(0);
    ac.abort();
    await running;
  });

  it('starts one with the controllers and stops it on shutdown', async () => {
    const { mgr } = manager();
    const r = probe();
    mgr.addRunnable(r);
    const ac = new AbortController();
    const running = mgr.start(ac.signal);
    await mgr.elected();
    await settle(3);
    expect(r.running).to.equal(true);
    ac.abort();
    await running;
    expect(r.running).to.equal(false);
    expect(() => mgr.addRunnable(probe())).to.throw(/started manager/);
  });

  it('stops one at once when leadership is lost', async () => {
    const { mgr, lease, clock } = manager();
    const r = probe();
    mgr.addRunnable(r);
    const result = mgr.start(new AbortController().signal).then(
      () => undefined,
      (err: unknown) => err,
    );
    await mgr.elected();
    const current = lease.lease;
    lease.lease = { ...current, metadata: { ...current?.metadata, resourceVersion: '999' }, spec: { ...current?.spec, holderIdentity: 'thief' } };
    for (let i = 0; i < 30 && mgr.isLeader(); i++) {
      clock.advance(100);
      await settle(3);
    }
    expect(await result).to.be.instanceOf(LeaderElectionLostError);
    expect(r.running).to.equal(false);
  });
});
