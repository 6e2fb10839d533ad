import { FakeClock } from '../../support/fake-clock';
import { expect } from 'chai';
import { pino, type Logger } from 'pino';
import { ApiError } from '../../../operator/runtime/api-errors';

import { InformerFactory } from '../../../operator/runtime/informer-factory';
import { SharedInformer } from '../../../operator/runtime/informer';
import { Backoff, backoffDelay, watchTimeoutSeconds } from '../../../operator/runtime/reflector';
import type { KubeObject, ResourceKind, Transform } from '../../../operator/runtime/types';
import { FakeListerWatcher } from './fake-lister-watcher';
import { eventually, IN_PROCESS } from '../../support/eventually';

const kind: ResourceKind = { group: '', version: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true };
const fastBackoff = { initialMs: 2, maxMs: 10 };

function captureLogger(): { logger: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'debug' }, { write: (s: string) => lines.push(JSON.parse(s) as Record<string, unknown>) });
  return { logger, lines };
}

type Seen = string[];

function recorder(informer: SharedInformer<KubeObject>, seen: Seen): void {
  informer.addEventHandler({
    onAdd: (o) => seen.push(`add ${o.metadata?.name}`),
    onUpdate: (a, b) => seen.push(`update ${b.metadata?.name} ${a.metadata?.resourceVersion}->${b.metadata?.resourceVersion}`),
    onDelete: (o) => seen.push(`delete ${o.metadata?.name}`),
  });
}

const names = (i: SharedInformer<KubeObject>): string[] =>
  i.cache
    .list()
    .map((o) => o.metadata?.name ?? '')
    .sort();

describe('SharedInformer', () => {
  let informer: SharedInformer<KubeObject> | undefined;
  afterEach(async () => {
    await informer?.stop();
    informer = undefined;
  });

  function make(
    lw: FakeListerWatcher,
    extra: { resyncPeriodMs?: number; idleTimeoutMs?: number; logger?: Logger; transform?: Transform } = {},
  ): SharedInformer<KubeObject> {
    informer = new SharedInformer<KubeObject>({
      lw,
      kind,
      namespace: 'ns',
      logger: extra.logger ?? pino({ level: 'silent' }),
      resyncPeriodMs: extra.resyncPeriodMs,
      transform: extra.transform,
      reflector: { backoff: fastBackoff, idleTimeoutMs: extra.idleTimeoutMs },
    });
    return informer;
  }

  it('lists, syncs, then applies watch events to the cache before calling handlers', async () => {
    const lw = new FakeListerWatcher();
    lw.put('a');
    const inf = make(lw);
    const seen: Seen = [];
    const inCacheWhenNotified: boolean[] = [];
    inf.addEventHandler({
      onAdd: (o) => inCacheWhenNotified.push(inf.cache.get({ namespace: 'ns', name: o.metadata?.name ?? '' }) === o),
    });
    recorder(inf, seen);
    inf.start();
    await inf.waitForSync();
    expect(inf.hasSynced()).to.equal(true);
    await eventually(() => expect(inf.isWatching()).to.equal(true), IN_PROCESS);
    expect(lw.current?.opts.resourceVersion).to.equal(lw.version());
    expect(lw.current?.opts.allowWatchBookmarks).to.equal(true);

    lw.current?.send('ADDED', lw.put('b'));
    const a2 = lw.put('a', { k: 'v' });
    lw.current?.send('MODIFIED', a2);
    lw.current?.send('DELETED', lw.objects.get('b') ?? {});
    await eventually(() => expect(seen).to.have.length(4), IN_PROCESS);
    expect(seen).to.deep.equal(['add a', 'add b', 'update a 101->103', 'delete b']);
    expect(names(inf)).to.deep.equal(['a']);
    expect(inCacheWhenNotified).to.deep.equal([true, true]);
  });

  it('relists on 410 and emits the deletes, adds and updates it missed, nothing for unchanged objects', async () => {
    const lw = new FakeListerWatcher();
    lw.put('keep');
    lw.put('change');
    lw.put('vanish');
    const inf = make(lw);
    const seen: Seen = [];
    recorder(inf, seen);
    inf.start();
    await inf.waitForSync();
    await eventually(() => expect(lw.current).to.not.equal(undefined), IN_PROCESS);
    seen.length = 0;

    lw.objects.delete('vanish');
    lw.put('change', { x: '1' });
    lw.put('new');
    lw.current?.fail(new ApiError(410, 'Expired', 'too old resource version'));

    await eventually(() => expect(lw.lists).to.equal(2), IN_PROCESS);
    await eventually(() => expect(seen).to.have.length(3), IN_PROCESS);
    expect(seen).to.deep.equal(['delete vanish', 'add new', 'update change 102->104']);
    expect(names(inf)).to.deep.equal(['change', 'keep', 'new']);
    await eventually(() => expect(lw.watches).to.have.length(2), IN_PROCESS);
    expect(lw.current?.opts.resourceVersion).to.equal(lw.version());
  });

  it('tells handlers which adds came from the initial list: the first list and a late replay, not watch or relist adds', async () => {
    const lw = new FakeListerWatcher();
    lw.put('listed');
    const inf = make(lw);
    const seen: string[] = [];
    inf.addEventHandler({ onAdd: (o, initial) => seen.push(`${o.metadata?.name} ${initial ? 'initial' : 'live'}`) });
    inf.start();
    await inf.waitForSync();
    await eventually(() => expect(lw.current).to.not.equal(undefined), IN_PROCESS);
    lw.current?.send('ADDED', lw.put('watched'));
    await eventually(() => expect(seen).to.have.length(2), IN_PROCESS);
    lw.put('missed');
    lw.current?.fail(new ApiError(410, 'Expired', 'too old resource version'));
    await eventually(() => expect(seen).to.have.length(3), IN_PROCESS);
    const late: string[] = [];
    inf.addEventHandler({ onAdd: (o, initial) => late.push(`${o.metadata?.name} ${initial ? 'initial' : 'live'}`) });
    expect(seen).to.deep.equal(['listed initial', 'watched live', 'missed live']);
    expect(late.sort()).to.deep.equal(['listed initial', 'missed initial', 'watched initial']);
  });

  it('resumes the watch from the last bookmark after a non-410 error, without relisting', async () => {
    const lw = new FakeListerWatcher();
    const inf = make(lw);
    inf.start();
    await inf.waitForSync();
    await eventually(() => expect(lw.current).to.not.equal(undefined), IN_PROCESS);
    lw.current?.send('BOOKMARK', { metadata: { resourceVersion: '555' } });
    lw.current?.fail(new Error('ECONNRESET'));
    await eventually(() => expect(lw.watches).to.have.length(2), IN_PROCESS);
    expect(lw.current?.opts.resourceVersion).to.equal('555');
    expect(lw.lists).to.equal(1);
  });

  it('keeps retrying a failing list with backoff and syncs once it succeeds', async () => {
    const lw = new FakeListerWatcher();
    lw.put('a');
    lw.listFailures.push(new ApiError(500, 'InternalError', 'etcd down'), new Error('ECONNREFUSED'));
    const inf = make(lw);
    inf.start();
    await inf.waitForSync();
    expect(lw.lists).to.equal(3);
    expect(names(inf)).to.deep.equal(['a']);
  });

  it('reconnects a watch that goes silent', async () => {
    const lw = new FakeListerWatcher();
    const inf = make(lw, { idleTimeoutMs: 30 });
    inf.start();
    await eventually(() => expect(lw.watches.length).to.be.greaterThan(1), IN_PROCESS);
    expect(lw.watches[0]?.closed).to.equal(true);
    expect(lw.lists).to.equal(1);
  });

  it('survives a throwing handler: the cache, later events and other handlers still work', async () => {
    const lw = new FakeListerWatcher();
    const { logger, lines } = captureLogger();
    const inf = make(lw, { logger });
    const seen: Seen = [];
    inf.addEventHandler({
      onAdd: () => {
        throw new Error('handler bug');
      },
    });
    recorder(inf, seen);
    inf.start();
    await inf.waitForSync();
    await eventually(() => expect(lw.current).to.not.equal(undefined), IN_PROCESS);
    lw.current?.send('ADDED', lw.put('x'));
    lw.current?.send('ADDED', lw.put('y'));
    await eventually(() => expect(seen).to.deep.equal(['add x', 'add y']), IN_PROCESS);
    expect(names(inf)).to.deep.equal(['x', 'y']);
    expect(lines.filter((l) => l.msg === 'informer event handler threw')).to.have.length(2);
    expect(lw.watches).to.have.length(1);
  });

  it('leaves out an object its transform refuses, logs its key but not the error text, and still syncs', async () => {
    // Condenses `data` to its keys, and throws on a value it cannot take, quoting it as
    // node:crypto's argument errors quote what they were given.
    const transform: Transform = (obj) => {
      const data = (obj as KubeObject & { data?: Record<string, string> }).data ?? {};
      if (data.bad !== undefined) throw new TypeError(`cannot hash ${data.bad}`);
      return { ...obj, data: Object.keys(data) };
    };
    const lw = new FakeListerWatcher();
    lw.put('a', { k: 'v' });
    lw.put('b', { bad: 's3cr3t' });
    const { logger, lines } = captureLogger();
    const inf = make(lw, { logger, transform });
    const seen: Seen = [];
    recorder(inf, seen);
    inf.start();
    // Before, the whole list failed on b and was retried for ever: no sync, no cache.
    await inf.waitForSync();
    expect(names(inf)).to.deep.equal(['a']);
    await eventually(() => expect(lw.current).to.not.equal(undefined), IN_PROCESS);

    // A refused update keeps the version cached before; a refused delete still removes.
    lw.current?.send('MODIFIED', lw.put('a', { bad: 's3cr3t' }));
    lw.current?.send('ADDED', lw.put('c', { k: 'v' }));
    await eventually(() => expect(names(inf)).to.deep.equal(['a', 'c']), IN_PROCESS);
    expect(inf.cache.get({ namespace: 'ns', name: 'a' })?.metadata?.resourceVersion).to.equal('101');
    lw.current?.send('DELETED', lw.put('c', { bad: 's3cr3t' }));
    await eventually(() => expect(names(inf)).to.deep.equal(['a']), IN_PROCESS);
    expect(seen).to.deep.equal(['add a', 'add c', 'delete c']);

    const refused = lines.filter((l) => l.msg === 'informer transform failed; the object is left out of the cache');
    expect(refused.map((l) => [l.key, l.errorClass])).to.deep.equal([
      ['ns/b', 'TypeError'],
      ['ns/a', 'TypeError'],
      ['ns/c', 'TypeError'],
    ]);
    expect(JSON.stringify(lines)).to.not.include('s3cr3t');
    expect(lw.lists).to.equal(1);
  });

  it('replays cached objects as adds to a handler registered late', async () => {
    const lw = new FakeListerWatcher();
    lw.put('a');
    lw.put('b');
    const inf = make(lw);
    inf.start();
    await inf.waitForSync();
    const seen: Seen = [];
    recorder(inf, seen);
    expect(seen.sort()).to.deep.equal(['add a', 'add b']);
  });

  it('re-delivers cached objects as updates on resync', async () => {
    const lw = new FakeListerWatcher();
    lw.put('a');
    const inf = make(lw, { resyncPeriodMs: 10 });
    const seen: Seen = [];
    recorder(inf, seen);
    inf.start();
    await eventually(() => expect(seen.filter((s) => s === 'update a 101->101').length).to.be.greaterThan(1), IN_PROCESS);
  });

  it('keeps indexes current through relists', async () => {
    const lw = new FakeListerWatcher();
    lw.put('a', { team: 't1' });
    const inf = make(lw);
    inf.cache.addIndex('team', (o) => {
      const data = (o as { data?: Record<string, string> }).data;
      return data?.team ? [data.team] : [];
    });
    inf.start();
    await inf.waitForSync();
    expect(inf.cache.byIndex('team', 't1')).to.have.length(1);
    await eventually(() => expect(lw.current).to.not.equal(undefined), IN_PROCESS);
    lw.put('a', { team: 't2' });
    lw.current?.fail(new ApiError(410, 'Gone', 'gone'));
    await eventually(() => expect(inf.cache.byIndex('team', 't2')).to.have.length(1), IN_PROCESS);
    expect(inf.cache.byIndex('team', 't1')).to.deep.equal([]);
  });

  it('waitForSync rejects when its signal aborts', async () => {
    const lw = new FakeListerWatcher();
    lw.listFailures.push(...Array.from({ length: 1000 }, () => new Error('down')));
    const inf = make(lw);
    inf.start();
    const ctrl = new AbortController();
    const waiting = inf.waitForSync(ctrl.signal);
    ctrl.abort(new Error('gave up'));
    let caught: unknown;
    await waiting.catch((err: unknown) => {
      caught = err;
    });
    expect((caught as Error).message).to.equal('gave up');
    expect(inf.hasSynced()).to.equal(false);
  });
  it('stop() fails a waitForSync that can no longer succeed', async () => {
    const lw = new FakeListerWatcher();
    lw.listFailures.push(...Array.from({ length: 1000 }, () => new Error('down')));
    const inf = make(lw);
    inf.start();
    const waiting = inf.waitForSync();
    await inf.stop();
    let caught: unknown;
    await waiting.catch((err: unknown) => {
      caught = err;
    });
    expect((caught as Error).message).to.match(/stopped before it synced/);
  });
});

describe('reflector backoff', () => {
  it('never storms: a watch the server closes at once waits out the backoff before retrying', async () => {
    const clock = new FakeClock();
    const lw = new FakeListerWatcher();
    const inf = new SharedInformer<KubeObject>({
      lw,
      kind,
      logger: pino({ level: 'silent' }),
      reflector: { clock, backoff: { initialMs: 1000, maxMs: 30_000 }, random: () => 0 },
    });
    try {
      inf.start();
      await inf.waitForSync();
      await eventually(() => expect(lw.watches).to.have.length(1), IN_PROCESS);
      lw.current?.end();
      // Closed with nothing delivered in no time: the reflector must now sleep, not re-watch.
      // Barrier: it is asleep on the clock (the watch's idle timer goes with the watch, so the one
      // timer left is its backoff), so nothing more can happen until the clock moves.
      const asleep = () =>
        eventually(() => expect({ watching: inf.isWatching(), timers: clock.pending() }).to.deep.equal({ watching: false, timers: 1 }), IN_PROCESS);
      await eventually(() => expect(lw.current?.closed).to.equal(true), IN_PROCESS);
      await asleep();
      expect(lw.watches).to.have.length(1);
      clock.advance(500);
      await eventually(() => expect(lw.watches).to.have.length(2), IN_PROCESS);
      lw.current?.end();
      await eventually(() => expect(lw.current?.closed).to.equal(true), IN_PROCESS);
      await asleep();
      clock.advance(999);
      await asleep();
      expect(lw.watches).to.have.length(2);
      clock.advance(1);
      await eventually(() => expect(lw.watches).to.have.length(3), IN_PROCESS);
    } finally {
      clock.advance(1_000_000);
      await inf.stop();
    }
  });

  const delays: Record<string, { attempt: number; random: number; want: number }> = {
    'first try, least jitter': { attempt: 0, random: 0, want: 400 },
    'first try, most jitter': { attempt: 0, random: 0.999999, want: 800 },
    'third try doubles twice': { attempt: 2, random: 0, want: 1600 },
    'capped at max': { attempt: 20, random: 0.999999, want: 30_000 },
    'huge attempt does not overflow': { attempt: 5000, random: 0, want: 15_000 },
  };
  for (const [name, tc] of Object.entries(delays)) {
    it(`backoffDelay: ${name}`, () => {
      expect(backoffDelay(tc.attempt, {}, tc.random)).to.be.closeTo(tc.want, 0.1);
    });
  }

  it('Backoff grows per failure and starts over after a quiet period', () => {
    const clock = new FakeClock();
    const b = new Backoff({ initialMs: 100, maxMs: 1000, resetAfterMs: 5000 }, clock, () => 0);
    expect([b.next(), b.next(), b.next(), b.next(), b.next()]).to.deep.equal([50, 100, 200, 400, 500]);
    clock.advance(4999);
    expect(b.next()).to.equal(500);
    clock.advance(5000);
    expect(b.next()).to.equal(50);
  });

  it('randomises the server watch timeout between min and twice min', () => {
    expect(watchTimeoutSeconds(300, 0)).to.equal(300);
    expect(watchTimeoutSeconds(300, 0.5)).to.equal(450);
    expect(watchTimeoutSeconds(300, 0.9999)).to.be.lessThan(600);
  });
});

describe('InformerFactory', () => {
  it('shares one informer per kind, namespace and selector and starts late-comers', async () => {
    const lw = new FakeListerWatcher();
    const f = new InformerFactory({ lw, logger: pino({ level: 'silent' }), reflector: { backoff: fastBackoff } });
    try {
      const a = f.informerFor(kind, { namespace: 'ns' });
      expect(f.informerFor(kind, { namespace: 'ns' })).to.equal(a);
      expect(f.informerFor(kind, { namespace: 'other' })).to.not.equal(a);
      expect(f.informerFor(kind, { namespace: 'ns', labelSelector: 'x=y' })).to.not.equal(a);
      f.start();
      const late = f.informerFor(kind, { labelSelector: 'late=1' });
      await f.waitForSync();
      expect(late.hasSynced()).to.equal(true);
      await eventually(() => expect(f.allWatching()).to.equal(true), IN_PROCESS);
      expect(lw.lists).to.equal(4);
    } finally {
      await f.stop();
    }
  });
});
