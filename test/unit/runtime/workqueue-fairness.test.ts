/**
 * Fairness by time held (issue 32): workers and a fake clock drive the queue as a controller
 * would, each key held for as long as its namespace's fake reconcile takes. A namespace whose
 * keys take 60 s must hold no more than its share of the workers while another namespace waits,
 * and must be served less often, not more; a lone namespace still gets every worker.
 */
import { expect } from 'chai';
import { newControllerManagedBy } from '../../../operator/runtime/builder';
import { sleep } from '../../../operator/runtime/clock';
import { flowOf } from '../../../operator/runtime/flow';
import { done, type Reconciler } from '../../../operator/runtime/reconcile';
import { flowShare, WorkQueue } from '../../../operator/runtime/workqueue';
import { FakeClock } from '../../support/fake-clock';
import { captureLogger, FakeInformerSource, settle, standalone, testKind } from './fakes';

/** One namespace of a run: how many keys it adds, how long each is held, and when it adds them. */
interface FlowSpec {
  readonly keys: number;
  readonly holdMs: number;
  /** @default 0 */
  readonly addAtMs?: number;
}

/** What a run saw of one namespace. */
interface FlowSeen {
  inFlight: number;
  /** Keys added and not yet handed out. */
  waiting: number;
  /** Most keys held at once while another namespace had a key waiting. */
  maxInFlightWhileOthersWait: number;
  /** Most keys held at once. */
  maxInFlight: number;
  completed: number;
  /** Clock time the last of its keys completed. */
  lastCompletedAt: number;
  /** Worker ms its keys were held, finished or not. */
  heldMs: number;
}

const STEP_MS = 10;

/**
 * Runs `workers` fake workers over a queue on a fake clock from 0 to `untilMs` in steps of
 * 10 ms; after every step `check` sees every namespace. The clock alone moves time: nothing
 * here sleeps for real.
 */
async function run(
  opts: { workers: number; maxFlowShare?: number; flows: Record<string, FlowSpec>; untilMs: number },
  check: (seen: Record<string, FlowSeen>, now: number) => void = () => undefined,
): Promise<Record<string, FlowSeen>> {
  const clock = new FakeClock();
  const q = new WorkQueue({ name: 'fair', clock, workers: opts.workers, ...(opts.maxFlowShare ? { maxFlowShare: opts.maxFlowShare } : {}) });
  const seen: Record<string, FlowSeen> = {};
  for (const name of Object.keys(opts.flows)) {
    seen[name] = { inFlight: 0, waiting: 0, maxInFlightWhileOthersWait: 0, maxInFlight: 0, completed: 0, lastCompletedAt: 0, heldMs: 0 };
  }
  const startedAt = new Map<string, number>();
  const worker = async (): Promise<void> => {
    for (;;) {
      const key = await q.get();
      if (key === undefined) return;
      const flow = seen[flowOf(key)] as FlowSeen;
      flow.waiting--;
      flow.inFlight++;
      startedAt.set(key, clock.now());
      await sleep(clock, opts.flows[flowOf(key)]?.holdMs ?? 0);
      flow.inFlight--;
      flow.completed++;
      flow.lastCompletedAt = clock.now();
      flow.heldMs += clock.now() - (startedAt.get(key) ?? 0);
      startedAt.delete(key);
      q.done(key);
    }
  };
  const workers = Array.from({ length: opts.workers }, worker);
  const added = new Set<string>();
  for (let now = 0; now <= opts.untilMs; now += STEP_MS) {
    for (const [name, spec] of Object.entries(opts.flows)) {
      if (added.has(name) || (spec.addAtMs ?? 0) > now) continue;
      added.add(name);
      (seen[name] as FlowSeen).waiting += spec.keys;
      for (let i = 0; i < spec.keys; i++) q.add(`${name}/item-${i}`);
    }
    await settle(2);
    for (const [name, flow] of Object.entries(seen)) {
      flow.maxInFlight = Math.max(flow.maxInFlight, flow.inFlight);
      const othersWait = Object.entries(seen).some(([other, f]) => other !== name && f.waiting > 0);
      if (othersWait) flow.maxInFlightWhileOthersWait = Math.max(flow.maxInFlightWhileOthersWait, flow.inFlight);
    }
    check(seen, clock.now());
    clock.advance(STEP_MS);
  }
  // What the run saw, before the stop below lets the unfinished keys end; they count for the
  // time they have been held so far.
  const result = structuredClone(seen);
  for (const [key, since] of startedAt) (result[flowOf(key)] as FlowSeen).heldMs += opts.untilMs - since;
  q.shutDown();
  clock.advance(24 * 3600_000);
  await settle(2);
  await Promise.all(workers);
  return result;
}

describe('WorkQueue: fairness by time held', () => {
  describe('flowShare', () => {
    const cases: Record<string, { args: [slots: number, activeFlows: number, maxShare?: number]; want: number }> = {
      'a lone flow may use every slot': { args: [8, 1], want: 8 },
      'two flows: half each': { args: [8, 2], want: 4 },
      'three flows: rounded up': { args: [8, 3], want: 3 },
      'more flows than slots: one each': { args: [8, 50], want: 1 },
      'maxShare lowers the equal share': { args: [8, 2, 0.25], want: 2 },
      'maxShare never goes below one slot': { args: [2, 2, 0.1], want: 1 },
      'no active flow counts as one': { args: [4, 0], want: 4 },
    };
    for (const [name, tc] of Object.entries(cases)) {
      it(name, () => {
        expect(flowShare(...tc.args)).to.equal(tc.want);
      });
    }
  });

  it('8 workers: a namespace whose keys take 60 s holds at most half of them while all 50 keys of a 10 ms namespace complete', async () => {
    const seen = await run({
      workers: 8,
      flows: { slow: { keys: 50, holdMs: 60_000 }, fast: { keys: 50, holdMs: 10 } },
      untilMs: 2_000,
    });
    const { slow, fast } = seen as { slow: FlowSeen; fast: FlowSeen };
    expect(fast.completed, 'fast keys completed').to.equal(50);
    expect(slow.completed, 'no slow key has completed yet: the fast ones did not wait for them').to.equal(0);
    expect(slow.maxInFlightWhileOthersWait, 'workers the slow namespace held while the fast one waited').to.equal(4);
    expect(fast.lastCompletedAt, 'the fast keys ran on their share of the workers: 50 keys / 4 workers, 10 ms each').to.be.at.most(13 * STEP_MS);
    // Once nothing else waits, the slow namespace may use the workers nobody else wants.
    expect(slow.inFlight, 'work-conserving: the slow namespace took the idle workers').to.equal(8);
  });

  it('found in review (issue 32): slow namespaces together never take the last quarter of the workers, so a newcomer is served at once', async () => {
    // Four namespaces whose endpoints take 20 s fill all 8 workers at their equal share (2 each);
    // once their keys are known to be slow, they hold at most 6 together.
    const slow = { keys: 20, holdMs: 20_000 };
    const seen = await run(
      { workers: 8, flows: { s1: slow, s2: slow, s3: slow, s4: slow, late: { keys: 1, holdMs: 10, addAtMs: 25_000 } }, untilMs: 25_100 },
      (s, now) => {
        const slowHeld = ['s1', 's2', 's3', 's4'].reduce((n, f) => n + (s[f]?.inFlight ?? 0), 0);
        if (now > 20_000) expect(slowHeld, `workers held by slow namespaces at ${now} ms`).to.be.at.most(6);
        if (now === 25_000) expect(s.late?.inFlight, 'the newcomer took a worker the moment it came').to.equal(1);
      },
    );
    expect(seen.late?.completed).to.equal(1);
  });

  it('a lone namespace uses every worker', async () => {
    const seen = await run({ workers: 8, flows: { alone: { keys: 50, holdMs: 60_000 } }, untilMs: 100 });
    expect(seen.alone?.maxInFlight).to.equal(8);
  });

  it('a namespace that took every worker while alone gets back no more than its share once another one waits', async () => {
    const seen = await run(
      {
        workers: 8,
        flows: { slow: { keys: 50, holdMs: 2_000 }, fast: { keys: 200, holdMs: 10, addAtMs: 500 } },
        untilMs: 3_000,
      },
      (s, now) => {
        // Before its first keys end it holds what it borrowed; from then on only its share.
        if (now > 2_000 && (s.fast?.waiting ?? 0) > 0) expect(s.slow?.inFlight, `slow in flight at ${now} ms`).to.be.at.most(4);
      },
    );
    expect(seen.slow?.maxInFlight, 'it had borrowed every worker').to.equal(8);
    expect(seen.fast?.completed, 'every fast key completed').to.equal(200);
  });

  it('maxFlowShare is a ceiling even for a lone namespace, so a newcomer is served at once', async () => {
    const seen = await run(
      {
        workers: 8,
        maxFlowShare: 0.75,
        flows: { slow: { keys: 50, holdMs: 60_000 }, late: { keys: 1, holdMs: 10, addAtMs: 1_000 } },
        untilMs: 1_100,
      },
      (s, now) => {
        if (now === 1_000) expect(s.late?.inFlight, 'the newcomer took a spare worker the moment it came').to.equal(1);
      },
    );
    expect(seen.slow?.maxInFlight, 'the lone namespace held 6 of the 8 workers').to.equal(6);
    expect(seen.late?.completed).to.equal(1);
  });

  it('maxFlowShare caps a namespace below its equal share, borrowing included', async () => {
    const seen = await run({
      workers: 8,
      maxFlowShare: 0.25,
      flows: { slow: { keys: 50, holdMs: 60_000 }, fast: { keys: 50, holdMs: 10 } },
      untilMs: 500,
    });
    expect(seen.slow?.maxInFlight).to.equal(2);
    expect(seen.fast?.completed).to.equal(50);
  });

  it('one worker: a namespace whose keys take 10 times longer gets as much worker time, not as many hand-outs', async () => {
    const seen = await run({
      workers: 1,
      flows: { slow: { keys: 100, holdMs: 100 }, fast: { keys: 1_000, holdMs: 10 } },
      untilMs: 4_000,
    });
    const { slow, fast } = seen as { slow: FlowSeen; fast: FlowSeen };
    // Counting hand-outs would give the slow namespace 100 ms for every 10 ms of the fast one.
    expect(Math.abs(slow.heldMs - fast.heldMs), `worker ms held: slow ${slow.heldMs}, fast ${fast.heldMs}`).to.be.at.most(100 + STEP_MS);
    expect(fast.completed, 'the fast namespace was served about ten times as often').to.be.at.least(9 * slow.completed);
  });

  it('a namespace that was idle earns no credit: it shares the worker from its arrival on', async () => {
    let earlyBefore = 0;
    const seen = await run(
      {
        workers: 1,
        flows: { early: { keys: 1_000, holdMs: 10 }, late: { keys: 1_000, holdMs: 10, addAtMs: 2_000 } },
        untilMs: 3_000,
      },
      (s, now) => {
        if (now === 2_000) earlyBefore = s.early?.completed ?? 0;
      },
    );
    // The late namespace was not credited for the 2 s it was absent: from its arrival on they take turns.
    const early = (seen.early?.completed ?? 0) - earlyBefore;
    const late = seen.late?.completed ?? 0;
    expect(Math.abs(early - late), `keys completed after the late one came: ${early} and ${late}`).to.be.at.most(1);
  });

  /** Runs a controller with 8 workers over 50 objects per namespace, each reconcile held as long as its namespace says. */
  async function controllerRun(holdMs: Record<string, number>, options: { maxFlowShare?: number } = {}) {
    const kind = testKind('Widget');
    const source = new FakeInformerSource();
    const informer = source.informer(kind);
    const clock = new FakeClock();
    const stats: Record<string, { inFlight: number; started: number; completed: number; maxInFlight: number }> = {};
    for (const ns of Object.keys(holdMs)) stats[ns] = { inFlight: 0, started: 0, completed: 0, maxInFlight: 0 };
    const reconciler: Reconciler = {
      async reconcile(req) {
        const s = stats[req.namespace] as (typeof stats)[string];
        s.inFlight++;
        s.started++;
        s.maxInFlight = Math.max(s.maxInFlight, s.inFlight);
        await sleep(clock, holdMs[req.namespace] ?? 0);
        s.inFlight--;
        s.completed++;
        return done();
      },
    };
    const { logger } = captureLogger();
    const controller = newControllerManagedBy(standalone({ informers: source, logger, clock }), 'fair')
      .for(kind)
      .withOptions({ maxConcurrentReconciles: 8, ...options })
      .complete(reconciler);
    const ac = new AbortController();
    const running = controller.start(ac.signal);
    await settle();
    for (let i = 0; i < 50; i++) {
      for (const namespace of Object.keys(holdMs)) informer.upsert({ metadata: { namespace, name: `item-${i}`, resourceVersion: '1' } });
    }
    /** Most reconciles of `ns` at once while another namespace still had objects to start. */
    const maxWhileOthersWait: Record<string, number> = {};
    for (let now = 0; now < 1_000; now += STEP_MS) {
      await settle(2);
      for (const [ns, s] of Object.entries(stats)) {
        const othersWait = Object.entries(stats).some(([other, o]) => other !== ns && o.started < 50);
        if (othersWait) maxWhileOthersWait[ns] = Math.max(maxWhileOthersWait[ns] ?? 0, s.inFlight);
      }
      clock.advance(STEP_MS);
    }
    const result = { stats: structuredClone(stats), maxWhileOthersWait };
    const stopped = controller.stop(0);
    clock.advance(24 * 3600_000);
    await settle();
    await stopped;
    ac.abort();
    await running;
    return result;
  }

  it('the controller shares its workers: the slow namespace holds its share, the fast one completes', async () => {
    const { stats, maxWhileOthersWait } = await controllerRun({ slow: 60_000, fast: 10 });
    expect(stats.fast?.completed, 'fast reconciles completed').to.equal(50);
    expect(stats.slow?.completed, 'slow reconciles completed').to.equal(0);
    expect(maxWhileOthersWait.slow, 'workers the slow namespace held while the fast one had work').to.equal(4);
  });

  it('the controller passes maxFlowShare on: a lone namespace holds that share of the workers', async () => {
    const { stats } = await controllerRun({ alone: 60_000 }, { maxFlowShare: 0.5 });
    expect(stats.alone?.maxInFlight).to.equal(4);
  });
});
