import type { V1ConfigMap, V1Secret } from '@kubernetes/client-node';
import { expect } from 'chai';
import { Registry } from 'prom-client';
import { applyObject, withOwner } from '../../operator/runtime/apply';
import { ApiError, isAlreadyExists, isConflict, isGone, isNotFound } from '../../operator/runtime/api-errors';
import { KubeClient } from '../../operator/runtime/client';
import type { Verb } from '../../operator/runtime/transport';
import { realClock, type Clock, type TimerHandle } from '../../operator/runtime/clock';
import { EVENT_KIND, EventRecorder, type EventObject } from '../../operator/runtime/events';
import { addFinalizer, hasFinalizer, removeFinalizer } from '../../operator/runtime/finalizers';
import { SharedInformer } from '../../operator/runtime/informer';
import { createLogger } from '../../operator/runtime/logging';
import { patchStatus } from '../../operator/runtime/status';
import type { KubeObject, ResourceKind } from '../../operator/runtime/types';
import { type ControlPlane } from '../support/control-plane';
import { freshNamespace, sharedControlPlane } from './setup';
import { eventually } from '../support/eventually';

const ConfigMaps: ResourceKind = { group: '', version: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true };
const Secrets: ResourceKind = { group: '', version: 'v1', kind: 'Secret', plural: 'secrets', namespaced: true };
const CRDs: ResourceKind = {
  group: 'apiextensions.k8s.io',
  version: 'v1',
  kind: 'CustomResourceDefinition',
  plural: 'customresourcedefinitions',
  namespaced: false,
};
const GROUP = 'rtinformer.test.example.com';
const Widgets: ResourceKind = { group: GROUP, version: 'v1', kind: 'Widget', plural: 'widgets', namespaced: true };

const logger = createLogger({ level: process.env.RT_LOG === '1' ? 'debug' : 'silent' });

/**
 * Real timers, except that while closed, due callbacks are held back until `open()`. Parks
 * a reflector in its reconnect backoff, so the test can change the world while it is
 * provably not watching.
 */
class GatedClock implements Clock {
  private closed = false;
  private readonly held = new Set<{ fn: () => void }>();

  now(): number {
    return realClock.now();
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const entry = { fn, timer: undefined as NodeJS.Timeout | undefined };
    entry.timer = setTimeout(() => {
      if (this.closed) this.held.add(entry);
      else fn();
    }, ms);
    return entry;
  }

  clearTimeout(handle: TimerHandle): void {
    const entry = handle as { fn: () => void; timer?: NodeJS.Timeout };
    clearTimeout(entry.timer);
    this.held.delete(entry);
  }

  close(): void {
    this.closed = true;
  }

  open(): void {
    this.closed = false;
    const due = [...this.held];
    this.held.clear();
    for (const e of due) e.fn();
  }
}

/** Label on every ConfigMap a test makes; informers select on it, which keeps out the
 * `kube-root-ca.crt` the controller manager publishes into each namespace. */
const SELECTOR = 'rt-informer-test=yes';

function cm(namespace: string, name: string, data: Record<string, string> = {}): V1ConfigMap {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace, labels: { 'rt-informer-test': 'yes' } }, data };
}

const names = (objs: KubeObject[]): string[] => objs.map((o) => o.metadata?.name ?? '').sort();

describe('runtime: client, informer and write helpers (real control plane)', function () {
  this.timeout(180_000);
  let cp: ControlPlane;
  let ns: string;
  /** The test's own reads and writes. */
  let client: KubeClient;
  /** What informers use, counted separately so relists can be told from test reads. */
  let lwClient: KubeClient;
  const requests: Array<{ verb: Verb; code: string }> = [];
  const informerRequests: Array<{ verb: Verb; code: string }> = [];
  const registry = new Registry();
  const informers: SharedInformer<KubeObject>[] = [];

  function informer(opts: { clock?: Clock; namespace?: string } = {}): SharedInformer<V1ConfigMap> {
    const inf = new SharedInformer<V1ConfigMap>({
      lw: lwClient,
      kind: ConfigMaps,
      namespace: opts.namespace ?? ns,
      labelSelector: SELECTOR,
      logger,
      clock: opts.clock,
      // Short backoff so reconnects after a restart do not dominate the run time.
      reflector: { backoff: { initialMs: 200, maxMs: 2000 }, pageSize: 2 },
    });
    informers.push(inf as unknown as SharedInformer<KubeObject>);
    return inf;
  }

  /** LIST requests informers made (initial lists, relists, their pages). */
  function listCount(): number {
    return informerRequests.filter((r) => r.verb === 'LIST').length;
  }

  async function serverNames(namespace: string): Promise<string[]> {
    return names((await client.list<V1ConfigMap>(ConfigMaps, { namespace, labelSelector: SELECTOR })).items);
  }

  before(async () => {
    cp = await sharedControlPlane();
    client = new KubeClient({ restConfig: cp.restConfig(), onRequest: (verb, code) => requests.push({ verb, code }) });
    lwClient = new KubeClient({ restConfig: cp.restConfig(), registry, onRequest: (verb, code) => informerRequests.push({ verb, code }) });
  });

  beforeEach(async () => {
    ns = await freshNamespace(cp, 'rt-inf');
  });

  afterEach(async () => {
    await Promise.all(informers.splice(0).map((i) => i.stop()));
  });

  after(() => {
    client?.close();
    lwClient?.close();
  });

  it('client: patch flavours, preconditioned delete and error classes against the real API', async () => {
    const created = await client.create(ConfigMaps, cm(ns, 'c1', { a: '1' }));
    let dup: unknown;
    await client.create(ConfigMaps, cm(ns, 'c1')).catch((e: unknown) => {
      dup = e;
    });
    expect(isAlreadyExists(dup), String(dup)).to.equal(true);

    await client.patch(ConfigMaps, ns, 'c1', { data: { b: '2' } }, 'strategic');
    await client.patch(ConfigMaps, ns, 'c1', [{ op: 'add', path: '/data/c', value: '3' }], 'json');
    const patched = await client.patch<V1ConfigMap>(ConfigMaps, ns, 'c1', { data: { a: null } }, 'merge');
    expect(patched.data).to.deep.equal({ b: '2', c: '3' });

    let stale: unknown;
    await client.delete(ConfigMaps, ns, 'c1', { preconditions: { resourceVersion: created.metadata?.resourceVersion } }).catch((e: unknown) => {
      stale = e;
    });
    expect(isConflict(stale), String(stale)).to.equal(true);
    await client.delete(ConfigMaps, ns, 'c1', { preconditions: { uid: created.metadata?.uid, resourceVersion: patched.metadata?.resourceVersion } });
    let gone: unknown;
    await client.get(ConfigMaps, ns, 'c1').catch((e: unknown) => {
      gone = e;
    });
    expect(isNotFound(gone)).to.equal(true);
    expect((gone as ApiError).message).to.equal('configmaps "c1" not found');
  });

  it('lists in pages, then watches ConfigMaps: create, update and delete reach cache and handlers', async () => {
    for (const n of ['pre-a', 'pre-b', 'pre-c', 'pre-d', 'pre-e']) await client.create(ConfigMaps, cm(ns, n));
    const listsBefore = listCount();
    const inf = informer();
    const seen: string[] = [];
    inf.addEventHandler({
      onAdd: (o) => seen.push(`add ${o.metadata?.name}`),
      onUpdate: (_a, b) => seen.push(`update ${b.metadata?.name} ${b.data?.k ?? ''}`),
      onDelete: (o) => seen.push(`delete ${o.metadata?.name}`),
    });
    inf.start();
    await inf.waitForSync();
    // Five objects in pages of two take three LIST requests, and the cache has all five.
    expect(listCount() - listsBefore).to.equal(3);
    expect(names(inf.cache.list())).to.deep.equal(['pre-a', 'pre-b', 'pre-c', 'pre-d', 'pre-e']);
    expect(inf.cache.list()[0]?.kind).to.equal('ConfigMap');
    await eventually(() => expect(inf.isWatching()).to.equal(true), { description: 'watch established', timeoutMs: 30_000 });

    await client.create(ConfigMaps, cm(ns, 'live', { k: '1' }));
    await client.patch(ConfigMaps, ns, 'live', { data: { k: '2' } }, 'merge');
    await client.delete(ConfigMaps, ns, 'pre-a');
    await eventually(
      () => {
        expect(inf.cache.get({ namespace: ns, name: 'live' })?.data?.k).to.equal('2');
        expect(inf.cache.get({ namespace: ns, name: 'pre-a' })).to.equal(undefined);
        return true;
      },
      { description: 'watch events applied', timeoutMs: 30_000 },
    );
    expect(seen.filter((s) => !s.startsWith('add pre-'))).to.deep.equal(['add live', 'update live 2', 'delete pre-a']);

    const metric = await registry.getSingleMetricAsString('rest_client_requests_total');
    expect(metric).to.match(/rest_client_requests_total\{verb="LIST",code="200",host="127\.0\.0\.1:\d+"\} \d+/);
    expect(metric).to.match(/verb="WATCH",code="200"/);
  });

  it('survives an API server restart and catches up with changes made while it was not watching', async () => {
    for (const n of ['keep', 'remove-me', 'change-me']) await client.create(ConfigMaps, cm(ns, n, { v: '1' }));
    const clock = new GatedClock();
    const inf = informer({ clock });
    const deleted: string[] = [];
    inf.addEventHandler({ onDelete: (o) => deleted.push(o.metadata?.name ?? '') });
    inf.start();
    await inf.waitForSync();
    await eventually(() => expect(inf.isWatching()).to.equal(true), { description: 'watch established', timeoutMs: 30_000 });

    // Park the reflector in its reconnect backoff for the length of the outage.
    clock.close();
    await cp.restartApiServer();
    expect(inf.isWatching()).to.equal(false);
    await client.delete(ConfigMaps, ns, 'remove-me');
    await client.patch(ConfigMaps, ns, 'change-me', { data: { v: '2' } }, 'merge');
    await client.create(ConfigMaps, cm(ns, 'born-in-outage'));
    expect(inf.isWatching()).to.equal(false);
    clock.open();

    await eventually(
      async () => {
        expect(names(inf.cache.list())).to.deep.equal(await serverNames(ns));
        expect(inf.cache.get({ namespace: ns, name: 'change-me' })?.data?.v).to.equal('2');
        return true;
      },
      { description: 'cache caught up with the server', timeoutMs: 30_000 },
    );
    expect(names(inf.cache.list())).to.deep.equal(['born-in-outage', 'change-me', 'keep']);
    expect(deleted).to.deep.equal(['remove-me']);

    // And it is live again, not just resynchronised once.
    await eventually(() => expect(inf.isWatching()).to.equal(true), { description: 'watch re-established', timeoutMs: 30_000 });
    await client.create(ConfigMaps, cm(ns, 'after-restart'));
    await eventually(() => expect(inf.cache.get({ namespace: ns, name: 'after-restart' })).to.not.equal(undefined), {
      description: 'post-restart event',
      timeoutMs: 30_000,
    });
  });

  it('relists on a real 410 (resourceVersion older than the restarted API server can serve)', async () => {
    await client.create(ConfigMaps, cm(ns, 'stays'));
    await client.create(ConfigMaps, cm(ns, 'goes'));
    const inf = informer();
    const seen: string[] = [];
    inf.addEventHandler({
      onAdd: (o) => seen.push(`add ${o.metadata?.name}`),
      onDelete: (o) => seen.push(`delete ${o.metadata?.name}`),
    });
    inf.start();
    await inf.waitForSync();
    await eventually(() => expect(inf.isWatching()).to.equal(true), { description: 'watch established', timeoutMs: 30_000 });
    const staleVersion = (await client.list(ConfigMaps, { namespace: ns })).resourceVersion;
    // A write elsewhere moves the global version past everything this informer has seen,
    // so the restarted server's fresh watch cache starts after the informer's version.
    const other = await freshNamespace(cp, 'rt-inf-other');
    await client.create(ConfigMaps, cm(other, 'bump'));
    const listsBefore = listCount();

    await cp.restartApiServer();
    await client.delete(ConfigMaps, ns, 'goes');
    await client.create(ConfigMaps, cm(ns, 'new'));

    // The server really answers 410 for a watch from the pre-restart version ...
    let watchError: unknown;
    try {
      for await (const _ of client.watch(ConfigMaps, { namespace: ns, resourceVersion: staleVersion, timeoutSeconds: 5 })) {
        // Events before the ERROR frame would mean the server could still serve the version.
      }
    } catch (err) {
      watchError = err;
    }
    expect(isGone(watchError), String(watchError)).to.equal(true);

    // ... and the informer answers that 410 with a relist that reports what it missed.
    await eventually(
      async () => {
        expect(listCount()).to.be.greaterThan(listsBefore);
        expect(names(inf.cache.list())).to.deep.equal(await serverNames(ns));
        return true;
      },
      { description: 'relist after 410', timeoutMs: 30_000 },
    );
    expect(names(inf.cache.list())).to.deep.equal(['new', 'stays']);
    expect(seen).to.include.members(['delete goes', 'add new']);
    expect(seen.filter((s) => s === 'add stays')).to.have.length(1);
  });

  it('server-side applies an owned object with a controller ownerReference, takes fields back, prunes, and is garbage collected', async () => {
    const owner = await client.create(ConfigMaps, cm(ns, 'owner'));
    const desired: V1Secret = withOwner(
      { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'owned', namespace: ns }, data: { a: 'MQ==', b: 'Mg==' } },
      owner,
    );
    const applied = await applyObject<V1Secret>(client, Secrets, desired, { fieldManager: 'rt-test' });
    expect(applied.metadata?.ownerReferences).to.deep.equal([
      { apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: owner.metadata?.uid, controller: true, blockOwnerDeletion: true },
    ]);
    expect(applied.metadata?.managedFields?.map((m) => m.manager)).to.include('rt-test');

    // Someone else changes a field we manage; without force they would conflict, with our
    // forced re-apply the field is ours again.
    let conflict: unknown;
    try {
      await client.apply(
        Secrets,
        { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'owned', namespace: ns }, data: { a: 'eA==' } },
        { fieldManager: 'intruder' },
      );
    } catch (err) {
      conflict = err;
    }
    expect(isConflict(conflict), String(conflict)).to.equal(true);
    await client.patch(Secrets, ns, 'owned', { data: { a: 'eA==' } }, 'merge', { fieldManager: 'intruder' });
    const reapplied = await applyObject<V1Secret>(client, Secrets, { ...applied, data: { a: 'MQ==' } }, { fieldManager: 'rt-test' });
    // `a` is back to our value; `b`, which we stopped sending, is pruned.
    expect(reapplied.data).to.deep.equal({ a: 'MQ==' });

    await client.delete(ConfigMaps, ns, 'owner', { propagationPolicy: 'Background' });
    await eventually(
      async () => {
        let err: unknown;
        await client.get(Secrets, ns, 'owned').catch((e: unknown) => {
          err = e;
        });
        expect(isNotFound(err)).to.equal(true);
        return true;
      },
      { description: 'owned Secret garbage collected', timeoutMs: 60_000 },
    );
  });

  describe('status subresource of a CRD', () => {
    before(async () => {
      const crd = {
        apiVersion: 'apiextensions.k8s.io/v1',
        kind: 'CustomResourceDefinition',
        metadata: { name: `widgets.${GROUP}` },
        spec: {
          group: GROUP,
          scope: 'Namespaced',
          names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
          versions: [
            {
              name: 'v1',
              served: true,
              storage: true,
              subresources: { status: {} },
              schema: {
                openAPIV3Schema: {
                  type: 'object',
                  properties: {
                    spec: { type: 'object', properties: { size: { type: 'integer' } } },
                    status: {
                      type: 'object',
                      properties: { phase: { type: 'string' }, observedGeneration: { type: 'integer' }, note: { type: 'string' } },
                    },
                  },
                },
              },
            },
          ],
        },
      };
      await applyObject(client, CRDs, crd, { fieldManager: 'rt-test' });
      await eventually(
        async () => {
          await client.list(Widgets, { namespace: 'default' });
          return true;
        },
        { description: 'CRD established and served', timeoutMs: 30_000 },
      );
    });

    after(async () => {
      await client.delete(CRDs, '', `widgets.${GROUP}`).catch(() => undefined);
    });

    type Widget = KubeObject & { spec?: { size?: number }; status?: { phase?: string; observedGeneration?: number; note?: string } };

    it('patches status with a merge patch only when it changed, never touching spec', async () => {
      const w = await client.create<Widget>(Widgets, {
        apiVersion: `${GROUP}/v1`,
        kind: 'Widget',
        metadata: { name: 'w1', namespace: ns },
        spec: { size: 1 },
      });
      const first = await patchStatus(client, Widgets, w, { phase: 'Ready', observedGeneration: 1, note: 'hi' }, { fieldManager: 'rt-test' });
      expect(first.status).to.deep.equal({ phase: 'Ready', observedGeneration: 1, note: 'hi' });

      const patchesBefore = requests.filter((r) => r.verb === 'PATCH').length;
      const same = await patchStatus(client, Widgets, first, { note: 'hi', phase: 'Ready', observedGeneration: 1 });
      expect(same).to.equal(first);
      expect(requests.filter((r) => r.verb === 'PATCH').length).to.equal(patchesBefore);

      // A status carrying a spec change through the status endpoint changes no spec.
      await client.patchStatus(Widgets, ns, 'w1', { spec: { size: 99 } }, 'merge');
      const dropped = await patchStatus(client, Widgets, first, { phase: 'Degraded', observedGeneration: 1 });
      expect(dropped.status).to.deep.equal({ phase: 'Degraded', observedGeneration: 1 });
      const live = await client.get<Widget>(Widgets, ns, 'w1');
      expect(live.spec).to.deep.equal({ size: 1 });
      expect(live.status).to.deep.equal({ phase: 'Degraded', observedGeneration: 1 });

      // An optimistic write from a stale copy is refused instead of landing.
      let stale: unknown;
      await patchStatus(client, Widgets, first, { phase: 'Old' }, { optimistic: true }).catch((e: unknown) => {
        stale = e;
      });
      expect(isConflict(stale), String(stale)).to.equal(true);
    });
  });

  it('adds and removes a finalizer, refusing to clobber a concurrent change with Conflict', async () => {
    const F = 'rt.test.example.com/cleanup';
    const created = await client.create(ConfigMaps, cm(ns, 'fin'));
    const withF = await addFinalizer(client, ConfigMaps, created, F);
    expect(withF.metadata?.finalizers).to.deep.equal([F]);
    expect(await addFinalizer(client, ConfigMaps, withF, F)).to.equal(withF);

    // Another actor adds its own finalizer after we read the object.
    await client.patch(ConfigMaps, ns, 'fin', { metadata: { finalizers: [F, 'other.example.com/x'] } }, 'merge');
    let conflict: unknown;
    await removeFinalizer(client, ConfigMaps, withF, F).catch((e: unknown) => {
      conflict = e;
    });
    expect(isConflict(conflict), String(conflict)).to.equal(true);
    expect((await client.get<V1ConfigMap>(ConfigMaps, ns, 'fin')).metadata?.finalizers).to.deep.equal([F, 'other.example.com/x']);

    // Retrying from a fresh read removes ours and keeps theirs.
    const fresh = await client.get<V1ConfigMap>(ConfigMaps, ns, 'fin');
    const without = await removeFinalizer(client, ConfigMaps, fresh, F);
    expect(without.metadata?.finalizers).to.deep.equal(['other.example.com/x']);
    expect(hasFinalizer(without, F)).to.equal(false);

    // On a deleting object, removing the last finalizer lets the deletion finish.
    await client.delete(ConfigMaps, ns, 'fin');
    const deleting = await client.get<V1ConfigMap>(ConfigMaps, ns, 'fin');
    expect(deleting.metadata?.deletionTimestamp).to.not.equal(undefined);
    await removeFinalizer(client, ConfigMaps, deleting, 'other.example.com/x');
    await eventually(
      async () => {
        let err: unknown;
        await client.get(ConfigMaps, ns, 'fin').catch((e: unknown) => {
          err = e;
        });
        expect(isNotFound(err)).to.equal(true);
        return true;
      },
      { description: 'object gone after last finalizer', timeoutMs: 30_000 },
    );
  });

  it('aggregates two identical events into one Event with series.count 2', async () => {
    const target = await client.create(ConfigMaps, cm(ns, 'noisy'));
    const recorder = new EventRecorder({ client, reportingController: 'rt.test.example.com/recorder', reportingInstance: 'test-1', logger });
    recorder.event(target, 'Warning', 'SyncFailed', 'Sync', 'provider said no');
    recorder.event(target, 'Warning', 'SyncFailed', 'Sync', 'provider said no');
    recorder.event(target, 'Normal', 'Synced', 'Sync', 'all good');
    await recorder.flush();

    const events = (await client.list<EventObject>(EVENT_KIND, { namespace: ns })).items.filter((e) => e.regarding?.uid === target.metadata?.uid);
    const failed = events.filter((e) => e.reason === 'SyncFailed');
    expect(failed).to.have.length(1);
    expect(failed[0]?.series?.count).to.equal(2);
    expect(failed[0]).to.deep.include({
      type: 'Warning',
      action: 'Sync',
      note: 'provider said no',
      reportingController: 'rt.test.example.com/recorder',
      reportingInstance: 'test-1',
    });
    expect(events.filter((e) => e.reason === 'Synced')).to.have.length(1);
  });
});
