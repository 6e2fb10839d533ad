import { FakeClock } from '../../support/fake-clock';
import { expect } from 'chai';
import { sleep } from '../../../operator/runtime/clock';
import { ApiError } from '../../../operator/runtime/api-errors';
import { LeaderElector, type Lease, type LeaseClient } from '../../../operator/runtime/leader-election';
import { captureLogger, leaseStore, settle } from './fakes';

const config = { namespace: 'ns', name: 'lease', leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 };

function elector(client: LeaseClient, clock: FakeClock, identity: string) {
  const events: string[] = [];
  const gauge: boolean[] = [];
  const e = new LeaderElector({
    client,
    clock,
    config: { ...config, identity },
    logger: captureLogger().logger,
    metrics: { setLeader: (_n, v) => gauge.push(v) },
    callbacks: {
      onStartedLeading: () => events.push('started'),
      onStoppedLeading: () => events.push('stopped'),
    },
  });
  return { e, events, gauge };
}

/** Advances fake time in small steps, letting the election's promises run in between. */
async function pass(clock: FakeClock, ms: number, step = 100): Promise<void> {
  for (let t = 0; t < ms; t += step) {
    clock.advance(Math.min(step, ms - t));
    await settle(3);
  }
}

describe('LeaderElector (in-memory Lease)', () => {
  it('creates a missing lease and leads', async () => {
    const api = leaseStore();
    const clock = new FakeClock();
    const { e, events, gauge } = elector(api, clock, 'a');
    const ac = new AbortController();
    const run = e.run(ac.signal);
    await settle();
    expect(e.isLeader()).to.equal(true);
    expect(events).to.deep.equal(['started']);
    expect(gauge).to.deep.equal([false, true]);
    expect(api.lease?.spec).to.include({ holderIdentity: 'a', leaseDurationSeconds: 15, leaseTransitions: 0 });
    ac.abort();
    expect(await run).to.equal('stopped');
  });

  it('renews every retry period, keeping acquireTime', async () => {
    const api = leaseStore();
    const clock = new FakeClock();
    const { e } = elector(api, clock, 'a');
    const ac = new AbortController();
    const run = e.run(ac.signal);
    await settle();
    const acquired = JSON.stringify(api.lease?.spec?.acquireTime);
    await pass(clock, 6_000);
    expect(api.writes).to.equal(4);
    expect(JSON.stringify(api.lease?.spec?.acquireTime)).to.equal(acquired);
    ac.abort();
    await run;
  });

  it('a renewal by the leader is one update of the lease it holds, without a read first', async () => {
    const api = leaseStore();
    const clock = new FakeClock();
    let gets = 0;
    const client: LeaseClient = {
      get: (...a) => (gets++, api.get(...a)),
      create: (...a) => api.create(...a),
      update: (...a) => api.update(...a),
    };
    const { e } = elector(client, clock, 'a');
    const ac = new AbortController();
    const run = e.run(ac.signal);
    await settle();
    const readsToAcquire = gets;
    await pass(clock, 6_000);
    expect(api.writes, 'create + 3 renewals').to.equal(4);
    expect(gets - readsToAcquire, 'reads while renewing').to.equal(0);
    ac.abort();
    await run;
  });

  it('renewals start a retry period apart while each takes a second (the API server under load)', async () => {
    const api = leaseStore();
    const clock = new FakeClock();
    const client: LeaseClient = {
      get: (...a) => api.get(...a),
      create: (...a) => api.create(...a),
      update: async (...a) => {
        await sleep(clock, 1_000);
        return api.update(...a);
      },
    };
    const { e } = elector(client, clock, 'a');
    const ac = new AbortController();
    const run = e.run(ac.signal);
    await settle();
    const starts: number[] = [];
    const update = client.update.bind(client);
    client.update = (...a) => (starts.push(clock.now()), update(...a));
    await pass(clock, 10_500);
    expect(starts.map((t, i) => t - (starts[i - 1] ?? t - 2_000))).to.deep.equal([2_000, 2_000, 2_000, 2_000, 2_000]);
    expect(e.isLeader()).to.equal(true);
    ac.abort();
    // The release on stop is an update too, and takes its second.
    await pass(clock, 1_500);
    await run;
  });

  it('waits a full lease duration from its own observation, ignoring the renewTime it reads', async () => {
    const api = leaseStore();
    const clock = new FakeClock();
    // A renewTime from long ago: with clock skew it would look expired, so it is not trusted.
    api.lease = {
      metadata: { name: 'lease', namespace: 'ns', resourceVersion: '100' },
      spec: { holderIdentity: 'other', leaseDurationSeconds: 15, renewTime: '2000-01-01T00:00:00.000000Z', leaseTransitions: 3 },
    };
    const { e } = elector(api, clock, 'b');
    const ac = new AbortController();
    const run = e.run(ac.signal);
    await pass(clock, 14_000);
    expect(e.isLeader(), 'lease still considered held').to.equal(false);
    await pass(clock, 4_000);
    expect(e.isLeader()).to.equal(true);
    expect(api.lease?.spec).to.include({ holderIdentity: 'b', leaseTransitions: 4 });
    ac.abort();
    await run;
  });

  it('keeps waiting while the holder keeps renewing', async () => {
    const api = leaseStore();
    const clock = new FakeClock();
    const a = elector(api, clock, 'a');
    const acA = new AbortController();
    const runA = a.e.run(acA.signal);
    await settle();
    const b = elector(api, clock, 'b');
    const acB = new AbortController();
    const runB = b.e.run(acB.signal);
    await pass(clock, 60_000);
    expect([a.e.isLeader(), b.e.isLeader()]).to.deep.equal([true, false]);
    acA.abort();
    await runA;
    expect(api.lease?.spec).to.include({ holderIdentity: '', leaseDurationSeconds: 1 });
    await pass(clock, 2_500);
    expect(b.e.isLeader(), 'released lease taken within a retry period').to.equal(true);
    acB.abort();
    await runB;
  });

  it('gives up leading when renewals fail for renewDeadline', async () => {
    const api = leaseStore();
    const clock = new FakeClock();
    const { e, events } = elector(api, clock, 'a');
    const ac = new AbortController();
    const run = e.run(ac.signal);
    await settle();
    api.failWith = 500;
    await pass(clock, 8_000);
    expect(e.isLeader(), 'still within the deadline').to.equal(true);
    await pass(clock, 4_000);
    expect(await run).to.equal('lost');
    expect(e.isLeader()).to.equal(false);
    expect(events).to.deep.equal(['started', 'stopped']);
    clock.advance(1_000);
    expect(e.check(), 'failing for longer than renewDeadline').to.match(/unreachable/);
  });

  it('gives up at once when another replica holds the lease', async () => {
    const api = leaseStore();
    const clock = new FakeClock();
    const { e } = elector(api, clock, 'a');
    const run = e.run(new AbortController().signal);
    await settle();
    api.lease = { ...api.lease, metadata: { ...api.lease?.metadata, resourceVersion: '999' }, spec: { ...api.lease?.spec, holderIdentity: 'thief' } };
    await pass(clock, 2_500);
    expect(await run).to.equal('lost');
  });

  it('found in review: releases on stop even when a renewal it did not see committed moved the lease on', async () => {
    const api = leaseStore();
    const clock = new FakeClock();
    const { e } = elector(api, clock, 'a');
    const ac = new AbortController();
    const run = e.run(ac.signal);
    await settle();
    // A renewal aborted by the stop that the server still committed: still ours, newer version.
    api.lease = { ...api.lease, metadata: { ...api.lease?.metadata, resourceVersion: '999' } };
    ac.abort();
    expect(await run).to.equal('stopped');
    expect(api.lease?.spec).to.include({ holderIdentity: '', leaseDurationSeconds: 1 });
  });

  it('does not take the lease back on stop when someone else holds it by then', async () => {
    const api = leaseStore();
    const clock = new FakeClock();
    const { e } = elector(api, clock, 'a');
    const ac = new AbortController();
    const run = e.run(ac.signal);
    await settle();
    api.lease = { ...api.lease, metadata: { ...api.lease?.metadata, resourceVersion: '999' }, spec: { ...api.lease?.spec, holderIdentity: 'b' } };
    ac.abort();
    await run;
    expect(api.lease?.spec).to.include({ holderIdentity: 'b' });
  });

  it('does not release on stop when releaseOnCancel is false', async () => {
    const api = leaseStore();
    const clock = new FakeClock();
    const e = new LeaderElector({
      client: api,
      clock,
      config: { ...config, identity: 'a', releaseOnCancel: false },
      logger: captureLogger().logger,
    });
    const ac = new AbortController();
    const run = e.run(ac.signal);
    await settle();
    ac.abort();
    expect(await run).to.equal('stopped');
    expect(api.lease?.spec?.holderIdentity).to.equal('a');
  });

  it('treats a lost create race (409) as "someone else won" and retries', async () => {
    const api = leaseStore();
    const clock = new FakeClock();
    const create = api.create.bind(api);
    api.create = async (kind, body) => {
      const lease = body as Lease;
      await create(kind, { ...lease, spec: { ...lease.spec, holderIdentity: 'winner' } });
      throw new ApiError(409, 'AlreadyExists', 'lease already exists');
    };
    const { e } = elector(api, clock, 'a');
    const ac = new AbortController();
    const run = e.run(ac.signal);
    await settle();
    expect(e.isLeader()).to.equal(false);
    expect(e.observedLeader()).to.equal('');
    await pass(clock, 2_500);
    expect(e.observedLeader()).to.equal('winner');
    expect(e.check()).to.equal(undefined);
    ac.abort();
    expect(await run).to.equal('stopped');
  });

  it('rejects inconsistent durations', () => {
    const api = leaseStore();
    const logger = captureLogger().logger;
    expect(() => new LeaderElector({ client: api, logger, config: { ...config, renewDeadlineMs: 15_000 } })).to.throw(/leaseDurationMs/);
    expect(() => new LeaderElector({ client: api, logger, config: { ...config, retryPeriodMs: 9_000 } })).to.throw(/renewDeadlineMs/);
  });
});

describe('LeaderElector abort signals', () => {
  /** A Lease client whose calls hang until their signal aborts, as a dead connection would. */
  function hanging(): { client: LeaseClient; aborted: string[] } {
    const aborted: string[] = [];
    const hang =
      (op: string) =>
      (...args: unknown[]) => {
        const opts = args[args.length - 1] as { signal?: AbortSignal } | undefined;
        return new Promise<never>((_resolve, reject) => {
          opts?.signal?.addEventListener('abort', () => {
            aborted.push(op);
            reject(opts.signal?.reason);
          });
        });
      };
    return { client: { get: hang('get'), create: hang('create'), update: hang('update') } as unknown as LeaseClient, aborted };
  }

  it('a stop while the Lease read hangs aborts that read and ends the run', async () => {
    const { client, aborted } = hanging();
    const clock = new FakeClock();
    const { e } = elector(client, clock, 'a');
    const ac = new AbortController();
    const run = e.run(ac.signal);
    await settle();
    ac.abort();
    const outcome = await Promise.race([run, new Promise((resolve) => setTimeout(() => resolve('still running'), 2_000))]);
    expect(outcome).to.equal('stopped');
    expect(aborted).to.deep.equal(['get']);
  });

  it('a renewal that hangs past renewDeadline is aborted, not left behind', async () => {
    const api = leaseStore();
    const clock = new FakeClock();
    const { client: stuck, aborted } = hanging();
    let broken = false;
    // A dead connection: every request hangs, the leader's optimistic update as well as the read.
    const client: LeaseClient = {
      get: (...a) => (broken ? stuck.get(...a) : api.get(...a)),
      create: (...a) => api.create(...a),
      update: (...a) => (broken ? stuck.update(...a) : api.update(...a)),
    };
    const { e } = elector(client, clock, 'a');
    const ac = new AbortController();
    const run = e.run(ac.signal);
    await settle();
    expect(e.isLeader()).to.equal(true);
    broken = true;
    await pass(clock, 12_500);
    expect(await run).to.equal('lost');
    expect(aborted).to.include('update');
  });
});
