import { expect } from 'chai';
import { Registry } from 'prom-client';
import { BucketMetric } from '../../../operator/api/metric-names';
import type { StorageBucket } from '../../../operator/api/v1';
import { BucketLifecycleMetrics, type BucketEventSource } from '../../../operator/bucket/lifecycle-metrics';
import type { InformerEventHandler } from '../../../operator/runtime/types';

const T0 = Date.parse('2026-12-01T10:00:00Z');
const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** A bucket builder: `bucket('a').ready(30)` is Ready since 30 s after creation at T0. */
function bucket(name: string, namespace = 'team-a') {
  const b: StorageBucket = {
    apiVersion: 'storage.avalonhosting.example/v1',
    kind: 'StorageBucket',
    metadata: { name, namespace, uid: `uid-${namespace}-${name}`, generation: 1, creationTimestamp: iso(T0) as unknown as Date },
    spec: { region: 'eu-west-1', sizeGB: 10, providerRef: { name: 'default' } },
  } as StorageBucket;
  const cond = (type: string, status: string, atSeconds: number) => ({
    type,
    status,
    reason: 'X',
    message: '',
    observedGeneration: 1,
    lastTransitionTime: iso(T0 + atSeconds * 1000),
  });
  const api = {
    obj: b,
    ready(atSeconds = 0, status = 'True') {
      b.status = {
        ...(b.status ?? {}),
        observedGeneration: 1,
        conditions: [...(b.status?.conditions ?? []).filter((c) => c.type !== 'Ready'), cond('Ready', status, atSeconds)],
      } as StorageBucket['status'];
      return api;
    },
    synced() {
      b.status = { ...(b.status ?? {}), conditions: [...(b.status?.conditions ?? []), cond('Synced', 'True', 0)] } as StorageBucket['status'];
      return api;
    },
    deleting(atSeconds: number) {
      b.metadata.deletionTimestamp = iso(T0 + atSeconds * 1000) as unknown as Date;
      return api;
    },
    generation(g: number) {
      b.metadata.generation = g;
      return api;
    },
  };
  return api;
}

/** A fake informer: a plain list as its cache and the one handler it was given. */
function fakeInformer(objects: StorageBucket[] = []) {
  let handler: InformerEventHandler<StorageBucket> = {};
  const informer: BucketEventSource = {
    cache: { list: () => objects },
    addEventHandler: (h) => {
      handler = h;
      for (const o of objects) h.onAdd?.(o, true);
    },
  };
  return { informer, objects, events: () => handler };
}

async function histogram(registry: Registry, name: string): Promise<{ count: number; sum: number }> {
  const m = (await registry.getMetricsAsJSON()).find((x) => x.name === name);
  const values = (m?.values ?? []) as Array<{ metricName?: string; value: number }>;
  return {
    count: values.find((v) => v.metricName === `${name}_count`)?.value ?? 0,
    sum: values.find((v) => v.metricName === `${name}_sum`)?.value ?? 0,
  };
}

async function gauge(registry: Registry, name: string): Promise<Record<string, number>> {
  const m = (await registry.getMetricsAsJSON()).find((x) => x.name === name);
  const out: Record<string, number> = {};
  for (const v of (m?.values ?? []) as Array<{ labels: Record<string, string>; value: number }>) out[v.labels['namespace']!] = v.value;
  return out;
}

describe('BucketLifecycleMetrics', () => {
  let now = T0;
  const setup = (objects: StorageBucket[] = [], opts: { leader?: () => boolean; maxNamespaces?: number } = {}) => {
    const registry = new Registry();
    const fake = fakeInformer(objects);
    const metrics = new BucketLifecycleMetrics({
      registry,
      informer: fake.informer,
      now: () => now,
      isLeader: opts.leader,
      maxNamespaces: opts.maxNamespaces,
    });
    return { registry, metrics, ...fake };
  };
  beforeEach(() => {
    now = T0;
  });

  describe('first time to ready', () => {
    it('observes creation to the Ready transition once per uid', async () => {
      const { registry, events } = setup();
      const a = bucket('a');
      events().onAdd?.(a.obj, false);
      events().onUpdate?.(a.obj, structuredClone(bucket('a').ready(0, 'False').obj));
      const ready = bucket('a').ready(42).obj;
      events().onUpdate?.(a.obj, ready);
      // Flapping to False and back, and resyncs, are not a first time.
      events().onUpdate?.(ready, bucket('a').ready(50, 'False').obj);
      events().onUpdate?.(ready, bucket('a').ready(60).obj);
      events().onUpdate?.(ready, ready);
      expect(await histogram(registry, BucketMetric.firstTimeToReady)).to.deep.equal({ count: 1, sum: 42 });
    });

    it('skips buckets already Ready when first seen (operator start)', async () => {
      const already = bucket('old').ready(5).obj;
      const { registry, events } = setup([already]);
      events().onUpdate?.(already, already);
      expect(await histogram(registry, BucketMetric.firstTimeToReady)).to.deep.equal({ count: 0, sum: 0 });
    });

    it('is not recorded by a standby, which still remembers the bucket became Ready', async () => {
      let leading = false;
      const { registry, events } = setup([], { leader: () => leading });
      events().onAdd?.(bucket('a').obj, false);
      events().onUpdate?.(bucket('a').obj, bucket('a').ready(10).obj);
      leading = true;
      events().onUpdate?.(bucket('a').ready(10).obj, bucket('a').ready(10).obj);
      expect(await histogram(registry, BucketMetric.firstTimeToReady)).to.deep.equal({ count: 0, sum: 0 });
    });
  });

  describe('deletion', () => {
    it('observes deletionTimestamp to the DELETE event', async () => {
      const { registry, events } = setup();
      now = T0 + 75_000;
      events().onDelete?.(bucket('a').deleting(60).obj);
      expect(await histogram(registry, BucketMetric.deletion)).to.deep.equal({ count: 1, sum: 15 });
    });

    it('ignores removals without a deletionTimestamp (missed, or no finalizer)', async () => {
      const { registry, events } = setup();
      events().onDelete?.(bucket('a').obj);
      expect(await histogram(registry, BucketMetric.deletion)).to.deep.equal({ count: 0, sum: 0 });
    });

    it("forgets a deleted bucket's uid, so the Ready-seen set does not grow without bound", async () => {
      const { registry, events } = setup([bucket('a').ready(1).obj]);
      events().onDelete?.(bucket('a').deleting(2).obj);
      // Only observable through a uid coming back (which the API server never does): it is
      // treated as new, proving nothing about it was retained.
      events().onUpdate?.(bucket('a').obj, bucket('a').ready(3).obj);
      expect((await histogram(registry, BucketMetric.firstTimeToReady)).count).to.equal(1);
    });
  });

  describe('state gauges (read from the cache at scrape time)', () => {
    it('count existing, Ready-at-generation and Synced buckets per namespace', async () => {
      const { registry, objects } = setup([
        bucket('a').ready(1).synced().obj,
        bucket('b').ready(1).generation(2).obj,
        bucket('c').obj,
        bucket('d', 'team-b').ready(1).synced().obj,
      ]);
      expect(await gauge(registry, BucketMetric.bucketsExist)).to.deep.equal({ 'team-a': 3, 'team-b': 1 });
      expect(await gauge(registry, BucketMetric.bucketsReady)).to.deep.equal({ 'team-a': 1, 'team-b': 1 });
      expect(await gauge(registry, BucketMetric.bucketsSynced)).to.deep.equal({ 'team-a': 1, 'team-b': 1 });
      // No Ready bucket in a namespace is a zero, not a missing series.
      objects.push(bucket('e', 'team-c').obj);
      expect(await gauge(registry, BucketMetric.bucketsReady)).to.deep.equal({ 'team-a': 1, 'team-b': 1, 'team-c': 0 });
      objects.pop();
      // A namespace that empties disappears instead of lingering at its last value.
      objects.splice(3, 1);
      expect(await gauge(registry, BucketMetric.bucketsExist)).to.deep.equal({ 'team-a': 3 });
    });

    it('fold namespaces past the cap into _other', async () => {
      const objects = ['ns-d', 'ns-a', 'ns-c', 'ns-b', 'ns-e'].map((ns) => bucket('x', ns).obj);
      objects.push(bucket('y', 'ns-e').obj);
      const { registry } = setup(objects, { maxNamespaces: 3 });
      expect(await gauge(registry, BucketMetric.bucketsExist)).to.deep.equal({ 'ns-a': 1, 'ns-b': 1, _other: 4 });
    });

    it('are empty on a standby', async () => {
      const { registry } = setup([bucket('a').obj], { leader: () => false });
      expect(await gauge(registry, BucketMetric.bucketsExist)).to.deep.equal({});
    });
  });

  describe('drift corrected', () => {
    it('counts by field, unknown fields as other, zeros from the start', async () => {
      const { registry, metrics } = setup();
      metrics.driftCorrected('sizeGB');
      metrics.driftCorrected('sizeGB');
      metrics.driftCorrected('somethingNew');
      const m = (await registry.getMetricsAsJSON()).find((x) => x.name === BucketMetric.driftCorrected);
      const byField = Object.fromEntries((m?.values ?? []).map((v) => [v.labels['field'], v.value]));
      expect(byField).to.deep.equal({ sizeGB: 2, encrypted: 0, tags: 0, other: 1 });
    });
  });

  it('rejects a cap below one', () => {
    expect(() => setup([], { maxNamespaces: 0 })).to.throw(/maxNamespaces must be at least 1/);
  });
});
