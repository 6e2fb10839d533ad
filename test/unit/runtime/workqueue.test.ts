import { expect } from 'chai';
import { FakeClock } from '../../../operator/runtime/clock';
import { ControllerBuilder } from '../../../operator/runtime/controller';
import {
  ItemExponentialRateLimiter,
  MaxOfRateLimiter,
  TokenBucketRateLimiter,
  defaultControllerRateLimiter,
} from '../../../operator/runtime/rate-limiter';
import { done, type Reconciler } from '../../../operator/runtime/reconcile';
import { WorkQueue, type WorkQueueMetrics, type WorkQueueMetricsProvider } from '../../../operator/runtime/workqueue';
import { FakeInformerSource, captureLogger, eventually, settle, testKind } from './fakes';

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

  const bucketCases: Record<string, { qps: number; burst: number; steps: Array<[advanceMs: number, expected: number]> }> =
    {
      'burst is free': { qps: 10, burst: 3, steps: [[0, 0], [0, 0], [0, 0]] },
      'past the burst each request waits one more token': {
        qps: 10,
        burst: 2,
        steps: [[0, 0], [0, 0], [0, 100], [0, 200]],
      },
      'tokens refill over time up to the burst': {
        qps: 10,
        burst: 2,
        steps: [[0, 0], [0, 0], [0, 100], [10_000, 0], [0, 0], [0, 100]],
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
        maxOverall = Math.max(maxOverall, [...inFlight.values()].reduce((a, b) => a + b, 0));
        lastStartedAt.set(k, ++tick);
        await new Promise((r) => setImmediate(r));
        await new Promise((r) => setImmediate(r));
        inFlight.set(k, (inFlight.get(k) ?? 0) - 1);
        runs.set(k, (runs.get(k) ?? 0) + 1);
        return done();
      },
    };
    const { logger } = captureLogger();
    const controller = new ControllerBuilder('loop', { informers: source, logger })
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
    await eventually(() => controller.queue.len() === 0 && controller.queue.inFlight() === 0, 2000, 'queue to empty');
    ac.abort();
    await running;
    expect(maxPerKey, 'one key on two workers at once').to.equal(1);
    expect(maxOverall, 'the workers did run in parallel').to.be.greaterThan(1);
    for (const name of keys) {
      expect(lastStartedAt.get(name) ?? 0, `${name} reconciled after its last add`).to.be.greaterThan(
        lastAddedAt.get(name) ?? 0,
      );
      expect(runs.get(name) ?? 0, `${name} merged adds`).to.be.lessThan(50);
    }
  });
});
