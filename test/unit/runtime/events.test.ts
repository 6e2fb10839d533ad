import { FakeClock } from '../../support/fake-clock';
import { expect } from 'chai';
import { pino, type Logger } from 'pino';
import type { Counter } from 'prom-client';
import { BucketMetric } from '../../../operator/api/metric-names';
import { ApiError } from '../../../operator/runtime/api-errors';
import type { PatchType } from '../../../operator/runtime/client';

import { EventRecorder, eventKey, microTime, truncateNote, type EventObject } from '../../../operator/runtime/events';
import { Metrics } from '../../../operator/runtime/metrics';
import type { KubeObject, ResourceKind } from '../../../operator/runtime/types';
import { WriteFailureReporter } from '../../../operator/runtime/write-failures';
import { captureLogger } from './fakes';

const pod: KubeObject = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'ns', uid: 'u1', resourceVersion: '3' } };

/** In-memory Event store standing in for the API: create and merge-patch. */
class EventStore {
  readonly events = new Map<string, EventObject>();
  failCreate: unknown;
  failPatch: unknown;
  creates = 0;
  patches = 0;

  async create<T extends KubeObject>(_k: ResourceKind, obj: T): Promise<T> {
    this.creates++;
    if (this.failCreate) throw this.failCreate;
    // Let other callers run in between, as a real request would.
    await new Promise((r) => setTimeout(r, 1));
    this.events.set(obj.metadata?.name ?? '', obj as EventObject);
    return obj;
  }

  async patch<T extends KubeObject>(_k: ResourceKind, _ns: string, name: string, patch: unknown, _t: PatchType): Promise<T> {
    this.patches++;
    if (this.failPatch) throw this.failPatch;
    const ev = this.events.get(name);
    if (!ev) throw new ApiError(404, 'NotFound', 'gone');
    Object.assign(ev, patch);
    return ev as T;
  }
}

function recorder(
  store: EventStore,
  clock = new FakeClock(),
  extra: { burst?: number; logger?: Logger; failures?: WriteFailureReporter } = {},
): EventRecorder {
  return new EventRecorder({
    client: store,
    reportingController: 'example.com/ctl',
    reportingInstance: 'pod-1',
    logger: pino({ level: 'silent' }),
    clock,
    ...extra,
  });
}

const SECRET = 'hunter2-secret-value';

/** The API server's answer to a write the operator's RBAC does not allow. */
function forbidden(verb: string): ApiError {
  return new ApiError(403, 'Forbidden', `events.events.k8s.io is forbidden: cannot ${verb} (token ${SECRET})`);
}

/** A recorder whose refused writes go to a reporter with metrics, and what both log. */
function reporting(store: EventStore) {
  const metrics = new Metrics({ defaultMetrics: false });
  const { logger, lines } = captureLogger();
  const failures = new WriteFailureReporter({ logger, metrics });
  const r = recorder(store, new FakeClock(), { logger, failures });
  const failed = async (verb: string): Promise<number> => {
    const counter = metrics.registry.getSingleMetric(BucketMetric.writeFailures) as Counter | undefined;
    const values = (await counter?.get())?.values ?? [];
    return values.find((v) => v.labels.resource === 'events.events.k8s.io' && v.labels.verb === verb && v.labels.code === '403')?.value ?? 0;
  };
  return { r, lines, failed, warns: () => lines.filter((l) => l.level === 40) };
}

describe('EventRecorder', () => {
  it('creates one events.k8s.io/v1 Event with the reporting fields and reference', async () => {
    const store = new EventStore();
    const r = recorder(store);
    r.event(pod, 'Normal', 'Created', 'Create', 'made it');
    await r.flush();
    const [ev] = [...store.events.values()];
    expect(ev).to.deep.include({
      type: 'Normal',
      reason: 'Created',
      action: 'Create',
      note: 'made it',
      reportingController: 'example.com/ctl',
      reportingInstance: 'pod-1',
    });
    expect(ev?.regarding).to.include({ kind: 'Pod', name: 'p', namespace: 'ns', uid: 'u1' });
    expect(ev?.metadata?.namespace).to.equal('ns');
    expect(ev?.eventTime).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    expect(ev?.series).to.equal(undefined);
  });

  it('aggregates identical events fired back to back into one Event with series.count', async () => {
    const store = new EventStore();
    const r = recorder(store);
    r.event(pod, 'Warning', 'Failed', 'Sync', 'boom');
    r.event(pod, 'Warning', 'Failed', 'Sync', 'boom');
    r.event(pod, 'Warning', 'Failed', 'Sync', 'boom');
    await r.flush();
    expect(store.events.size).to.equal(1);
    expect([...store.events.values()][0]?.series?.count).to.equal(3);
  });

  it('starts a new Event after the window, for a different note, and when the old one vanished', async () => {
    const store = new EventStore();
    const clock = new FakeClock();
    const r = recorder(store, clock);
    r.event(pod, 'Normal', 'A', 'X', 'n');
    await r.flush();
    r.event(pod, 'Normal', 'A', 'X', 'other note');
    await r.flush();
    expect(store.events.size).to.equal(2);
    clock.advance(360_001);
    r.event(pod, 'Normal', 'A', 'X', 'n');
    await r.flush();
    expect(store.events.size).to.equal(3);
    store.events.clear();
    r.event(pod, 'Normal', 'A', 'X', 'n');
    await r.flush();
    expect(store.events.size).to.equal(1);
  });

  it('rate-limits per object and refills over time', async () => {
    const store = new EventStore();
    const clock = new FakeClock();
    const r = recorder(store, clock, { burst: 2 });
    for (let i = 0; i < 5; i++) r.event(pod, 'Normal', 'R', 'X', `n${i}`);
    r.event({ ...pod, metadata: { ...pod.metadata, uid: 'u2' } }, 'Normal', 'R', 'X', 'other object');
    await r.flush();
    expect(store.creates).to.equal(3);
    clock.advance(300_000);
    r.event(pod, 'Normal', 'R', 'X', 'later');
    await r.flush();
    expect(store.creates).to.equal(4);
  });

  it('never throws to the caller, even when the API fails or the object is odd', async () => {
    const store = new EventStore();
    store.failCreate = new ApiError(403, 'Forbidden', 'no');
    const r = recorder(store);
    expect(() => r.event(pod, 'Normal', 'A', 'X', 'n')).to.not.throw();
    expect(() => r.event({}, 'Normal', 'A', 'X', 'n')).to.not.throw();
    await r.flush();
    expect(store.events.size).to.equal(0);
  });

  describe('refused writes', () => {
    it('a 403 on every create counts each failure and warns once, with nothing secret logged', async () => {
      const store = new EventStore();
      store.failCreate = forbidden('create');
      const h = reporting(store);
      for (const note of ['one', 'two', `three ${SECRET}`]) h.r.event(pod, 'Warning', 'Failed', 'Sync', note);
      await h.r.flush();
      expect(store.creates).to.equal(3);
      expect(await h.failed('create')).to.equal(3);
      expect(h.warns()).to.have.length(1);
      expect(String(h.warns()[0]?.msg)).to.match(/forbidden: check the operator's RBAC \(it needs create on events\.events\.k8s\.io\)/);
      expect(JSON.stringify(h.lines)).to.not.include(SECRET);
    });

    it('a 403 on the series patch of a repeat is reported as patch', async () => {
      const store = new EventStore();
      const h = reporting(store);
      h.r.event(pod, 'Warning', 'Failed', 'Sync', 'boom');
      await h.r.flush();
      store.failPatch = forbidden('patch');
      h.r.event(pod, 'Warning', 'Failed', 'Sync', 'boom');
      h.r.event(pod, 'Warning', 'Failed', 'Sync', 'boom');
      await h.r.flush();
      expect([await h.failed('patch'), await h.failed('create')]).to.deep.equal([2, 0]);
      expect(h.warns().map((l) => l.verb)).to.deep.equal(['patch']);
    });

    it('without a shared reporter still warns once on its own logger (no longer debug only)', async () => {
      const store = new EventStore();
      store.failCreate = forbidden('create');
      const { logger, lines } = captureLogger();
      const r = recorder(store, new FakeClock(), { logger });
      r.event(pod, 'Normal', 'A', 'X', 'n1');
      r.event(pod, 'Normal', 'A', 'X', 'n2');
      await r.flush();
      expect(lines.filter((l) => l.level === 40).map((l) => [l.resource, l.verb, l.code])).to.deep.equal([['events.events.k8s.io', 'create', '403']]);
    });
  });

  it('puts events about cluster-scoped objects in default', async () => {
    const store = new EventStore();
    const r = recorder(store);
    r.event({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1', uid: 'n' } }, 'Normal', 'A', 'X', 'n');
    await r.flush();
    expect([...store.events.values()][0]?.metadata?.namespace).to.equal('default');
  });
});

describe('event helpers', () => {
  it('keys on object uid, type, reason, action and note', () => {
    const base = eventKey(pod, 'Normal', 'R', 'A', 'n');
    expect(eventKey({ ...pod }, 'Normal', 'R', 'A', 'n')).to.equal(base);
    expect(eventKey({ metadata: { ...pod.metadata, uid: 'u9' } }, 'Normal', 'R', 'A', 'n')).to.not.equal(base);
    expect(eventKey(pod, 'Warning', 'R', 'A', 'n')).to.not.equal(base);
    expect(eventKey(pod, 'Normal', 'R', 'A', 'n2')).to.not.equal(base);
  });

  it('truncates a note to 1024 bytes without splitting a character', () => {
    const long = 'é'.repeat(1000);
    const out = truncateNote(long);
    expect(Buffer.byteLength(out)).to.be.at.most(1024);
    expect(out.endsWith('é...')).to.equal(true);
    expect(truncateNote('short')).to.equal('short');
  });

  it('formats MicroTime with six fractional digits', () => {
    expect(microTime(new Date('2024-01-02T03:04:05.678Z'))).to.equal('2024-01-02T03:04:05.678000Z');
  });
});
