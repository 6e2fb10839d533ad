import { FakeClock } from '../../support/fake-clock';
import { expect } from 'chai';
import { TokenBucket } from '../../../operator/provider-client/rate-limiter';
import { sleep } from '../../../operator/runtime/clock';
import { newControllerManagedBy, type ControllerBuilder } from '../../../operator/runtime/builder';
import { ReconcileTimeoutError, type Controller } from '../../../operator/runtime/controller';
import { InformerFactory } from '../../../operator/runtime/informer-factory';
import { Metrics } from '../../../operator/runtime/metrics';
import { generationChanged } from '../../../operator/runtime/predicates';
import { defaultControllerRateLimiter } from '../../../operator/runtime/rate-limiter';
import {
  TerminalError,
  done,
  requeueAfter,
  type Action,
  type ReconcileContext,
  type Reconciler,
  type Request,
} from '../../../operator/runtime/reconcile';
import type { KubeObject } from '../../../operator/runtime/types';
import { Priority } from '../../../operator/runtime/workqueue';
import { FakeListerWatcher } from './fake-lister-watcher';
import { FakeInformerSource, captureLogger, settle, standalone, testKind, type FakeInformer } from './fakes';
import { eventually, IN_PROCESS } from '../../support/eventually';

const Widget = testKind('Widget');
const Part = testKind('Part');
const Config = { group: '', version: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true };

type Step = (req: Request, ctx: ReconcileContext) => Promise<Action> | Action;

/** A reconciler that records its calls and replays `steps` (the last one repeats). */
function scripted(...steps: Step[]): Reconciler & { calls: Array<{ req: Request; ctx: ReconcileContext }> } {
  const calls: Array<{ req: Request; ctx: ReconcileContext }> = [];
  return {
    calls,
    async reconcile(req, ctx) {
      calls.push({ req, ctx });
      const step = steps[Math.min(calls.length - 1, steps.length - 1)];
      if (!step) return done();
      return step(req, ctx);
    },
  };
}

function widget(name: string, extra: Partial<NonNullable<KubeObject['metadata']>> = {}): KubeObject {
  return { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { namespace: 'ns', name, generation: 1, ...extra } };
}

interface Harness {
  controller: Controller;
  source: FakeInformerSource;
  clock: FakeClock;
  metrics: Metrics;
  lines: Array<Record<string, unknown>>;
  stop(): Promise<void>;
}

function harness(
  reconciler: Reconciler,
  build: (b: ControllerBuilder) => ControllerBuilder = (b) => b.for(Widget),
  options: { reconcileTimeoutMs?: number; maxConcurrentReconciles?: number } = {},
  source = new FakeInformerSource(),
): Harness {
  const clock = new FakeClock();
  const metrics = new Metrics({ defaultMetrics: false });
  const { logger, lines } = captureLogger();
  const controller = build(newControllerManagedBy(standalone({ informers: source, logger, metrics, clock }), 'widgets'))
    .withOptions({ ...options, rateLimiter: defaultControllerRateLimiter({ clock }) })
    .complete(reconciler);
  const ac = new AbortController();
  const running = controller.start(ac.signal);
  return {
    controller,
    source,
    clock,
    metrics,
    lines,
    stop: async () => {
      ac.abort();
      await running;
    },
  };
}

async function metricValue(metrics: Metrics, name: string, labels: Record<string, string>): Promise<number> {
  const m = metrics.registry.getSingleMetric(name);
  const values = (await m?.get())?.values ?? [];
  const found = values.find((v) => Object.entries(labels).every(([k, val]) => v.labels[k] === val));
  return found?.value ?? 0;
}

/**
 * A reconciler that holds each reconcile until the test calls `finish()`, so the test
 * decides when the single worker takes its next key; `order` is the keys in the order
 * they were reconciled. `steps` gives per-name results (the last one repeats).
 */
function oneAtATime(steps: Record<string, Step[]> = {}): Reconciler & { order: string[]; finish(): Promise<void> } {
  const order: string[] = [];
  const counts = new Map<string, number>();
  let release: (() => void) | undefined;
  return {
    order,
    async reconcile(req, ctx) {
      order.push(req.name);
      await new Promise<void>((resolve) => {
        release = resolve;
      });
      const n = counts.get(req.name) ?? 0;
      counts.set(req.name, n + 1);
      const list = steps[req.name] ?? [];
      const step = list[Math.min(n, list.length - 1)];
      return step ? step(req, ctx) : done();
    },
    async finish() {
      const current = release;
      release = undefined;
      current?.();
      await settle();
    },
  };
}

describe('Controller', () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.stop();
    h = undefined;
  });

  it('enqueues the cached primaries on start and reconciles each once', async () => {
    const r = scripted(() => done());
    const source = new FakeInformerSource();
    source.informer(Widget).objects.set('ns/a', widget('a'));
    source.informer(Widget).objects.set('ns/b', widget('b'));
    const { logger } = captureLogger();
    const c = newControllerManagedBy(standalone({ informers: source, logger }), 'widgets')
      .for(Widget)
      .complete(r);
    const ac = new AbortController();
    const running = c.start(ac.signal);
    await eventually(() => r.calls.length === 2, IN_PROCESS);
    ac.abort();
    await running;
    expect(r.calls.map((c) => c.req)).to.deep.equal([
      { namespace: 'ns', name: 'a' },
      { namespace: 'ns', name: 'b' },
    ]);
  });

  it('forgets a successful key and counts it as success', async () => {
    const r = scripted(() => done());
    h = harness(r);
    h.source.informer(Widget).upsert(widget('a'));
    await eventually(() => r.calls.length === 1, IN_PROCESS);
    await settle();
    expect(h.controller.queue.numRequeues('ns/a')).to.equal(0);
    expect(await metricValue(h.metrics, 'controller_runtime_reconcile_total', { result: 'success' })).to.equal(1);
  });

  it('retries a thrown error with exponential backoff, then forgets on success', async () => {
    const boom = (): never => {
      throw new Error('boom');
    };
    const r = scripted(boom, boom, () => done());
    h = harness(r);
    h.source.informer(Widget).upsert(widget('a'));
    await eventually(() => r.calls.length === 1, IN_PROCESS);
    await settle();
    h.clock.advance(4);
    await settle();
    expect(r.calls.length, 'not before the 5 ms backoff').to.equal(1);
    h.clock.advance(1);
    await eventually(() => r.calls.length === 2, IN_PROCESS);
    await settle();
    h.clock.advance(9);
    await settle();
    expect(r.calls.length, 'second backoff is 10 ms').to.equal(2);
    h.clock.advance(1);
    await eventually(() => r.calls.length === 3, IN_PROCESS);
    await settle();
    expect(h.controller.queue.numRequeues('ns/a')).to.equal(0);
    expect(await metricValue(h.metrics, 'controller_runtime_reconcile_errors_total', {})).to.equal(2);
    expect(await metricValue(h.metrics, 'workqueue_retries_total', { name: 'widgets' })).to.equal(2);
  });

  it('does not retry a TerminalError (also when wrapped) but counts it', async () => {
    const r = scripted(() => {
      throw new Error('cannot create widget ns/a', { cause: new TerminalError('spec.size is invalid') });
    });
    h = harness(r);
    h.source.informer(Widget).upsert(widget('a'));
    await eventually(() => r.calls.length === 1, IN_PROCESS);
    await settle();
    h.clock.advance(10 * 60_000);
    await settle();
    expect(r.calls.length).to.equal(1);
    expect(h.clock.pending(), 'nothing scheduled').to.equal(0);
    expect(await metricValue(h.metrics, 'controller_runtime_terminal_reconcile_errors_total', {})).to.equal(1);
    expect(await metricValue(h.metrics, 'controller_runtime_reconcile_errors_total', {})).to.equal(1);
    h.source.informer(Widget).upsert(widget('a', { generation: 2 }));
    await eventually(() => r.calls.length === 2, { ...IN_PROCESS, description: 'a change to re-trigger it' });
  });

  it('honours requeueAfter and resets the backoff', async () => {
    const r = scripted(
      () => requeueAfter(30_000),
      () => done(),
    );
    h = harness(r);
    h.source.informer(Widget).upsert(widget('a'));
    await eventually(() => r.calls.length === 1, IN_PROCESS);
    await settle();
    h.clock.advance(29_999);
    await settle();
    expect(r.calls.length).to.equal(1);
    h.clock.advance(1);
    await eventually(() => r.calls.length === 2, IN_PROCESS);
    expect(await metricValue(h.metrics, 'controller_runtime_reconcile_total', { result: 'requeue_after' })).to.equal(1);
  });

  it('aborts the signal of a reconcile that outlives its timeout and retries it as an error', async () => {
    let abortedWith: unknown;
    const r = scripted(
      (_req, ctx) =>
        new Promise<Action>((_resolve, reject) => {
          ctx.signal.addEventListener('abort', () => {
            abortedWith = ctx.signal.reason;
            reject(ctx.signal.reason instanceof Error ? ctx.signal.reason : new Error('aborted'));
          });
        }),
      () => done(),
    );
    h = harness(r, undefined, { reconcileTimeoutMs: 1000 });
    h.source.informer(Widget).upsert(widget('a'));
    await eventually(() => r.calls.length === 1, IN_PROCESS);
    h.clock.advance(999);
    await settle();
    expect(abortedWith).to.equal(undefined);
    h.clock.advance(1);
    await eventually(() => abortedWith !== undefined, IN_PROCESS);
    expect(abortedWith).to.be.instanceOf(ReconcileTimeoutError);
    await settle();
    h.clock.advance(5);
    await eventually(() => r.calls.length === 2, { ...IN_PROCESS, description: 'the retry' });
    const errors = h.lines.filter((l) => l.msg === 'Reconciler error');
    expect(errors).to.have.length(1);
    expect((errors[0]?.err as { type?: string }).type).to.equal('ReconcileTimeoutError');
  });

  it('counts a reconcile that ignores the abort but finishes after the timeout as an error', async () => {
    let release: (() => void) | undefined;
    const r = scripted(
      () =>
        new Promise<Action>((resolve) => {
          release = () => resolve(done());
        }),
      () => done(),
    );
    h = harness(r, undefined, { reconcileTimeoutMs: 100 });
    h.source.informer(Widget).upsert(widget('a'));
    await eventually(() => r.calls.length === 1, IN_PROCESS);
    h.clock.advance(100);
    release?.();
    await eventually(() => h?.lines.some((l) => l.msg === 'Reconciler error') ?? false, IN_PROCESS);
    expect(await metricValue(h.metrics, 'controller_runtime_reconcile_total', { result: 'error' })).to.equal(1);
  });

  const throwers: Record<string, Reconciler['reconcile']> = {
    'a synchronous throw': () => {
      throw new Error('sync boom');
    },
    'a rejection': () => Promise.reject(new Error('async boom')),
    'a thrown non-Error': () => {
      throw 'a string';
    },
    'an invalid Action': () => Promise.resolve({ type: 'requeue' } as unknown as Action),
  };
  for (const [name, reconcile] of Object.entries(throwers)) {
    it(`keeps its single worker alive after ${name}`, async () => {
      const seen: string[] = [];
      const r: Reconciler = {
        reconcile(req, ctx) {
          seen.push(req.name);
          return req.name === 'bad' ? reconcile(req, ctx) : Promise.resolve(done());
        },
      };
      h = harness(r, undefined, { maxConcurrentReconciles: 1 });
      h.source.informer(Widget).upsert(widget('bad'));
      h.source.informer(Widget).upsert(widget('good'));
      await eventually(() => seen.includes('good'), IN_PROCESS);
      const errors = h.lines.filter((l) => l.msg === 'Reconciler error');
      expect(errors).to.have.length(1);
    });
  }

  it('logs one line per failure carrying err, controller, namespace, name and reconcileID', async () => {
    const r = scripted(() => {
      throw new Error('boom');
    });
    h = harness(r);
    h.source.informer(Widget).upsert(widget('a'));
    await eventually(() => r.calls.length === 1, IN_PROCESS);
    await settle();
    const errors = h.lines.filter((l) => l.level === 50);
    expect(errors).to.have.length(1);
    const line = errors[0] ?? {};
    expect(line).to.include({ controller: 'widgets', namespace: 'ns', name: 'a', reconcileID: r.calls[0]?.ctx.reconcileID });
    expect((line.err as { message?: string }).message).to.equal('boom');
  });

  it('gives each reconcile a fresh id and a logger bound to it', async () => {
    const r = scripted(() => requeueAfter(1));
    h = harness(r);
    h.source.informer(Widget).upsert(widget('a'));
    await eventually(() => r.calls.length === 1, IN_PROCESS);
    await settle();
    h.clock.advance(1);
    await eventually(() => r.calls.length === 2, IN_PROCESS);
    const [first, second] = r.calls.map((c) => c.ctx.reconcileID);
    expect(first).to.be.a('string').and.not.equal(second);
  });

  it('still enqueues a deleted object so the reconciler can see it is gone', async () => {
    const seenAbsent: boolean[] = [];
    const source = new FakeInformerSource();
    const informer = source.informer(Widget);
    const r: Reconciler = {
      async reconcile(req) {
        seenAbsent.push(informer.cache.get(req) === undefined);
        return done();
      },
    };
    const { logger } = captureLogger();
    const c = newControllerManagedBy(standalone({ informers: source, logger }), 'widgets')
      .for(Widget)
      .complete(r);
    const ac = new AbortController();
    const running = c.start(ac.signal);
    await settle();
    informer.upsert(widget('a'));
    await eventually(() => seenAbsent.length === 1, IN_PROCESS);
    informer.remove(widget('a'));
    await eventually(() => seenAbsent.length === 2, IN_PROCESS);
    ac.abort();
    await running;
    expect(seenAbsent).to.deep.equal([false, true]);
  });

  it('applies For predicates to updates only: status writes are dropped, deletion and spec changes pass', async () => {
    const r = scripted(() => done());
    h = harness(r, (b) => b.for(Widget, { predicates: [generationChanged] }));
    const inf = h.source.informer(Widget);
    inf.upsert(widget('a', { resourceVersion: '1' }));
    await eventually(() => r.calls.length === 1, IN_PROCESS);
    inf.upsert(widget('a', { resourceVersion: '2' }));
    await settle(10);
    expect(r.calls.length, 'status-only update dropped').to.equal(1);
    inf.upsert(widget('a', { resourceVersion: '3', generation: 2 }));
    await eventually(() => r.calls.length === 2, { ...IN_PROCESS, description: 'spec change' });
    inf.upsert(widget('a', { resourceVersion: '4', generation: 2, deletionTimestamp: new Date() }));
    await eventually(() => r.calls.length === 3, { ...IN_PROCESS, description: 'deletion' });
  });

  it('owns(): enqueues the controlling owner of the For kind, ignoring other references', async () => {
    const r = scripted(() => done());
    h = harness(r, (b) => b.for(Widget).owns(Part));
    // Secondary events before start are dropped by design (start seeds from the primaries).
    await settle();
    const part = (name: string, refs: NonNullable<KubeObject['metadata']>['ownerReferences']): KubeObject => ({
      metadata: { namespace: 'ns', name, ownerReferences: refs },
    });
    const parts = h.source.informer(Part);
    parts.upsert(part('p1', [{ apiVersion: 'example.com/v1', kind: 'Widget', name: 'owner', uid: 'u', controller: true }]));
    parts.upsert(part('p2', [{ apiVersion: 'example.com/v1', kind: 'Widget', name: 'not-controller', uid: 'u' }]));
    parts.upsert(part('p3', [{ apiVersion: 'other.io/v1', kind: 'Widget', name: 'other-group', uid: 'u', controller: true }]));
    parts.upsert(part('p4', [{ apiVersion: 'example.com/v2', kind: 'Widget', name: 'any-version', uid: 'u', controller: true }]));
    await eventually(() => r.calls.length === 2, IN_PROCESS);
    await settle(10);
    expect(r.calls.map((c) => c.req.name).sort()).to.deep.equal(['any-version', 'owner']);
  });

  it('watches(): enqueues the keys the map function returns, for old and new objects', async () => {
    const r = scripted(() => done());
    h = harness(r, (b) =>
      b.for(Widget).watches(Config, (cm: KubeObject & { data?: Record<string, string> }) =>
        (cm.data?.users ?? '')
          .split(',')
          .filter(Boolean)
          .map((name) => ({ namespace: 'ns', name })),
      ),
    );
    await settle();
    const cms = h.source.informer(Config);
    const cm = (users: string): KubeObject => ({ metadata: { namespace: 'ns', name: 'cfg' }, data: { users } }) as KubeObject;
    cms.upsert(cm('w1,w2'));
    await eventually(() => r.calls.length === 2, IN_PROCESS);
    cms.upsert(cm('w3'));
    await eventually(() => r.calls.length === 5, { ...IN_PROCESS, description: 'old (w1, w2) and new (w3) targets' });
    expect(new Set(r.calls.map((c) => c.req.name))).to.deep.equal(new Set(['w1', 'w2', 'w3']));
  });

  it('watches() with delayMs: a burst of events becomes one reconcile of the mapped key, after the delay', async () => {
    const r = scripted(() => done());
    h = harness(r, (b) => b.for(Widget).watches(Part, () => [{ namespace: 'ns', name: 'owner' }], { delayMs: 1000 }));
    await settle();
    const parts = h.source.informer(Part);
    for (let i = 0; i < 50; i++) parts.upsert({ metadata: { namespace: 'ns', name: `p${i}` } } as KubeObject);
    await settle();
    expect(r.calls.length, 'nothing before the delay').to.equal(0);
    h.clock.advance(1000);
    await eventually(() => r.calls.length === 1, IN_PROCESS);
    await settle();
    expect(r.calls.map((c) => c.req.name)).to.deep.equal(['owner']);
  });

  it('stop() drains in-flight reconciles before resolving', async () => {
    let finish: (() => void) | undefined;
    let signal: AbortSignal | undefined;
    const r = scripted((_req, ctx) => {
      signal = ctx.signal;
      return new Promise<Action>((resolve) => {
        finish = () => resolve(done());
      });
    });
    h = harness(r);
    h.source.informer(Widget).upsert(widget('a'));
    await eventually(() => finish !== undefined, IN_PROCESS);
    let stopped: boolean | undefined;
    const stopping = h.controller.stop().then((v) => {
      stopped = v;
    });
    await settle();
    expect(stopped, 'still draining').to.equal(undefined);
    finish?.();
    await stopping;
    expect(stopped).to.equal(true);
    expect(signal?.aborted).to.equal(false);
  });

  it('stop(0) aborts in-flight reconciles at once and takes no new work', async () => {
    let signal: AbortSignal | undefined;
    const r = scripted(
      (_req, ctx) =>
        new Promise<Action>((_resolve, reject) => {
          signal = ctx.signal;
          ctx.signal.addEventListener('abort', () => reject(new Error('aborted', { cause: ctx.signal.reason })));
        }),
    );
    h = harness(r);
    const inf = h.source.informer(Widget);
    inf.upsert(widget('a'));
    await eventually(() => signal !== undefined, IN_PROCESS);
    await h.controller.stop(0);
    expect(signal?.aborted).to.equal(true);
    inf.upsert(widget('b'));
    await settle(10);
    expect(r.calls.map((c) => c.req.name)).to.deep.equal(['a']);
    expect(
      h.lines.filter((l) => l.msg === 'Reconciler error'),
      'aborts by stop are not errors',
    ).to.have.length(0);
  });

  it('sets the worker gauges', async () => {
    let finish: (() => void) | undefined;
    const r = scripted(
      () =>
        new Promise<Action>((resolve) => {
          finish = () => resolve(done());
        }),
    );
    h = harness(r, undefined, { maxConcurrentReconciles: 3 });
    h.source.informer(Widget).upsert(widget('a'));
    await eventually(() => finish !== undefined, IN_PROCESS);
    expect(await metricValue(h.metrics, 'controller_runtime_active_workers', {})).to.equal(1);
    expect(await metricValue(h.metrics, 'controller_runtime_max_concurrent_reconciles', {})).to.equal(3);
    finish?.();
    await eventually(() => h?.controller.queue.inFlight() === 0, IN_PROCESS);
    expect(await metricValue(h.metrics, 'controller_runtime_active_workers', {})).to.equal(0);
  });

  describe('priorities: new work first', () => {
    const backlog = ['b0', 'b1', 'b2', 'b3'];

    /** Starts a one-worker controller whose cache holds `backlog` (its initial list). */
    async function startWithBacklog(r: ReturnType<typeof oneAtATime>): Promise<FakeInformer<KubeObject>> {
      const source = new FakeInformerSource();
      const informer = source.informer(Widget);
      for (const name of backlog) informer.objects.set(`ns/${name}`, widget(name, { resourceVersion: '1' }));
      h = harness(r, (b) => b.for(Widget), { maxConcurrentReconciles: 1 }, source);
      await eventually(() => r.order.length === 1, { ...IN_PROCESS, description: 'b0 to start' });
      return informer;
    }

    /** Lets reconciles finish one by one until `total` have started, then finishes the last. */
    async function finishAll(r: ReturnType<typeof oneAtATime>, total: number): Promise<void> {
      while (r.order.length < total) {
        const started = r.order.length;
        await r.finish();
        await eventually(() => r.order.length > started, { ...IN_PROCESS, description: `reconcile ${started + 1}` });
      }
      await r.finish();
    }

    const eventCases: Record<string, { fire(inf: FakeInformer<KubeObject>): void; want: 'before' | 'after' }> = {
      'a create seen after start goes before the initial list': {
        fire: (inf) => inf.upsert(widget('x', { resourceVersion: '5' })),
        want: 'before',
      },
      'an add from an initial list goes behind it': {
        fire: (inf) => inf.upsert(widget('x', { resourceVersion: '5' }), { initialList: true }),
        want: 'after',
      },
      'a spec update goes before the initial list': {
        fire: (inf) => {
          inf.objects.set('ns/x', widget('x', { resourceVersion: '5' }));
          inf.upsert(widget('x', { resourceVersion: '6', generation: 2 }));
        },
        want: 'before',
      },
      'an annotation update goes before the initial list': {
        fire: (inf) => {
          inf.objects.set('ns/x', widget('x', { resourceVersion: '5' }));
          inf.upsert(widget('x', { resourceVersion: '6', annotations: { paused: 'true' } }));
        },
        want: 'before',
      },
      'an update that changed nothing (a resync) goes behind it': {
        fire: (inf) => {
          inf.objects.set('ns/x', widget('x', { resourceVersion: '5' }));
          inf.upsert(widget('x', { resourceVersion: '5' }));
        },
        want: 'after',
      },
      'a delete goes before the initial list': {
        fire: (inf) => {
          inf.objects.set('ns/x', widget('x', { resourceVersion: '5' }));
          inf.remove(widget('x', { resourceVersion: '5' }));
        },
        want: 'before',
      },
    };
    for (const [name, tc] of Object.entries(eventCases)) {
      it(name, async () => {
        const r = oneAtATime();
        const inf = await startWithBacklog(r);
        tc.fire(inf);
        await finishAll(r, backlog.length + 1);
        const rest = backlog.slice(1);
        expect(r.order).to.deep.equal(tc.want === 'before' ? ['b0', 'x', ...rest] : ['b0', ...rest, 'x']);
      });
    }

    it('through a real informer: the listed objects wait behind one the watch then reports', async () => {
      const lw = new FakeListerWatcher();
      for (const name of backlog) lw.put(name);
      const { logger } = captureLogger();
      const informers = new InformerFactory({ lw, logger, reflector: { backoff: { initialMs: 2, maxMs: 10 } } });
      const r = oneAtATime();
      const c = newControllerManagedBy(standalone({ informers, logger }), 'widgets').for(Widget).complete(r);
      informers.start();
      const ac = new AbortController();
      const running = c.start(ac.signal);
      try {
        await eventually(() => r.order.length === 1 && lw.current !== undefined, { ...IN_PROCESS, description: 'first reconcile and the watch' });
        lw.current?.send('ADDED', lw.put('x'));
        await eventually(() => c.queue.len() === backlog.length, { ...IN_PROCESS, description: 'x queued' });
        await finishAll(r, backlog.length + 1);
        expect(r.order[1], 'the watched create goes next').to.equal('x');
        expect([...r.order].sort()).to.deep.equal([...backlog, 'x'].sort());
      } finally {
        ac.abort();
        await running;
        await informers.stop();
      }
    });

    const requeueCases: Record<string, { steps: Step[]; want: 'before' | 'after' }> = {
      'a requeueAfter re-check waits behind the backlog': {
        steps: [() => requeueAfter(10), () => done()],
        want: 'after',
      },
      'a requeueAfter naming Priority.Normal goes before the backlog': {
        steps: [() => requeueAfter(10, { priority: Priority.Normal }), () => done()],
        want: 'before',
      },
      'an error retry keeps the priority of the create': {
        steps: [
          () => {
            throw new Error('boom');
          },
          () => done(),
        ],
        want: 'before',
      },
    };
    for (const [name, tc] of Object.entries(requeueCases)) {
      it(name, async () => {
        const r = oneAtATime({ x: tc.steps });
        const inf = await startWithBacklog(r);
        inf.upsert(widget('x', { resourceVersion: '5' }));
        await r.finish(); // b0
        await eventually(() => r.order.length === 2, { ...IN_PROCESS, description: 'x' });
        await r.finish(); // x, which requeues itself
        await eventually(() => r.order.length === 3, { ...IN_PROCESS, description: 'b1' });
        h?.clock.advance(10); // past both the requeueAfter and the first backoff
        await finishAll(r, backlog.length + 2);
        const rest = backlog.slice(2);
        expect(r.order).to.deep.equal(tc.want === 'before' ? ['b0', 'x', 'b1', 'x', ...rest] : ['b0', 'x', 'b1', ...rest, 'x']);
      });
    }

    it('requeueAfter carries a priority only when given one, and only an integer', () => {
      expect(requeueAfter(5)).to.deep.equal({ type: 'requeueAfter', afterMs: 5 });
      expect(requeueAfter(5, { priority: Priority.Normal })).to.deep.equal({ type: 'requeueAfter', afterMs: 5, priority: 0 });
      expect(() => requeueAfter(5, { priority: 0.5 })).to.throw(RangeError);
    });

    it('tells the reconciler the priority its key was queued at', async () => {
      const r = scripted(() => done());
      const source = new FakeInformerSource();
      source.informer(Widget).objects.set('ns/old', widget('old'));
      h = harness(r, undefined, {}, source);
      await eventually(() => r.calls.length === 1, IN_PROCESS);
      source.informer(Widget).upsert(widget('new'));
      await eventually(() => r.calls.length === 2, IN_PROCESS);
      expect(r.calls.map((c) => [c.req.name, c.ctx.priority])).to.deep.equal([
        ['old', Priority.Low],
        ['new', Priority.Normal],
      ]);
    });

    it('an error retry of an initial-list key stays behind new work', async () => {
      const r = oneAtATime({
        b0: [
          () => {
            throw new Error('boom');
          },
          () => done(),
        ],
      });
      const inf = await startWithBacklog(r);
      await r.finish(); // b0 fails
      await eventually(() => r.order.length === 2, { ...IN_PROCESS, description: 'b1' });
      h?.clock.advance(5);
      inf.upsert(widget('x', { resourceVersion: '5' }));
      await finishAll(r, backlog.length + 2);
      expect(r.order).to.deep.equal(['b0', 'b1', 'x', 'b2', 'b3', 'b0']);
    });
  });

  it('a noisy tenant throttled by its account limiter does not keep a quiet tenant from a worker', async () => {
    // 8 workers, 5,000 new keys of one namespace whose provider account allows 20 calls/s
    // (two calls per reconcile, as observe plus act), then one key of another namespace with
    // an account of its own. The workers all sit in the noisy limiter, but each for at most
    // (waiters / qps): the limiter's queue is as long as the workers, not as the backlog.
    const noisy: { account?: TokenBucket } = {};
    const started: string[] = [];
    const reconciler: Reconciler = {
      async reconcile(req, ctx) {
        started.push(`${req.namespace}/${req.name}`);
        if (req.namespace === 'noisy') {
          await noisy.account?.take(ctx.signal);
          await noisy.account?.take(ctx.signal);
        }
        return done();
      },
    };
    h = harness(reconciler, (b) => b.for(Widget), { maxConcurrentReconciles: 8 });
    const clock = h.clock;
    const noisyAccount = (noisy.account = new TokenBucket({
      qps: 20,
      burst: 1,
      now: () => clock.now(),
      sleep: (ms, signal) => sleep(clock, ms, signal),
    }));
    await settle();
    const informer = h.source.informer(Widget);
    for (let i = 0; i < 5_000; i++) informer.upsert(widget(`b-${i}`, { namespace: 'noisy' }));
    await settle();
    expect(noisyAccount.waiting, 'every worker waits in the noisy limiter').to.equal(8);
    try {
      const addedAt = started.length;
      const addedAtMs = h.clock.now();
      informer.upsert(widget('b-0', { namespace: 'quiet' }));
      for (let i = 0; i < 400 && !started.includes('quiet/b-0'); i++) {
        h.clock.advance(50);
        await settle();
      }
      const at = started.indexOf('quiet/b-0');
      expect(at, 'the quiet key was reconciled').to.be.greaterThan(-1);
      expect(at - addedAt, 'hand-outs before the quiet key').to.be.at.most(2);
      expect(h.clock.now() - addedAtMs, 'ms (fake) until a worker took it').to.be.at.most(1000);
    } finally {
      // Abort the reconciles still waiting for noisy tokens, so the harness can stop.
      await h.controller.stop(0);
    }
  });

  it('rejects misuse at build time', () => {
    const { logger } = captureLogger();
    const mgr = standalone({ informers: new FakeInformerSource(), logger });
    expect(() => newControllerManagedBy(mgr, 'Bad_Name')).to.throw(/RFC 1123/);
    expect(() => newControllerManagedBy(mgr, 'x').owns(Part)).to.throw(/for\(\)/);
    expect(() => newControllerManagedBy(mgr, 'x').complete(scripted())).to.throw(/for\(\)/);
    expect(() => newControllerManagedBy(mgr, 'x').for(Widget).withOptions({ maxConcurrentReconciles: 0 }).complete(scripted())).to.throw(
      /maxConcurrentReconciles/,
    );
  });
});
