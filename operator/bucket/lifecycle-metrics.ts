/**
 * Lifecycle metrics of StorageBuckets, after Crossplane's managed-resource metrics: how long
 * a new bucket takes to become Ready the first time, how long a deletion takes, how many
 * buckets exist / are Ready / are Synced per namespace, and how often provider drift was
 * corrected. Fed by the StorageBucket informer's events and its cache, so the reconciler
 * only needs to report drift.
 *
 * Only the leader records: standbys run warm informers too, and a second replica adding the
 * same observations would double every sum. Standbys still track which buckets were seen
 * Ready, so a new leader does not count old buckets as new.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { BucketMetric, OTHER_NAMESPACES } from '../api/metric-names';
import type { StorageBucket } from '../api/v1';
import { findCondition, type Cache, type Condition, type InformerEventHandler } from '../runtime';
import { ConditionType } from './reasons';

/** What the reconciler reports; implemented by {@link BucketLifecycleMetrics}. */
export interface DriftMetrics {
  /** One provider-side change to `field` (a spec field name, e.g. `sizeGB`) was corrected. */
  driftCorrected(field: string): void;
}

/** The part of a StorageBucket informer the metrics read. */
export interface BucketEventSource {
  readonly cache: Pick<Cache<StorageBucket>, 'list'>;
  addEventHandler(handler: InformerEventHandler<StorageBucket>): void;
}

/** Options of {@link BucketLifecycleMetrics}. */
export interface BucketLifecycleMetricsOptions {
  readonly registry: Registry;
  readonly informer: BucketEventSource;
  /** Whether this replica records (the leader). @default () => true */
  readonly isLeader?: () => boolean;
  /**
   * Most namespaces given their own `namespace` label value; the rest (by name order, so
   * the labelled set is stable) are summed under `namespace="_other"`. Bounds the series
   * count whatever the number of tenants.
   * @default 50
   */
  readonly maxNamespaces?: number;
  /** @default Date.now */
  readonly now?: () => number;
}

/** Spec fields the drift counter labels by; anything else is counted as `other`. */
const DRIFT_FIELDS: ReadonlySet<string> = new Set(['sizeGB', 'encrypted', 'tags']);

// Provisioning takes seconds to minutes; deletion similar. 0.5 s to about 68 min.
const DURATION_BUCKETS = [0.5, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096];

function isReady(b: StorageBucket): boolean {
  const c = findCondition(b.status?.conditions as Condition[] | undefined, ConditionType.Ready);
  return c?.status === 'True';
}

function isSynced(b: StorageBucket): boolean {
  const c = findCondition(b.status?.conditions as Condition[] | undefined, ConditionType.Synced);
  return c?.status === 'True';
}

function parseTime(s: string | Date | undefined): number | undefined {
  if (s === undefined) return undefined;
  const t = new Date(s).getTime();
  return Number.isNaN(t) ? undefined : t;
}

/** Registers the lifecycle metrics on `registry` and listens to the informer. */
export class BucketLifecycleMetrics implements DriftMetrics {
  private readonly isLeader: () => boolean;
  private readonly now: () => number;
  private readonly maxNamespaces: number;
  private readonly firstReady: Histogram;
  private readonly deletion: Histogram;
  private readonly drift: Counter<'field'>;
  /** uids already Ready once (or Ready when first seen): never observed again. */
  private readonly readySeen = new Set<string>();

  constructor(opts: BucketLifecycleMetricsOptions) {
    this.isLeader = opts.isLeader ?? (() => true);
    this.now = opts.now ?? Date.now;
    this.maxNamespaces = opts.maxNamespaces ?? 50;
    if (this.maxNamespaces < 1) throw new Error(`maxNamespaces must be at least 1, got ${this.maxNamespaces}`);
    const registers = [opts.registry];
    this.firstReady = new Histogram({
      name: BucketMetric.firstTimeToReady,
      help: "Seconds from a StorageBucket's creation until it was first observed Ready",
      buckets: DURATION_BUCKETS,
      registers,
    });
    this.deletion = new Histogram({
      name: BucketMetric.deletion,
      help: "Seconds from a StorageBucket's deletionTimestamp until it was removed",
      buckets: DURATION_BUCKETS,
      registers,
    });
    this.drift = new Counter({
      name: BucketMetric.driftCorrected,
      help: 'Provider-side changes to a StorageBucket the operator corrected, by spec field',
      labelNames: ['field'],
      registers,
    });
    // Touch the known fields so rate() sees zeros before the first correction.
    for (const field of DRIFT_FIELDS) this.drift.inc({ field }, 0);

    const cache = opts.informer.cache;
    const leading = () => this.isLeader();
    const count = (pick: (b: StorageBucket) => boolean) => this.countByNamespace(cache.list(), pick);
    const gauge = (name: string, help: string, pick: (b: StorageBucket) => boolean) =>
      new Gauge({
        name,
        help,
        labelNames: ['namespace'],
        registers,
        // prom-client calls collect with the gauge as `this`.
        collect() {
          this.reset();
          if (!leading()) return;
          for (const [namespace, n] of count(pick)) this.set({ namespace }, n);
        },
      });
    gauge(BucketMetric.bucketsExist, 'StorageBuckets that exist, per namespace', () => true);
    gauge(
      BucketMetric.bucketsReady,
      'StorageBuckets Ready at their current generation, per namespace',
      (b) => isReady(b) && b.status?.observedGeneration === b.metadata.generation,
    );
    gauge(BucketMetric.bucketsSynced, 'StorageBuckets whose last reconcile succeeded, per namespace', isSynced);

    opts.informer.addEventHandler({
      // A bucket that is Ready when first seen (at startup, or on a new leader) was not
      // made Ready by this process: remembered, never observed.
      onAdd: (b) => {
        if (isReady(b) && b.metadata.uid) this.readySeen.add(b.metadata.uid);
      },
      onUpdate: (_old, b) => this.onUpdate(b),
      onDelete: (b) => this.onDelete(b),
    });
  }

  driftCorrected(field: string): void {
    if (!this.isLeader()) return;
    this.drift.inc({ field: DRIFT_FIELDS.has(field) ? field : 'other' });
  }

  private onUpdate(b: StorageBucket): void {
    const uid = b.metadata.uid;
    if (!uid || this.readySeen.has(uid) || !isReady(b)) return;
    this.readySeen.add(uid);
    if (!this.isLeader()) return;
    const created = parseTime(b.metadata.creationTimestamp);
    if (created === undefined) return;
    // The condition's transition time is when the operator saw Ready, independent of how
    // late this event arrives; it has second resolution, like creationTimestamp.
    const c = findCondition(b.status?.conditions as Condition[] | undefined, ConditionType.Ready);
    const readyAt = parseTime(c?.lastTransitionTime) ?? this.now();
    this.firstReady.observe(Math.max(0, (readyAt - created) / 1000));
  }

  private onDelete(b: StorageBucket): void {
    if (b.metadata.uid) this.readySeen.delete(b.metadata.uid);
    // Without a deletionTimestamp the removal was immediate (no finalizer) or was missed
    // and found by a relist: either way there is no duration to report.
    const deleting = parseTime(b.metadata.deletionTimestamp);
    if (deleting === undefined || !this.isLeader()) return;
    this.deletion.observe(Math.max(0, (this.now() - deleting) / 1000));
  }

  /**
   * Buckets matching `pick` per namespace, with a zero for every namespace that has buckets
   * but none matching, so `exist - ready` has a series to subtract from. Namespaces past the
   * cap are folded into `_other`.
   */
  private countByNamespace(buckets: StorageBucket[], pick: (b: StorageBucket) => boolean): Map<string, number> {
    const counts = new Map<string, number>();
    for (const b of buckets) {
      const ns = b.metadata.namespace ?? '';
      counts.set(ns, (counts.get(ns) ?? 0) + (pick(b) ? 1 : 0));
    }
    const names = [...counts.keys()].sort();
    if (names.length <= this.maxNamespaces) return counts;
    const out = new Map<string, number>();
    // One value is spent on `_other`, so the total never exceeds the cap.
    const kept = names.slice(0, this.maxNamespaces - 1);
    for (const ns of kept) out.set(ns, counts.get(ns)!);
    let rest = 0;
    for (const ns of names.slice(this.maxNamespaces - 1)) rest += counts.get(ns)!;
    out.set(OTHER_NAMESPACES, rest);
    return out;
  }
}

/** What {@link registerBucketLifecycleMetrics} needs of the Manager. */
export interface MetricsHost {
  readonly metrics: { readonly registry: Registry };
  isLeader(): boolean;
}

/** Registers the lifecycle metrics on the manager's registry; pass the result to the reconciler as its drift sink. */
export function registerBucketLifecycleMetrics(mgr: MetricsHost, informer: BucketEventSource): BucketLifecycleMetrics {
  return new BucketLifecycleMetrics({ registry: mgr.metrics.registry, informer, isLeader: () => mgr.isLeader() });
}
