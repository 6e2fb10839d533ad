/**
 * The shape the operator exists for: many teams on one cluster, each with its own namespace,
 * credential Secret (its own provider account) and BucketProviderConfig.
 *
 * - `tenants`: T tenants with B buckets each are created while the operator runs (leader
 *   election on, as the image runs it); time until all are Ready, Lease renewals missed (seen
 *   from outside), peak and steady RSS, cost per bucket.
 * - `noisy`: one tenant bulk-creates N buckets; meanwhile a quiet tenant creates one bucket at a
 *   time, and each one's time to Ready is what that tenant's user waits.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { StorageBucket } from '../operator/api/v1';
import { STORAGE_BUCKET } from '../operator/bucket/kinds';
import { bucketManifest } from '../test/support/kube';
import { Bench, delta, inFlight } from './harness';
import { LeaseMonitor } from '../test/support/lease-monitor';
import { cpuSeconds, peakRssMiB, rssMiB } from './metrics';
import { perBucket, type Figures, type ScenarioSettings } from './scenarios';

const round = (x: number, d = 1) => Math.round(x * 10 ** d) / 10 ** d;

/** The Lease the Deployment's operator holds (dist/: --leader-election-namespace, default id). */
const LEASE = { namespace: 'bucketoperator-system', name: 'bucketoperator-leader' } as const;

/** Settings of the tenants scenario. */
export interface TenantSettings {
  readonly tenants: number;
  readonly bucketsPerTenant: number;
  /** Tenants being set up at once (each: namespace, Secret, config, then its buckets). */
  readonly tenantsInFlight: number;
}

/** Median and maximum of a list of numbers. */
function spread(xs: readonly number[]): { median: number; max: number } {
  const s = [...xs].sort((a, b) => a - b);
  return { median: s[Math.floor(s.length / 2)] ?? 0, max: s[s.length - 1] ?? 0 };
}

/**
 * T tenants, each with its own Secret, account and config and B buckets, created while the
 * operator runs; the default provider rate limit per account stands (each account is its own).
 */
export async function tenants(bench: Bench, t: TenantSettings, s: ScenarioSettings): Promise<Figures> {
  const n = t.tenants * t.bucketsPerTenant;
  const op = await bench.startOperator(s.workers);
  const leases = new LeaseMonitor(bench.admin, LEASE.namespace, LEASE.name).start();
  const figures: Figures = { tenants: t.tenants, 'buckets per tenant': t.bucketsPerTenant, 'idle RSS MiB': round(rssMiB(op.pid), 0) };
  const cpu0 = cpuSeconds(op.pid);
  const r0 = await bench.read();
  const t0 = Date.now();
  await inFlight(t.tenants, t.tenantsInFlight, async (i) => {
    const ns = await bench.tenantNamespace(`tenant-${String(i).padStart(4, '0')}`, i);
    for (let b = 0; b < t.bucketsPerTenant; b++) {
      await bench.admin.create(STORAGE_BUCKET, bucketManifest(ns, `b${String(b).padStart(2, '0')}`, { sizeGB: 10 }) as unknown as StorageBucket);
    }
  });
  figures['created s'] = round((Date.now() - t0) / 1000);
  figures['all Ready s'] = round((await bench.waitAllReadyEverywhere(n, t0, 60 * 60_000)) / 1000);
  const r1 = await bench.read();
  figures['converge CPU s'] = round(cpuSeconds(op.pid) - cpu0);
  figures['converge peak RSS MiB'] = round(peakRssMiB(op.pid), 0);
  Object.assign(figures, perBucket(delta(r0, r1), n));
  // Steady state with every tenant Ready: one drift scan per account per interval.
  await sleep(Math.min(90_000, s.steadySeconds * 1000));
  figures['steady RSS MiB'] = round(rssMiB(op.pid), 0);
  const lease = await leases.stop();
  figures['Lease renewals seen'] = lease.renewals;
  figures['Lease renewals missed'] = lease.missed;
  figures['Lease longest renew gap s'] = lease.maxGapSeconds;
  figures['Lease holder changes'] = lease.holderChanges;
  figures['operator still running'] = bench.operatorAlive() ? 'yes' : 'no';
  console.log(`tenants t=${t.tenants} x ${t.bucketsPerTenant}:`, JSON.stringify(figures));
  await bench.stopOperator();
  return figures;
}

/** Settings of the noisy-neighbour scenario. */
export interface NoisySettings {
  /** Buckets the noisy tenant creates at once. */
  readonly noisyBuckets: number;
  /** Buckets the quiet tenant creates, one after the other, while the noisy one converges. */
  readonly quietProbes: number;
}

/**
 * One tenant creates `noisyBuckets` at once (40 requests in flight); once they are all in the
 * API server, and so queued at the operator, a quiet tenant creates one bucket at a time and
 * waits for each to be Ready. The provider keeps its default rate limit per account, so the
 * noisy account is throttled by the operator as it would be in production.
 */
export async function noisyNeighbour(bench: Bench, t: NoisySettings, s: ScenarioSettings): Promise<Figures> {
  const op = await bench.startOperator(s.workers);
  const leases = new LeaseMonitor(bench.admin, LEASE.namespace, LEASE.name).start();
  const noisy = await bench.tenantNamespace('noisy', 0);
  const quiet = await bench.tenantNamespace('quiet', 1);
  const t0 = Date.now();
  await inFlight(t.noisyBuckets, 40, async (i) => {
    await bench.admin.create(STORAGE_BUCKET, bucketManifest(noisy, `n${String(i).padStart(5, '0')}`, { sizeGB: 10 }) as unknown as StorageBucket);
  });
  const figures: Figures = { 'noisy buckets': t.noisyBuckets, 'noisy created s': round((Date.now() - t0) / 1000) };
  const latencies: number[] = [];
  for (let i = 0; i < t.quietProbes; i++) {
    const t1 = Date.now();
    await bench.admin.create(STORAGE_BUCKET, bucketManifest(quiet, `q${i}`, { sizeGB: 10 }) as unknown as StorageBucket);
    await bench.waitReady(quiet, `q${i}`, 10 * 60_000);
    latencies.push(Date.now() - t1);
  }
  const noisyNow = await bench.count(noisy);
  const { median, max } = spread(latencies);
  figures['quiet new bucket Ready s (median)'] = round(median / 1000, 2);
  figures['quiet new bucket Ready s (max)'] = round(max / 1000, 2);
  figures['quiet probes'] = latencies.map((ms) => round(ms / 1000, 2)).join(' ');
  figures['noisy Ready when the probes ended'] = `${noisyNow.ready} of ${t.noisyBuckets}`;
  figures['peak RSS MiB'] = round(peakRssMiB(op.pid), 0);
  const lease = await leases.stop();
  figures['Lease renewals missed'] = lease.missed;
  figures['Lease longest renew gap s'] = lease.maxGapSeconds;
  console.log('noisy neighbour:', JSON.stringify(figures));
  await bench.stopOperator();
  return figures;
}
