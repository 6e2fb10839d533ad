import { expect } from 'chai';
import { pino } from 'pino';
import { ApiError } from '../../../operator/runtime/api-errors';
import type { PatchType } from '../../../operator/runtime/client';
import { FakeClock } from '../../../operator/runtime/clock';
import { EventRecorder, eventKey, microTime, truncateNote, type EventObject } from '../../../operator/runtime/events';
import type { KubeObject, ResourceKind } from '../../../operator/runtime/types';

const pod: KubeObject = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'ns', uid: 'u1', resourceVersion: '3' } };

/** In-memory Event store standing in for the API: create and merge-patch. */
class EventStore {
  readonly events = new Map<string, EventObject>();
  failCreate: unknown;
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
    const ev = this.events.get(name);
    if (!ev) throw new ApiError(404, 'NotFound', 'gone');
    Object.assign(ev, patch);
    return ev as T;
  }
}

function recorder(store: EventStore, clock = new FakeClock(), extra: { burst?: number } = {}): EventRecorder {
  return new EventRecorder({
    client: store, reportingController: 'example.com/ctl', reportingInstance: 'pod-1', logger: pino({ level: 'silent' }), clock, ...extra,
  });
}

describe('EventRecorder', () => {
  it('creates one events.k8s.io/v1 Event with the reporting fields and reference', async () => {
    const store = new EventStore();
    const r = recorder(store);
    r.event(pod, 'Normal', 'Created', 'Create', 'made it');
    await r.flush();
    const [ev] = [...store.events.values()];
    expect(ev).to.deep.include({ type: 'Normal', reason: 'Created', action: 'Create', note: 'made it', reportingController: 'example.com/ctl', reportingInstance: 'pod-1' });
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
