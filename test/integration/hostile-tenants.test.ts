/**
 * Hostile tenants among normal ones (issue 32): one tenant per hostile mode of the mock provider
 * (huge answers with and without Content-Length, trickled bodies, slow answers, malformed JSON,
 * a redirect to another host, connection resets), each with buckets at its own endpoint, among
 * normal tenants on the shared provider, against the image build run as its Deployment runs it
 * (its NODE_OPTIONS heap limit included). The operator never restarts, its sampled RSS stays
 * under the Deployment's memory limit, each hostile tenant's buckets say what is wrong with their
 * endpoint, the redirect never reaches the host it names, and a normal tenant's new bucket still
 * gets Ready. The times to Ready (p50, p99 over every normal tenant) before and among the
 * hostile tenants are printed, not asserted.
 */
import { expect } from 'chai';
import type { FaultSettings } from '../../provider';
import { RuntimeMetric } from '../../operator/api/metric-names';
import { eventually } from '../support/eventually';
import { apply, bucketManifest, condition, type BucketJson } from '../support/kube';
import { parsePrometheus, sum } from '../support/prometheus';
import { countRequests } from '../support/provider-process';
import { useStack, type Tenant } from '../support/stack';
import { sharedControlPlane } from './setup';

/** Normal tenants on the shared provider, one bucket each (the 50 with HOSTILE_NORMAL_TENANTS=50). */
const NORMAL_TENANTS = Number(process.env.HOSTILE_NORMAL_TENANTS ?? 20);
/** Buckets of each hostile tenant. */
const HOSTILE_BUCKETS = 4;
/** The Deployment's memory limit (infra/manager.ts). */
const MEMORY_LIMIT_BYTES = 256 * 1024 * 1024;

/** A hostile mode, and the reason its tenant's buckets are to show on Ready. */
interface Hostile {
  readonly faults: (sharedProviderUrl: string) => FaultSettings;
  readonly reason: string;
}

const HOSTILE: Record<string, Hostile> = {
  'huge answers (400 MB, Content-Length)': { faults: () => ({ hugeAnswerBytes: 400_000_000 }), reason: 'ProviderAnswerTooLarge' },
  'huge answers (400 MB, chunked)': { faults: () => ({ hugeAnswerBytes: 400_000_000, hugeAnswerChunked: true }), reason: 'ProviderAnswerTooLarge' },
  'trickled bodies (a byte a second)': { faults: () => ({ trickleIntervalMs: 1000 }), reason: 'ProviderTimeout' },
  'slow answers (55 s, then 503)': { faults: () => ({ latencyMs: 55_000, outage: true }), reason: 'ProviderTimeout' },
  'malformed JSON': { faults: () => ({ malformedJson: true }), reason: 'ProviderUnavailable' },
  'a redirect to another host': { faults: (shared) => ({ redirectTo: shared }), reason: 'InvalidSpec' },
  'connection resets': { faults: () => ({ resetRate: 1 }), reason: 'ProviderUnavailable' },
};

const isReady = (b: BucketJson): boolean => condition(b, 'Ready')?.status === 'True';

describe('hostile tenants among normal ones', function () {
  this.timeout(600_000);
  const stack = useStack(sharedControlPlane, { name: 'hostile', operator: { driftInterval: '10s' } });

  /** Every StorageBucket of `namespaces`, by namespace. */
  const bucketsIn = async (namespaces: readonly string[]): Promise<Map<string, BucketJson[]>> => {
    const res = await stack.cp.kubectl(['get', 'sbucket', '-A', '-o', 'json']);
    if (res.code !== 0) throw new Error(`kubectl get sbucket: ${res.stderr.trim()}`);
    const items = (JSON.parse(res.stdout) as { items: Array<BucketJson & { metadata: { namespace: string } }> }).items;
    const out = new Map<string, BucketJson[]>(namespaces.map((ns) => [ns, []]));
    for (const b of items) out.get(b.metadata.namespace)?.push(b);
    return out;
  };

  /** Creates `name` in `ns` and resolves with the ms until it was seen Ready. */
  const readyAfter = async (ns: string, name: string): Promise<number> => {
    const started = performance.now();
    await apply(stack.cp, bucketManifest(ns, name));
    await eventually(async () => (await bucketsIn([ns])).get(ns)?.find((b) => b.metadata.name === name && isReady(b)), {
      description: `bucket ${ns}/${name} to be Ready`,
      timeoutMs: 120_000,
      intervalMs: 250,
    });
    return Math.round(performance.now() - started);
  };

  /** A new bucket in each of `tenants` at once; the ms each took to be Ready, sorted. */
  const readyAfterEach = async (tenants: readonly Tenant[], name: string): Promise<number[]> =>
    (await Promise.all(tenants.map((t) => readyAfter(t.ns, name)))).sort((a, b) => a - b);
  const pct = (sorted: readonly number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;

  /** The operator's RSS and start time, from its own metrics. */
  const processFacts = async (): Promise<{ rss: number; startTime: number }> => {
    const m = parsePrometheus(await stack.metrics());
    return { rss: sum(m, RuntimeMetric.processResidentMemory, {}), startTime: sum(m, 'process_start_time_seconds', {}) };
  };

  it('keeps the operator up and under its memory limit, and a normal tenant’s new bucket gets Ready', async () => {
    const start = await processFacts();
    let peakRss = start.rss;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        peakRss = Math.max(peakRss, (await processFacts().catch(() => start)).rss);
        await new Promise((r) => setTimeout(r, 500));
      }
    })();

    try {
      // Normal tenants, each with a bucket, all Ready before any hostile tenant comes.
      const normal: Tenant[] = await Promise.all(Array.from({ length: NORMAL_TENANTS }, () => stack.tenant({ prefix: 'hostile-normal' })));
      await Promise.all(normal.map((t) => apply(stack.cp, bucketManifest(t.ns, 'b0'))));
      const normalNs = normal.map((t) => t.ns);
      await eventually(async () => [...(await bucketsIn(normalNs)).values()].every((bs) => bs.length === 1 && bs.every(isReady)), {
        description: `the ${NORMAL_TENANTS} normal tenants' buckets to be Ready`,
        timeoutMs: 120_000,
        intervalMs: 500,
      });
      const before = await readyAfterEach(normal, 'before-hostile');

      // One hostile tenant per mode, each with its own provider process and buckets.
      const hostile = await Promise.all(
        Object.entries(HOSTILE).map(async ([mode, h]) => {
          const t = await stack.tenant({ prefix: 'hostile', ownProvider: { faults: h.faults(stack.provider.url) } });
          await Promise.all(Array.from({ length: HOSTILE_BUCKETS }, (_, i) => apply(stack.cp, bucketManifest(t.ns, `h${i}`))));
          return { mode, reason: h.reason, tenant: t };
        }),
      );
      const hostileNs = hostile.map((h) => h.tenant.ns);
      const reasons = async (): Promise<Record<string, string[]>> => {
        const all = await bucketsIn(hostileNs);
        return Object.fromEntries(
          hostile.map((h) => [h.mode, [...new Set((all.get(h.tenant.ns) ?? []).map((b) => condition(b, 'Ready')?.reason ?? '-'))]]),
        );
      };
      // Each hostile tenant's buckets say what its endpoint does; the slow ones take their timeout.
      const want = Object.fromEntries(hostile.map((h) => [h.mode, [h.reason]]));
      const seen = await eventually(
        async () => {
          const got = await reasons();
          expect(got).to.deep.equal(want);
          return got;
        },
        { description: 'every hostile tenant’s buckets to show their reason', timeoutMs: 180_000, intervalMs: 1000 },
      );
      console.log(`      hostile reasons: ${JSON.stringify(seen)}`);

      // A normal tenant's new bucket, among the hostile tenants' retries.
      const among = await readyAfterEach(normal, 'among-hostile');
      console.log(
        `      ${NORMAL_TENANTS} normal tenants' new buckets Ready: before the hostile tenants p50 ${pct(before, 50)} ms, p99 ${pct(before, 99)} ms; among them p50 ${pct(among, 50)} ms, p99 ${pct(among, 99)} ms`,
      );

      // The redirect was never followed: the host it names never saw the hostile tenant's key.
      expect(countRequests(await stack.provider.stats(), / 40[13]$/), 'requests refused at the redirect target').to.equal(0);
      // No other normal tenant's bucket was disturbed.
      expect([...(await bucketsIn(normalNs)).values()].flat().every(isReady), 'normal tenants still Ready').to.equal(true);
    } finally {
      sampling = false;
      await sampler;
    }

    const end = await processFacts();
    console.log(`      operator RSS: peak ${(peakRss / 2 ** 20).toFixed(0)} MiB sampled every 500 ms, limit ${MEMORY_LIMIT_BYTES / 2 ** 20} MiB`);
    expect(end.startTime, 'the operator process started again').to.equal(start.startTime);
    expect(() => process.kill(stack.operator.pid, 0), 'the operator process is alive').to.not.throw();
    expect(stack.operator.logs()).to.not.match(/heap out of memory|FATAL ERROR/);
    expect(peakRss, 'peak RSS sampled').to.be.below(MEMORY_LIMIT_BYTES);
  });
});
