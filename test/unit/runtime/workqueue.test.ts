import { FakeClock } from '../../support/fake-clock';
import { expect } from 'chai';

import { newControllerManagedBy } from '../../../operator/runtime/builder';
import {
  ItemExponentialRateLimiter,
  MaxOfRateLimiter,
  TokenBucketRateLimiter,
  defaultControllerRateLimiter,
} from '../../../operator/runtime/rate-limiter';
import { done, type Reconciler } from '../../../operator/runtime/reconcile';
import { PerFlowTokenBucketRateLimiter } from '../../../operator/runtime/flow';
import { Priority, WorkQueue, type QueueItem, type WorkQueueMetrics, type WorkQueueMetricsProvider } from '../../../operator/runtime/workqueue';
import { FakeInformerSource, captureLogger, settle, standalone, testKind } from './fakes';
import { eventually, IN_PROCESS } from '../../support/eventually';

function queue(clock = new FakeClock()): { q: WorkQueue; clock: FakeClock } {
  return { q: new WorkQueue({ name: 'test', clock, rateLimiter: defaultControllerRateLimiter({ clock }) }), clock };
}

describe('WorkQueue', () => {
  it('merges duplicate keys and hands them out in FIFO order', async () => {
    const { q } = queue();
    for (const k of ['a', 'b', 'a', 'c', 'b']) q.add(k);
    expect(q.len()).to.equal(3);
    expect([await q.get(), await q.get(), await q.get()]).to.deep.equal(['a', 'b', 'c']);
  });

  it('holds a key re-added while processing until done, then runs it once more', async () => {
    const { q } = queue();
    q.add('a');
    const key = await q.get();
    q.add('a');
    q.add('a');
    expect(q.len(), 'not handed out while in flight').to.equal(0);
    q.done(key ?? '');
    expect(q.len()).to.equal(1);
    expect(await q.get()).to.equal('a');
    q.done('a');
    expect(q.len(), 'the two re-adds merged into one').to.equal(0);
  });

  it('wakes a waiting get() when a key arrives', async () => {
    const { q } = queue();
    const pending = q.get();
    q.add('x');
    expect(await pending).to.equal('x');
  });

  describe('addAfter', () => {
    it('adds the key once the delay has passed', () => {
      const { q, clock } = queue();
      q.addAfter('a', 100);
      clock.advance(99);
      expect(q.len()).to.equal(0);
      clock.advance(1);
      expect(q.len()).to.equal(1);
    });

    it('keeps the earliest time when a waiting key is added again', () => {
      const { q, clock } = queue();
      q.addAfter('a', 100);
      q.addAfter('a', 50);
      q.addAfter('a', 200);
      clock.advance(50);
      expect(q.len()).to.equal(1);
      expect(clock.pending(), 'no stray timers for the superseded delays').to.equal(0);
    });

    it('adds at once for a zero delay', () => {
      const { q } = queue();
      q.addAfter('a', 0);
      expect(q.len()).to.equal(1);
    });
  });

  describe('addRateLimited', () => {
    it('backs a key off exponentially and forget() resets it', async () => {
      const { q, clock } = queue();
      const waits: number[] = [];
      for (let i = 0; i < 4; i++) {
        q.addRateLimited('a');
        let waited = 0;
        // Bounded, so a regression fails the test instead of spinning forever.
        while (q.len() === 0 && waited < 10_000) {
          clock.advance(1);
          waited++;
        }
        waits.push(waited);
        q.done((await q.get()) ?? '');
      }
      expect(waits).to.deep.equal([5, 10, 20, 40]);
      expect(q.numRequeues('a')).to.equal(4);
      q.forget('a');
      expect(q.numRequeues('a')).to.equal(0);
    });
  });

  describe('shutdown', () => {
    it('resolves waiting and later get() calls with undefined and ignores adds', async () => {
      const { q } = queue();
      const pending = q.get();
      q.shutDown();
      expect(await pending).to.equal(undefined);
      q.add('a');
      q.addAfter('b', 10);
      q.addRateLimited('c');
      expect(q.len()).to.equal(0);
      expect(await q.get()).to.equal(undefined);
    });

    it('drops queued and delayed keys, so no new work starts', async () => {
      const { q, clock } = queue();
      q.add('a');
      q.addAfter('b', 10);
      q.shutDown();
      clock.advance(10);
      expect(await q.get()).to.equal(undefined);
      expect(clock.pending()).to.equal(0);
    });

    it('shutDownWithDrain waits for in-flight keys to be done', async () => {
      const { q } = queue();
      q.add('a');
      q.add('b');
      const a = await q.get();
      const b = await q.get();
      let drained = false;
      const drain = q.shutDownWithDrain().then(() => {
        drained = true;
      });
      q.done(a ?? '');
      await settle();
      expect(drained, 'b still in flight').to.equal(false);
      q.done(b ?? '');
      await drain;
      expect(drained).to.equal(true);
    });

    it('shutDownWithDrain resolves at once when idle', async () => {
      const { q } = queue();
      await q.shutDownWithDrain();
      expect(q.isShuttingDown()).to.equal(true);
    });
  });

  describe('priorities', () => {
    const High = Priority.Normal;
    const Low = Priority.Low;

    /** Takes every ready key, marking each done, as a single worker would. */
    async function drain(q: WorkQueue): Promise<QueueItem[]> {
      const out: QueueItem[] = [];
      while (q.len() > 0) {
        const item = await q.getWithPriority();
        if (!item) break;
        out.push(item);
        q.done(item.key);
      }
      return out;
    }

    it('hands out a new high-priority key next, with 10,000 low-priority keys queued', async () => {
      const { q } = queue();
      for (let i = 0; i < 10_000; i++) q.addWithOptions(`low-${i}`, { priority: Low });
      q.add('new');
      expect(await q.getWithPriority()).to.deep.equal({ key: 'new', priority: High });
      expect(await q.get(), 'then the backlog, oldest first').to.equal('low-0');
      expect(q.len()).to.equal(9_999);
    });

    it('keeps FIFO order within a priority through thousands of removals from the middle', async () => {
      const { q } = queue();
      const n = 5_000;
      for (let i = 0; i < n; i++) q.addWithOptions(`k-${i}`, { priority: Low });
      const raised = Array.from({ length: n }, (_, i) => `k-${i}`).filter((_, i) => i % 3 === 0);
      for (const k of raised) q.add(k);
      const got = (await drain(q)).map((i) => i.key);
      const isRaised = new Set(raised);
      const rest = Array.from({ length: n }, (_, i) => `k-${i}`).filter((_, i) => i % 3 !== 0);
      // The starvation limit interleaves the two; each priority on its own stays in order.
      expect(got.filter((k) => isRaised.has(k))).to.deep.equal(raised);
      expect(got.filter((k) => !isRaised.has(k))).to.deep.equal(rest);
      expect(got).to.have.length(n);
      expect(q.len()).to.equal(0);
    });

    const dedupCases: Record<string, { act(q: WorkQueue, clock: FakeClock): Promise<void> | void; want: Array<[key: string, priority: number]> }> = {
      'a queued key re-added at a higher priority moves ahead of the lower ones': {
        act: (q) => {
          q.addWithOptions('a', { priority: Low });
          q.addWithOptions('b', { priority: Low });
          q.addWithOptions('b', { priority: High });
        },
        want: [
          ['b', High],
          ['a', Low],
        ],
      },
      'a queued key re-added at a lower priority keeps its higher one': {
        act: (q) => {
          q.addWithOptions('a', { priority: Low });
          q.addWithOptions('b', { priority: High });
          q.addWithOptions('b', { priority: Low });
        },
        want: [
          ['b', High],
          ['a', Low],
        ],
      },
      'a delayed key added again at once is ready now, at the higher priority': {
        act: (q) => {
          q.addWithOptions('a', { priority: Low });
          q.addWithOptions('b', { priority: High, afterMs: 1000 });
          q.addWithOptions('b', { priority: Low });
        },
        want: [
          ['b', High],
          ['a', Low],
        ],
      },
      'a delayed key keeps the earlier ready time and the higher priority': {
        act: (q, clock) => {
          q.addWithOptions('b', { priority: High, afterMs: 100 });
          q.addWithOptions('b', { priority: Low, afterMs: 50 });
          q.addWithOptions('b', { priority: Low, afterMs: 500 });
          clock.advance(49);
          q.addWithOptions('a', { priority: Low });
          clock.advance(1);
        },
        want: [
          ['b', High],
          ['a', Low],
        ],
      },
      'a key re-added while in flight runs once more, at the higher of the re-add priorities': {
        act: async (q) => {
          q.addWithOptions('b', { priority: Low });
          const b = await q.get();
          q.addWithOptions('a', { priority: Low });
          q.addWithOptions('b', { priority: Low });
          q.addWithOptions('b', { priority: High });
          expect(q.len(), 'b is not handed to a second worker').to.equal(1);
          q.done(b ?? '');
        },
        want: [
          ['b', High],
          ['a', Low],
        ],
      },
      'a rate-limited key comes back at its priority, ahead of older low-priority keys': {
        act: (q, clock) => {
          q.addWithOptions('b', { priority: High, rateLimited: true });
          q.addWithOptions('a', { priority: Low });
          clock.advance(5);
        },
        want: [
          ['b', High],
          ['a', Low],
        ],
      },
    };
    for (const [name, tc] of Object.entries(dedupCases)) {
      it(`dedup: ${name}`, async () => {
        const { q, clock } = queue();
        await tc.act(q, clock);
        const got = await drain(q);
        expect(got.map((i) => [i.key, i.priority])).to.deep.equal(tc.want);
        expect(clock.pending(), 'no stray timers').to.equal(0);
      });
    }

    it('serves a rate-limited retry ahead of the backlog once its backoff has passed', async () => {
      const { q, clock } = queue();
      q.addWithOptions('new', { priority: High, rateLimited: true });
      for (let i = 0; i < 3; i++) q.addWithOptions(`low-${i}`, { priority: Low });
      expect(await q.get()).to.equal('low-0');
      q.done('low-0');
      clock.advance(5);
      expect(await q.getWithPriority()).to.deep.equal({ key: 'new', priority: High });
    });

    const starvationCases: Record<string, { starvationLimit?: number; wantLowShare: number }> = {
      'default: one hand-out in ten goes to the backlog': { wantLowShare: 10 },
      'starvationLimit 2: one in three': { starvationLimit: 2, wantLowShare: 3 },
      'starvationLimit 0: strictly by age': { starvationLimit: 0, wantLowShare: 1 },
    };
    for (const [name, tc] of Object.entries(starvationCases)) {
      it(`no starvation under a steady stream of high-priority adds (${name})`, async () => {
        const clock = new FakeClock();
        const q = new WorkQueue({
          name: 't',
          clock,
          ...(tc.starvationLimit === undefined ? {} : { starvationLimit: tc.starvationLimit }),
        });
        for (let i = 0; i < 100; i++) q.addWithOptions(`low-${i}`, { priority: Low });
        const served: string[] = [];
        // Two new high-priority keys per hand-out: more than the worker can keep up with.
        for (let round = 0; round < 60; round++) {
          q.add(`high-${round}-a`);
          q.add(`high-${round}-b`);
          const key = (await q.get()) ?? '';
          served.push(key);
          q.done(key);
        }
        const lows = served.filter((k) => k.startsWith('low-'));
        expect(lows, 'the backlog progresses, oldest first').to.deep.equal(Array.from({ length: 60 / tc.wantLowShare }, (_, i) => `low-${i}`));
        let run = 0;
        let longestRun = 0;
        for (const k of served) {
          run = k.startsWith('high-') ? run + 1 : 0;
          longestRun = Math.max(longestRun, run);
        }
        expect(longestRun, 'high-priority hand-outs in a row').to.equal(tc.wantLowShare - 1);
      });
    }

    it('serves equal priorities in FIFO order', async () => {
      const { q } = queue();
      for (const k of ['a', 'b', 'c']) q.addWithOptions(k, { priority: Low });
      for (const k of ['x', 'y']) q.add(k);
      expect((await drain(q)).map((i) => i.key)).to.deep.equal(['x', 'y', 'a', 'b', 'c']);
    });

    it('rejects a priority that is not an integer', () => {
      const { q } = queue();
      expect(() => q.addWithOptions('a', { priority: Number.NaN })).to.throw(RangeError);
      expect(() => q.addWithOptions('a', { priority: 0.5 })).to.throw(RangeError);
    });

    it('reports depth in total and by priority', async () => {
      const depth: number[] = [];
      const byPriority = new Map<number, number>();
      const provider: WorkQueueMetricsProvider = {
        workqueue: () => ({
          setDepth: (n) => depth.push(n),
          setPriorityDepth: (p, n) => byPriority.set(p, n),
          incAdds: () => undefined,
          incRetries: () => undefined,
          observeQueueDuration: () => undefined,
          observeWorkDuration: () => undefined,
        }),
      };
      const q = new WorkQueue({ name: 'm', clock: new FakeClock(), metrics: provider });
      q.addWithOptions('a', { priority: Low });
      q.addWithOptions('b', { priority: Low });
      q.add('c');
      expect(Object.fromEntries(byPriority)).to.deep.equal({ [Low]: 2, [High]: 1 });
      q.add('a');
      expect(Object.fromEntries(byPriority), 'a raise moves the key').to.deep.equal({ [Low]: 1, [High]: 2 });
      expect(Object.fromEntries(q.lenByPriority())).to.deep.equal({ [Low]: 1, [High]: 2 });
      await q.get();
      expect(depth.at(-1)).to.equal(2);
      q.shutDown();
      expect(Object.fromEntries(byPriority)).to.deep.equal({ [Low]: 0, [High]: 0 });
      expect(depth.at(-1)).to.equal(0);
    });
  });

  describe('fairness across namespaces', () => {
    /** Takes `n` keys (fewer if the queue runs dry), marking each done, as a single worker would. */
    async function take(q: WorkQueue, n: number): Promise<string[]> {
      const out: string[] = [];
      while (out.length < n && q.len() > 0) {
        const key = await q.get();
        if (key === undefined) break;
        out.push(key);
        q.done(key);
      }
      return out;
    }

    const cases: Record<string, { args: { adds: Array<[key: string, priority?: number]>; take: number; starvationLimit?: number }; want: string[] }> =
      {
        'three namespaces interleave, each in FIFO order': {
          args: { adds: [['a/1'], ['a/2'], ['a/3'], ['b/1'], ['b/2'], ['c/1']], take: 6 },
          want: ['a/1', 'b/1', 'c/1', 'a/2', 'b/2', 'a/3'],
        },
        'keys without a namespace share one flow, FIFO among themselves': {
          args: { adds: [['x'], ['y'], ['z'], ['a/1'], ['a/2']], take: 5 },
          want: ['x', 'a/1', 'y', 'a/2', 'z'],
        },
        'a higher priority still goes first, whatever the namespaces': {
          args: { adds: [['a/1', Priority.Low], ['a/2', Priority.Low], ['b/1', Priority.Low], ['c/1'], ['c/2']], take: 5 },
          want: ['c/1', 'c/2', 'a/1', 'b/1', 'a/2'],
        },
        'the starvation rule gives the backlog its share, and takes it round robin there too': {
          args: {
            adds: [['a/1', Priority.Low], ['a/2', Priority.Low], ['b/1', Priority.Low], ['n/1'], ['n/2'], ['n/3'], ['n/4']],
            take: 7,
            starvationLimit: 1,
          },
          want: ['n/1', 'a/1', 'n/2', 'b/1', 'n/3', 'a/2', 'n/4'],
        },
        'a raise moves a key to its new priority without costing its old flow the turn': {
          args: { adds: [['a/1', Priority.Low], ['a/2', Priority.Low], ['b/1', Priority.Low], ['a/1']], take: 3 },
          want: ['a/1', 'a/2', 'b/1'],
        },
      };
    for (const [name, tc] of Object.entries(cases)) {
      it(name, async () => {
        const clock = new FakeClock();
        const q = new WorkQueue({
          name: 'fair',
          clock,
          ...(tc.args.starvationLimit === undefined ? {} : { starvationLimit: tc.args.starvationLimit }),
        });
        for (const [key, priority] of tc.args.adds) q.addWithOptions(key, priority === undefined ? {} : { priority });
        expect(await take(q, tc.args.take)).to.deep.equal(tc.want);
      });
    }

    it('hands out one key of a quiet namespace within 2 hand-outs, with 5,000 keys of a noisy one queued', async () => {
      const { q } = queue();
      for (let i = 0; i < 5_000; i++) q.add(`noisy/b-${i}`);
      expect(await take(q, 3)).to.deep.equal(['noisy/b-0', 'noisy/b-1', 'noisy/b-2']);
      q.add('quiet/b-0');
      const next = await take(q, 2);
      expect(next, 'the quiet key is among the next two hand-outs').to.include('quiet/b-0');
      expect(q.len()).to.equal(5_000 - 3 - 1);
    });

    it("does the same at low priority, where the noisy tenant's re-checks wait", async () => {
      const { q } = queue();
      for (let i = 0; i < 5_000; i++) q.addWithOptions(`noisy/b-${i}`, { priority: Priority.Low });
      q.addWithOptions('quiet/b-0', { priority: Priority.Low });
      expect(await take(q, 2)).to.deep.equal(['noisy/b-0', 'quiet/b-0']);
    });

    it('a flow that empties and refills rejoins the rotation, behind the flows waiting', async () => {
      const { q } = queue();
      q.add('a/1');
      q.add('b/1');
      q.add('b/2');
      expect(await take(q, 1)).to.deep.equal(['a/1']);
      expect(await take(q, 1), 'b now').to.deep.equal(['b/1']);
      q.add('a/2');
      q.add('c/1');
      expect(await take(q, 3), 'a refilled after b had its turn: b, then a, then c').to.deep.equal(['b/2', 'a/2', 'c/1']);
      q.add('a/3');
      expect(await take(q, 1), 'a alone again').to.deep.equal(['a/3']);
      expect(q.len()).to.equal(0);
    });

    it('a key re-added while in flight rejoins its flow behind the flows waiting', async () => {
      const { q } = queue();
      q.add('a/1');
      q.add('b/1');
      const first = await q.get();
      q.add('a/1');
      q.add('a/2');
      q.done(first ?? '');
      expect(await take(q, 3)).to.deep.equal(['b/1', 'a/2', 'a/1']);
    });

    it('gets, adds and raises never walk the queued keys or flows (10,000 keys in 1,000 namespaces)', async () => {
      // Counting, not timing: every Map, Set and Array iteration steps an iterator's next().
      // A get that scanned the keys or the flows would step about n/2 times per hand-out
      // (25,000,000 here); the queue's own loops run over the handful of priorities only.
      const { q } = queue();
      const keys: string[] = [];
      for (let ns = 0; ns < 1_000; ns++) for (let i = 0; i < 10; i++) keys.push(`ns-${ns}/b-${i}`);
      const protos = [new Map().values(), new Set().values(), [].values()].map((it) => Object.getPrototypeOf(it) as { next: () => unknown });
      const originals = protos.map((p) => p.next);
      let steps = 0;
      protos.forEach((p, i) => {
        const next = originals[i];
        p.next = function (this: unknown) {
          steps++;
          return next?.call(this);
        };
      });
      let got: string[];
      try {
        for (const k of keys) q.addWithOptions(k, { priority: Priority.Low });
        for (const k of keys.filter((_, i) => i % 7 === 0)) q.add(k);
        got = await take(q, keys.length);
      } finally {
        protos.forEach((p, i) => {
          const next = originals[i];
          if (next) p.next = next;
        });
      }
      expect(got).to.have.length(keys.length);
      expect(new Set(got).size).to.equal(keys.length);
      expect(steps, 'iterator steps over 10,000 adds, 1,429 raises and 10,000 gets').to.be.below(20 * keys.length);
    });
  });

  it('reports adds, retries, depth and durations to its metrics provider', async () => {
    const clock = new FakeClock();
    const seen = { adds: 0, retries: 0, depth: [] as number[], queued: [] as number[], work: [] as number[] };
    const sink: WorkQueueMetrics = {
      incAdds: () => seen.adds++,
      incRetries: () => seen.retries++,
      setDepth: (n) => seen.depth.push(n),
      observeQueueDuration: (s) => seen.queued.push(s),
      observeWorkDuration: (s) => seen.work.push(s),
    };
    let probe: { unfinishedWorkSeconds(): number } | undefined;
    const provider: WorkQueueMetricsProvider = {
      workqueue: (_name, p) => {
        probe = p;
        return sink;
      },
    };
    const q = new WorkQueue({ name: 'm', clock, metrics: provider });
    q.add('a');
    q.add('a');
    clock.advance(2000);
    const key = await q.get();
    clock.advance(500);
    expect(probe?.unfinishedWorkSeconds()).to.equal(0.5);
    q.done(key ?? '');
    q.addRateLimited('a');
    expect(seen.adds, 'duplicate add not counted').to.equal(1);
    expect(seen.retries).to.equal(1);
    expect(seen.depth).to.deep.equal([1, 0]);
    expect(seen.queued).to.deep.equal([2]);
    expect(seen.work).to.deep.equal([0.5]);
  });
});

describe('rate limiters', () => {
  it('ItemExponentialRateLimiter doubles per failure up to the cap, per key', () => {
    const rl = new ItemExponentialRateLimiter(5, 1000);
    const delays = Array.from({ length: 10 }, () => rl.when('a'));
    expect(delays).to.deep.equal([5, 10, 20, 40, 80, 160, 320, 640, 1000, 1000]);
    expect(rl.when('b'), 'other keys start from the base').to.equal(5);
    expect(rl.numRequeues('a')).to.equal(10);
    rl.forget('a');
    expect(rl.when('a')).to.equal(5);
  });

  it('ItemExponentialRateLimiter defaults to 5 ms base and a 1000 s cap without overflowing', () => {
    const rl = new ItemExponentialRateLimiter();
    expect(rl.when('a')).to.equal(5);
    for (let i = 0; i < 2000; i++) rl.when('a');
    expect(rl.when('a')).to.equal(1_000_000);
  });

  const bucketCases: Record<string, { qps: number; burst: number; steps: Array<[advanceMs: number, expected: number]> }> = {
    'burst is free': {
      qps: 10,
      burst: 3,
      steps: [
        [0, 0],
        [0, 0],
        [0, 0],
      ],
    },
    'past the burst each request waits one more token': {
      qps: 10,
      burst: 2,
      steps: [
        [0, 0],
        [0, 0],
        [0, 100],
        [0, 200],
      ],
    },
    'tokens refill over time up to the burst': {
      qps: 10,
      burst: 2,
      steps: [
        [0, 0],
        [0, 0],
        [0, 100],
        [10_000, 0],
        [0, 0],
        [0, 100],
      ],
    },
  };
  for (const [name, tc] of Object.entries(bucketCases)) {
    it(`TokenBucketRateLimiter: ${name}`, () => {
      const clock = new FakeClock();
      const rl = new TokenBucketRateLimiter(tc.qps, tc.burst, clock);
      const got = tc.steps.map(([adv]) => {
        clock.advance(adv);
        return Math.round(rl.when('k'));
      });
      expect(got).to.deep.equal(tc.steps.map(([, e]) => e));
    });
  }

  const perFlowCases: Record<string, { args: { qps: number; burst: number; steps: Array<[key: string, advanceMs: number]> }; want: number[] }> = {
    'each namespace has its own burst': {
      args: {
        qps: 10,
        burst: 2,
        steps: [
          ['a/1', 0],
          ['a/2', 0],
          ['a/3', 0],
          ['b/1', 0],
          ['b/2', 0],
          ['b/3', 0],
        ],
      },
      want: [0, 0, 100, 0, 0, 100],
    },
    'keys without a namespace share one bucket': {
      args: {
        qps: 10,
        burst: 1,
        steps: [
          ['x', 0],
          ['y', 0],
          ['ns/z', 0],
        ],
      },
      want: [0, 100, 0],
    },
    'a namespace refills on its own': {
      args: {
        qps: 10,
        burst: 1,
        steps: [
          ['a/1', 0],
          ['a/2', 0],
          ['a/3', 200],
          ['b/1', 0],
        ],
      },
      want: [0, 100, 0, 0],
    },
  };
  for (const [name, tc] of Object.entries(perFlowCases)) {
    it(`PerFlowTokenBucketRateLimiter: ${name}`, () => {
      const clock = new FakeClock();
      const rl = new PerFlowTokenBucketRateLimiter(tc.args.qps, tc.args.burst, clock);
      const got = tc.args.steps.map(([key, adv]) => {
        clock.advance(adv);
        return Math.round(rl.when(key));
      });
      expect(got).to.deep.equal(tc.want);
    });
  }

  it("5,000 failures in one namespace do not delay another namespace's first retry", () => {
    const clock = new FakeClock();
    const rl = defaultControllerRateLimiter({ clock });
    for (let i = 0; i < 5_000; i++) rl.when(`noisy/b-${i}`);
    expect(rl.when('quiet/b-0'), 'ms before the quiet retry').to.equal(5);
    expect(rl.when('noisy/b-5000'), 'the noisy namespace still backs off as a whole').to.be.greaterThan(400_000);
  });

  it('PerFlowTokenBucketRateLimiter keeps a bucket only while a namespace has not refilled', () => {
    const clock = new FakeClock();
    const rl = new PerFlowTokenBucketRateLimiter(10, 10, clock);
    for (let i = 0; i < 20; i++) rl.when(`a/${i}`);
    rl.when('b/0');
    expect(rl.flows()).to.equal(2);
    clock.advance(1_000);
    rl.forget('b/0');
    rl.forget('a/0');
    expect(rl.flows(), 'b refilled and went; a still owes 1 s').to.equal(1);
    clock.advance(1_000);
    rl.forget('a/1');
    expect(rl.flows()).to.equal(0);
  });

  it('MaxOfRateLimiter takes the longest delay and lets the bucket bound a failure storm', () => {
    const clock = new FakeClock();
    const rl = new MaxOfRateLimiter(new ItemExponentialRateLimiter(5, 1000), new TokenBucketRateLimiter(10, 1, clock));
    expect(rl.when('a')).to.equal(5);
    expect(rl.when('b'), 'bucket empty: 100 ms beats the 5 ms backoff').to.equal(100);
    expect(rl.numRequeues('a')).to.equal(1);
    rl.forget('a');
    expect(rl.numRequeues('a')).to.equal(0);
  });
});

describe('controller loop over the queue', () => {
  it('never reconciles one key on two workers at once, and runs a key re-added mid-reconcile again', async () => {
    const kind = testKind('Widget');
    const source = new FakeInformerSource();
    const informer = source.informer(kind);
    const inFlight = new Map<string, number>();
    let maxPerKey = 0;
    let maxOverall = 0;
    const runs = new Map<string, number>();
    const lastStartedAt = new Map<string, number>();
    let tick = 0;
    const reconciler: Reconciler = {
      async reconcile(req) {
        const k = req.name;
        inFlight.set(k, (inFlight.get(k) ?? 0) + 1);
        maxPerKey = Math.max(maxPerKey, inFlight.get(k) ?? 0);
        maxOverall = Math.max(
          maxOverall,
          [...inFlight.values()].reduce((a, b) => a + b, 0),
        );
        lastStartedAt.set(k, ++tick);
        await new Promise((r) => setImmediate(r));
        await new Promise((r) => setImmediate(r));
        inFlight.set(k, (inFlight.get(k) ?? 0) - 1);
        runs.set(k, (runs.get(k) ?? 0) + 1);
        return done();
      },
    };
    const { logger } = captureLogger();
    const controller = newControllerManagedBy(standalone({ informers: source, logger }), 'loop')
      .for(kind)
      .withOptions({ maxConcurrentReconciles: 4 })
      .complete(reconciler);
    const ac = new AbortController();
    const running = controller.start(ac.signal);
    const keys = ['a', 'b', 'c', 'd', 'e', 'f'];
    const lastAddedAt = new Map<string, number>();
    for (let round = 0; round < 50; round++) {
      for (const name of keys) {
        informer.upsert({ metadata: { namespace: 'ns', name, resourceVersion: String(round) } });
        lastAddedAt.set(name, tick);
      }
      await new Promise((r) => setImmediate(r));
    }
    await eventually(() => controller.queue.len() === 0 && controller.queue.inFlight() === 0, { ...IN_PROCESS, description: 'queue to empty' });
    ac.abort();
    await running;
    expect(maxPerKey, 'one key on two workers at once').to.equal(1);
    expect(maxOverall, 'the workers did run in parallel').to.be.greaterThan(1);
    for (const name of keys) {
      expect(lastStartedAt.get(name) ?? 0, `${name} reconciled after its last add`).to.be.greaterThan(lastAddedAt.get(name) ?? 0);
      expect(runs.get(name) ?? 0, `${name} merged adds`).to.be.lessThan(50);
    }
  });
});
