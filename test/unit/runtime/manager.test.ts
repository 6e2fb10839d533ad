import { FakeClock } from '../../support/fake-clock';
import { expect } from 'chai';
import { newControllerManagedBy } from '../../../operator/runtime/builder';

import { LeaderElectionLostError, Manager } from '../../../operator/runtime/manager';
import { done, type Action } from '../../../operator/runtime/reconcile';
import { FakeInformerSource, captureLogger, leaseStore, settle, testKind } from './fakes';
import { eventually, IN_PROCESS } from '../../support/eventually';

const Widget = testKind('Widget');

/** A manager with one controller whose reconciles block until the test lets them finish. */
function setup(lease = leaseStore()) {
  const clock = new FakeClock();
  const source = new FakeInformerSource();
  source.informer(Widget).objects.set('ns/a', { metadata: { namespace: 'ns', name: 'a' } });
  const { logger, lines } = captureLogger();
  const mgr = new Manager({
    client: lease,
    logger,
    informers: source,
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
    gracefulShutdownTimeoutMs: 60_000,
    clock,
  });
  const inFlight: Array<{ finish(): void; signal: AbortSignal }> = [];
  newControllerManagedBy(mgr, 'widgets')
    .for(Widget)
    .complete({
      reconcile: (_req, ctx) =>
        new Promise<Action>((resolve, reject) => {
          inFlight.push({ finish: () => resolve(done()), signal: ctx.signal });
          ctx.signal.addEventListener('abort', () => reject(new Error('aborted', { cause: ctx.signal.reason })));
        }),
    });
  const abort = new AbortController();
  const result = mgr.start(abort.signal).then(
    () => undefined,
    (err: unknown) => err,
  );
  return { mgr, lease, clock, source, inFlight, abort, result, lines };
}

describe('Manager (fake informers, in-memory Lease)', () => {
  it('starts controllers only while leading', async () => {
    const lease = leaseStore();
    lease.lease = { metadata: { name: 'lease', namespace: 'ns', resourceVersion: '1' }, spec: { holderIdentity: 'other', leaseDurationSeconds: 15 } };
    const h = setup(lease);
    await settle(10);
    expect(h.mgr.isLeader()).to.equal(false);
    expect(h.inFlight, 'no reconcile on a standby').to.have.length(0);
    h.abort.abort();
    expect(await h.result).to.equal(undefined);
  });

  it('on shutdown drains in-flight reconciles first, then releases the lease', async () => {
    const h = setup();
    await h.mgr.elected();
    await eventually(() => h.inFlight.length === 1, IN_PROCESS);
    h.abort.abort();
    await settle(10);
    expect(h.lease.lease?.spec?.holderIdentity, 'lease kept while draining').to.equal('me');
    expect(h.inFlight[0]?.signal.aborted).to.equal(false);
    h.inFlight[0]?.finish();
    expect(await h.result).to.equal(undefined);
    expect(h.lease.lease?.spec?.holderIdentity, 'released after the drain').to.equal('');
    expect(h.source.informer(Widget).started).to.equal(false);
  });

  it('aborts reconciles still running when the graceful timeout expires', async () => {
    const h = setup();
    await h.mgr.elected();
    await eventually(() => h.inFlight.length === 1, IN_PROCESS);
    h.abort.abort();
    await settle(10);
    h.clock.advance(60_000);
    expect(await h.result).to.equal(undefined);
    expect(h.inFlight[0]?.signal.aborted).to.equal(true);
    expect(h.lines.some((l) => /did not finish within the graceful shutdown timeout/.test(String(l.msg)))).to.equal(true);
  });

  it('on losing the lease stops reconciles at once and rejects with LeaderElectionLostError', async () => {
    const h = setup();
    await h.mgr.elected();
    await eventually(() => h.inFlight.length === 1, IN_PROCESS);
    const current = h.lease.lease;
    h.lease.lease = { ...current, metadata: { ...current?.metadata, resourceVersion: '999' }, spec: { ...current?.spec, holderIdentity: 'thief' } };
    for (let i = 0; i < 30 && h.mgr.isLeader(); i++) {
      h.clock.advance(100);
      await settle(3);
    }
    expect(await h.result).to.be.instanceOf(LeaderElectionLostError);
    expect(h.inFlight[0]?.signal.aborted, 'in-flight reconcile aborted').to.equal(true);
    expect(h.lease.lease?.spec?.holderIdentity, 'a lost lease is not touched').to.equal('thief');
  });

  it('rejects controllers completed after start or under a taken name', async () => {
    const h = setup();
    const build = (mgr: Manager, name: string) =>
      newControllerManagedBy(mgr, name)
        .for(Widget)
        .complete({ reconcile: async () => done() });
    expect(() => build(h.mgr, 'late')).to.throw(/started manager/);
    h.abort.abort();
    await h.result;
    const idle = new Manager({ logger: captureLogger().logger, informers: new FakeInformerSource() });
    const first = build(idle, 'widgets');
    expect(() => build(idle, 'widgets')).to.throw(/already registered/);
    // complete() already registered it: the old build-then-add pattern now fails loudly.
    expect(() => idle.add(first)).to.throw(/already registered/);
  });

  it('refuses leader election without a client for the Lease', () => {
    const leaderElection = { enabled: true, namespace: 'ns', name: 'lease' };
    expect(() => new Manager({ logger: captureLogger().logger, informers: new FakeInformerSource(), leaderElection })).to.throw(/needs a client/);
  });
});

describe('newControllerManagedBy', () => {
  it('registers the completed controller, so it reconciles when the manager starts with no separate add', async () => {
    const source = new FakeInformerSource();
    source.informer(Widget).objects.set('ns/a', { metadata: { namespace: 'ns', name: 'a' } });
    const mgr = new Manager({ logger: captureLogger().logger, informers: source, metricsBindAddress: '0', healthProbeBindAddress: '0' });
    const seen: string[] = [];
    const controller = newControllerManagedBy(mgr, 'widgets')
      .for(Widget)
      .complete({ reconcile: async (req) => (seen.push(`${req.namespace}/${req.name}`), done()) });
    const abort = new AbortController();
    const running = mgr.start(abort.signal);
    try {
      await mgr.elected();
      await eventually(() => seen.length === 1, { ...IN_PROCESS, description: 'the cached Widget reconciled' });
      expect(seen).to.deep.equal(['ns/a']);
      expect(source.informer(Widget).started, "the manager started the controller's informer").to.equal(true);
      expect(controller.queue.isShuttingDown()).to.equal(false);
    } finally {
      abort.abort();
      await running;
    }
  });
});
