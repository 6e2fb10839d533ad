/**
 * The conversion webhook under load (`npm run bench -- --scenarios conversion`): both CRDs
 * serve v1 (stored) and v2, converted by ours at a loopback URL; N StorageBuckets with a Ready
 * bucket's status are stored in v1, then read in both versions, taking turns. Figures: the
 * time to list all N in the stored version against the converted one, and one-object GET
 * latency p50/p99 in each (the difference is what a conversion costs a client), the webhook's
 * own answer time from its histogram, and how many reviews the v1 writes alone caused.
 *
 * It replaces the CRDs with the two-version variant, so it runs last. The Deployment in dist/
 * does not serve the webhook yet; ours runs from the image with the conversion flags and the
 * admin kubeconfig (its ServiceAccount has no right to the webhook Secret or the CRDs' caBundle
 * until the webhook ships), and its controllers watch an empty namespace, so only the webhook
 * works on these objects.
 */
import { renderCrd } from '../infra/crd';
import { COMMON_LABELS } from '../infra/labels';
import * as v1 from '../operator/api/v1';
import * as v2 from '../operator/api/v2';
import { combineVersions } from '../operator/api/versions';
import { BucketMetric } from '../operator/api/metric-names';
import { STORAGE_BUCKET } from '../operator/bucket/kinds';
import { KubeClient } from '../operator/runtime/client';
import { loadKubeconfig } from '../operator/runtime/kubeconfig';
import type { ResourceKind } from '../operator/runtime/types';
import type { StorageBucket } from '../operator/api/v1';
import { eventually } from '../test/support/eventually';
import { apply, bucketManifest } from '../test/support/kube';
import { freePort } from '../test/support/ports';
import { scrape, type Sample } from '../test/support/prometheus';
import { startOperatorProcess } from '../test/support/operator-process';
import { inFlight, type Bench } from './harness';
import type { Figures } from './scenarios';

const BUCKETS_V2: ResourceKind = { ...STORAGE_BUCKET, version: v2.VERSION };

/** Options of {@link conversion}. */
export interface ConversionSettings {
  /** Objects stored in v1 and listed in both versions. */
  readonly objects: number;
  /** Sequential single-object GETs per version for the latency figures. */
  readonly gets: number;
  /** Full lists per version (the median is reported). */
  readonly lists: number;
}

/** A Ready bucket's status as ours writes it, so conversion works on realistic objects. */
export function readyStatus(i: number, generation: number): NonNullable<StorageBucket['status']> {
  const at = new Date(Date.UTC(2026, 11, 2, 8, 0, i % 60)).toISOString();
  const condition = (type: string, reason: string) => ({
    type,
    status: 'True' as const,
    reason,
    message: `provider bucket bkt-${i} is Active`,
    lastTransitionTime: at,
    observedGeneration: generation,
  });
  return {
    id: `bkt-${String(i).padStart(6, '0')}`,
    phase: 'Active',
    observedGeneration: generation,
    idempotencyKey: `0f8e2c1a-${String(i).padStart(4, '0').slice(-4)}-4b6d-9a7e-3c5f1d2b8a90`,
    endpoint: `https://storage.example/buckets/bkt-${i}`,
    providerEndpoint: 'http://127.0.0.1:9000',
    account: 'acct-bench',
    sizeGB: 10,
    encrypted: false,
    region: 'us-east-1',
    conditions: [condition('Ready', 'Available'), condition('Synced', 'ReconcileSuccess')],
  };
}

/** p-quantile (0..1) of `xs` by nearest rank; NaN when empty. */
export function quantile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil(p * sorted.length)));
  return sorted[rank - 1] ?? NaN;
}

/**
 * p-quantile of a Prometheus histogram (cumulative `le` buckets), interpolated linearly within
 * the bucket it falls in, as PromQL's histogram_quantile does; NaN without observations.
 */
export function histogramQuantile(buckets: ReadonlyArray<{ le: number; count: number }>, p: number): number {
  const sorted = [...buckets].sort((a, b) => a.le - b.le);
  const total = sorted.at(-1)?.count ?? 0;
  if (total === 0) return NaN;
  const target = p * total;
  let prevLe = 0;
  let prevCount = 0;
  for (const b of sorted) {
    if (b.count >= target) {
      if (!Number.isFinite(b.le)) return prevLe;
      const inBucket = b.count - prevCount;
      return inBucket === 0 ? b.le : prevLe + ((b.le - prevLe) * (target - prevCount)) / inBucket;
    }
    prevLe = b.le;
    prevCount = b.count;
  }
  return prevLe;
}

/** The webhook's duration buckets for one version pair, summed over replicas. */
function durationBuckets(samples: readonly Sample[], from: string, to: string): Array<{ le: number; count: number }> {
  const byLe = new Map<number, number>();
  for (const s of samples) {
    if (s.name !== `${BucketMetric.conversionDuration}_bucket` || s.labels['from'] !== from || s.labels['to'] !== to) continue;
    const le = s.labels['le'] === '+Inf' ? Infinity : Number(s.labels['le']);
    byLe.set(le, (byLe.get(le) ?? 0) + s.value);
  }
  return [...byLe].map(([le, count]) => ({ le, count }));
}

/** `read()` once it has not changed for 3 s (at most 5 min): a stream of work that has drained. */
async function settledCount(read: () => Promise<number>): Promise<number> {
  let last = await read();
  const deadline = Date.now() + 5 * 60_000;
  for (;;) {
    await new Promise((r) => setTimeout(r, 3000));
    const now = await read();
    if (now === last || Date.now() > deadline) return now;
    last = now;
  }
}

const round = (x: number, digits = 1) => Math.round(x * 10 ** digits) / 10 ** digits;

/** Runs the conversion scenario on `bench`'s control plane (last: it leaves the webhook CRDs). */
export async function conversion(bench: Bench, s: ConversionSettings): Promise<Figures> {
  await bench.stopOperator();
  const { cp } = bench;
  const port = await freePort();
  const url = `https://127.0.0.1:${port}/convert`;
  const pairs = [
    [v1.StorageBucketDefinition, v2.StorageBucketDefinition],
    [v1.BucketProviderConfigDefinition, v2.BucketProviderConfigDefinition],
  ] as const;
  for (const defs of pairs) {
    await apply(cp, renderCrd(combineVersions(defs), { ...COMMON_LABELS }, { conversionWebhook: { url } }));
  }
  const idle = await bench.namespace('conversion-idle');
  const op = await startOperatorProcess({
    kubeconfig: cp.kubeconfigPath,
    logFile: bench.operatorLog,
    flags: {
      'log-level': 'warn',
      'watch-namespace': idle,
      'conversion-webhook-port': String(port),
      'conversion-webhook-ip-sans': '127.0.0.1',
    },
  });
  try {
    const ns = await bench.namespace('conversion');
    const name = (i: number) => `c${String(i).padStart(5, '0')}`;
    // dist/'s provenance policy lets only the operator's ServiceAccount write a StorageBucket's status.
    const statusWriter = new KubeClient({
      restConfig: loadKubeconfig(await cp.serviceAccountKubeconfig('bucketoperator-system', 'bucketoperator-controller-manager')),
      http2: false,
    });
    const t0 = Date.now();
    try {
      await inFlight(s.objects, 20, async (i) => {
        const created = await bench.admin.create(STORAGE_BUCKET, bucketManifest(ns, name(i), { sizeGB: 10 }) as unknown as StorageBucket);
        await statusWriter.patchStatus(STORAGE_BUCKET, ns, name(i), { status: readyStatus(i, created.metadata.generation ?? 1) }, 'merge');
      });
    } finally {
      statusWriter.close();
    }
    const figures: Figures = { 'conversion objects': s.objects, 'stored (v1, with status) s': round((Date.now() - t0) / 1000) };
    // The webhook answers once the caBundle is in: a v2 read through it is the proof.
    await eventually(
      async () =>
        await bench.admin.get(BUCKETS_V2, ns, name(0)).then(
          () => true,
          () => false,
        ),
      {
        description: 'a v2 read through the webhook',
        timeoutMs: 60_000,
      },
    );

    // Writes in v1 are converted too: kube-apiserver keeps a watch cache per served version of a
    // CRD, so every write is converted into v2's as it happens (and v2 lists are served from it,
    // converted already). Measure once that stream has drained, and take turns between the
    // versions so neither gets a quieter moment.
    const reviews = async () =>
      (await scrape(op.metricsUrl)).filter((x) => x.name === BucketMetric.conversionRequests).reduce((a, x) => a + x.value, 0);
    figures['webhook reviews while storing'] = await settledCount(reviews);
    const kinds = [
      ['v1 (stored)', STORAGE_BUCKET],
      ['v2 (converted)', BUCKETS_V2],
    ] as const;
    const before = await scrape(op.metricsUrl);
    const listMs: number[][] = [[], []];
    for (let r = 0; r < s.lists; r++) {
      for (const [k, [label, kind]] of kinds.entries()) {
        const l0 = performance.now();
        const { items } = await bench.admin.list(kind, { namespace: ns, limit: 500 });
        listMs[k]?.push(performance.now() - l0);
        if (items.length !== s.objects) throw new Error(`list ${label}: ${items.length} of ${s.objects}`);
      }
    }
    const getMs: number[][] = [[], []];
    for (let g = 0; g < s.gets; g++) {
      for (const [k, [, kind]] of kinds.entries()) {
        const g0 = performance.now();
        await bench.admin.get(kind, ns, name((g * 7919) % s.objects));
        getMs[k]?.push(performance.now() - g0);
      }
    }
    for (const [k, [label]] of kinds.entries()) {
      figures[`list ${s.objects} ${label} s (median of ${s.lists}, pages of 500)`] = round(quantile(listMs[k] ?? [], 0.5) / 1000, 2);
      figures[`GET ${label} p50 ms`] = round(quantile(getMs[k] ?? [], 0.5), 2);
      figures[`GET ${label} p99 ms`] = round(quantile(getMs[k] ?? [], 0.99), 2);
    }

    // The webhook's answer times while the clients above read, without the storing phase's.
    const after = await scrape(op.metricsUrl);
    for (const [from, to] of [[v1.VERSION, v2.VERSION]] as const) {
      const earlier = new Map(durationBuckets(before, from, to).map((x) => [x.le, x.count]));
      const b = durationBuckets(after, from, to).map((x) => ({ le: x.le, count: x.count - (earlier.get(x.le) ?? 0) }));
      figures[`webhook answer ${from} -> ${to} p50 ms`] = round(histogramQuantile(b, 0.5) * 1000, 2);
      figures[`webhook answer ${from} -> ${to} p99 ms`] = round(histogramQuantile(b, 0.99) * 1000, 2);
      figures[`webhook reviews ${from} -> ${to} while reading`] = b.find((x) => !Number.isFinite(x.le))?.count ?? 0;
    }
    console.log('conversion:', JSON.stringify(figures));
    return figures;
  } finally {
    await op.kill('SIGTERM');
  }
}
