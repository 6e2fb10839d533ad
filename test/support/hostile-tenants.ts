/**
 * The hostile-tenants scenario (issue 32), shared by the end-to-end test
 * (test/integration/hostile-tenants.test.ts) and the bench (bench/hostile.ts): normal tenants
 * on the shared provider, each with a bucket; every normal tenant makes a new bucket and the
 * time to Ready is taken; then one tenant per hostile mode of the mock provider (huge answers
 * with and without Content-Length, trickled bodies, slow answers, malformed JSON, a redirect to
 * another host, connection resets) with buckets at its own endpoint; once each hostile tenant's
 * buckets say what is wrong, every normal tenant makes another bucket and the time is taken
 * again. The operator's RSS is sampled from its metrics throughout.
 */
import type { FaultSettings } from '../../provider';
import { RuntimeMetric } from '../../operator/api/metric-names';
import { eventually } from './eventually';
import { apply, bucketManifest, condition, type BucketJson } from './kube';
import { parsePrometheus, sum } from './prometheus';
import type { Stack, Tenant } from './stack';

/** A hostile mode, and the reason its tenant's buckets are to show on Ready. */
export interface HostileMode {
  readonly faults: (sharedProviderUrl: string) => FaultSettings;
  readonly reason: string;
}

/** One tenant per mode. */
export const HOSTILE_MODES: Readonly<Record<string, HostileMode>> = {
  'huge answers (400 MB, Content-Length)': { faults: () => ({ hugeAnswerBytes: 400_000_000 }), reason: 'ProviderAnswerTooLarge' },
  'huge answers (400 MB, chunked)': { faults: () => ({ hugeAnswerBytes: 400_000_000, hugeAnswerChunked: true }), reason: 'ProviderAnswerTooLarge' },
  'trickled bodies (a byte a second)': { faults: () => ({ trickleIntervalMs: 1000 }), reason: 'ProviderTimeout' },
  'slow answers (55 s, then 503)': { faults: () => ({ latencyMs: 55_000, outage: true }), reason: 'ProviderTimeout' },
  'malformed JSON': { faults: () => ({ malformedJson: true }), reason: 'ProviderUnavailable' },
  'a redirect to another host': { faults: (shared) => ({ redirectTo: shared }), reason: 'InvalidSpec' },
  'connection resets': { faults: () => ({ resetRate: 1 }), reason: 'ProviderUnavailable' },
};

/** What a run of the scenario saw. */
export interface HostileRun {
  /** Ms each normal tenant's new bucket took to be Ready before the hostile tenants came, sorted. */
  readonly before: readonly number[];
  /** The same among them, sorted. */
  readonly among: readonly number[];
  /** Each mode's distinct Ready reasons, once each showed its own. */
  readonly reasons: Readonly<Record<string, readonly string[]>>;
  /** The wanted reason of each mode. */
  readonly want: Readonly<Record<string, readonly string[]>>;
  /** Highest RSS sampled (every 500 ms), bytes. */
  readonly peakRss: number;
  /** process_start_time_seconds at the start and at the end: equal when the operator never restarted. */
  readonly startTimes: readonly [number, number];
  /** Normal tenants' namespaces. */
  readonly normalNs: readonly string[];
}

/** Settings of {@link runHostileTenants}. */
export interface HostileOptions {
  readonly normalTenants: number;
  readonly hostileBuckets: number;
}

const isReady = (b: BucketJson): boolean => condition(b, 'Ready')?.status === 'True';

/** `q`-th percentile (0-100) of sorted `values`, nearest rank. */
export function percentile(sorted: readonly number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((q / 100) * sorted.length) - 1))] ?? 0;
}

/** Every StorageBucket of `namespaces`, by namespace. */
export async function bucketsIn(stack: Stack, namespaces: readonly string[]): Promise<Map<string, BucketJson[]>> {
  const res = await stack.cp.kubectl(['get', 'sbucket', '-A', '-o', 'json']);
  if (res.code !== 0) throw new Error(`kubectl get sbucket: ${res.stderr.trim()}`);
  const items = (JSON.parse(res.stdout) as { items: Array<BucketJson & { metadata: { namespace: string } }> }).items;
  const out = new Map<string, BucketJson[]>(namespaces.map((ns) => [ns, []]));
  for (const b of items) out.get(b.metadata.namespace)?.push(b);
  return out;
}

/** True when every bucket of `namespaces` is Ready. */
export async function allReady(stack: Stack, namespaces: readonly string[]): Promise<boolean> {
  return [...(await bucketsIn(stack, namespaces)).values()].flat().every(isReady);
}

/** Runs the scenario on `stack` (see the module comment). */
export async function runHostileTenants(stack: Stack, opts: HostileOptions): Promise<HostileRun> {
  const facts = async (): Promise<{ rss: number; startTime: number }> => {
    const m = parsePrometheus(await stack.metrics());
    return { rss: sum(m, RuntimeMetric.processResidentMemory, {}), startTime: sum(m, 'process_start_time_seconds', {}) };
  };
  // One poll for all of them: a poller per bucket would load the machine more than the operator.
  const readyAfterEach = async (tenants: readonly Tenant[], name: string): Promise<number[]> => {
    const started = performance.now();
    await Promise.all(tenants.map((t) => apply(stack.cp, bucketManifest(t.ns, name))));
    const readyAt = new Map<string, number>();
    await eventually(
      async () => {
        const all = await bucketsIn(
          stack,
          tenants.map((t) => t.ns),
        );
        const now = performance.now();
        for (const t of tenants) {
          if (!readyAt.has(t.ns) && all.get(t.ns)?.some((b) => b.metadata.name === name && isReady(b))) readyAt.set(t.ns, now - started);
        }
        return readyAt.size === tenants.length;
      },
      { description: `the new bucket ${name} of ${tenants.length} tenants to be Ready`, timeoutMs: 180_000, intervalMs: 250 },
    );
    return [...readyAt.values()].map(Math.round).sort((a, b) => a - b);
  };

  const start = await facts();
  let peakRss = start.rss;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      peakRss = Math.max(peakRss, (await facts().catch(() => start)).rss);
      await new Promise((r) => setTimeout(r, 500));
    }
  })();
  try {
    const normal: Tenant[] = await Promise.all(Array.from({ length: opts.normalTenants }, () => stack.tenant({ prefix: 'hostile-normal' })));
    await Promise.all(normal.map((t) => apply(stack.cp, bucketManifest(t.ns, 'b0'))));
    const normalNs = normal.map((t) => t.ns);
    await eventually(async () => [...(await bucketsIn(stack, normalNs)).values()].every((bs) => bs.length === 1 && bs.every(isReady)), {
      description: `the ${opts.normalTenants} normal tenants' buckets to be Ready`,
      timeoutMs: 180_000,
      intervalMs: 500,
    });
    const before = await readyAfterEach(normal, 'before-hostile');

    const hostile = await Promise.all(
      Object.entries(HOSTILE_MODES).map(async ([mode, h]) => {
        const t = await stack.tenant({ prefix: 'hostile', ownProvider: { faults: h.faults(stack.provider.url) } });
        await Promise.all(Array.from({ length: opts.hostileBuckets }, (_, i) => apply(stack.cp, bucketManifest(t.ns, `h${i}`))));
        return { mode, reason: h.reason, tenant: t };
      }),
    );
    const hostileNs = hostile.map((h) => h.tenant.ns);
    const want = Object.fromEntries(hostile.map((h) => [h.mode, [h.reason]]));
    // Each hostile tenant's buckets say what its endpoint does; the slow ones take their timeout.
    const reasons = await eventually(
      async () => {
        const all = await bucketsIn(stack, hostileNs);
        const got = Object.fromEntries(
          hostile.map((h) => [h.mode, [...new Set((all.get(h.tenant.ns) ?? []).map((b) => condition(b, 'Ready')?.reason ?? '-'))]]),
        );
        return JSON.stringify(got) === JSON.stringify(want) ? got : undefined;
      },
      { description: 'every hostile tenant’s buckets to show their reason', timeoutMs: 180_000, intervalMs: 1000 },
    );
    const among = await readyAfterEach(normal, 'among-hostile');
    sampling = false;
    await sampler;
    const end = await facts();
    return { before, among, reasons, want, peakRss, startTimes: [start.startTime, end.startTime], normalNs };
  } finally {
    sampling = false;
    await sampler;
  }
}
