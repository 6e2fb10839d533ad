/**
 * The shape the operator exists for, at a size where one tenant's costs would show: 100
 * namespaces, each with its own credential Secret (its own provider account), config and two
 * buckets, all set up at once while the operator runs under its ServiceAccount with leader
 * election on (as the Deployment runs it). All go Ready, the Lease is renewed throughout (seen
 * from outside), and a credential rotation in one tenant re-reconciles that tenant's buckets only.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import type { StorageBucket } from '../../operator/api/v1';
import { PROVIDER_CONFIG, SECRET, STORAGE_BUCKET } from '../../operator/bucket/kinds';
import { KubeClient } from '../../operator/runtime/client';
import type { KubeObject, ResourceKind } from '../../operator/runtime/types';
import { eventually } from '../support/eventually';
import { bucketManifest, providerManifests } from '../support/kube';
import { LeaseMonitor, type LeaseReport } from '../support/lease-monitor';
import { parsePrometheus, sum } from '../support/prometheus';
import { startProviderProcess, type ProviderProcess } from '../support/provider-process';
import { useStack } from '../support/stack';
import { sharedControlPlane } from './setup';

const TENANTS = 100;
const BUCKETS_PER_TENANT = 2;
const NAMESPACE: ResourceKind = { group: '', version: 'v1', kind: 'Namespace', plural: 'namespaces', namespaced: false };
/** The Lease of the Deployment's operator (dist/ passes --leader-elect and its namespace). */
const LEASE = { namespace: 'bucketoperator-system', name: 'bucketoperator-leader' } as const;
/** controller-runtime's lease duration: a gap this long would have let a standby take over. */
const LEASE_DURATION_S = 15;

const isReady = (b: StorageBucket): boolean => b.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;

/** Runs `task(0..n-1)` with at most `concurrency` in flight. */
async function inFlight(n: number, concurrency: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) await task(next++);
    }),
  );
}

describe('many tenants on one operator', function () {
  this.timeout(600_000);
  // Registered before useStack's own hooks, so the tenants are deprovisioned while the
  // operator still runs, and its stop comes after (mocha runs after-hooks in order).
  after(async function () {
    this.timeout(120_000);
    leaseReport ??= await lease?.stop();
    await stack.cp.kubectl(['delete', 'namespace', ...keys.map((_, i) => nsOf(i)), '--wait=false', '--ignore-not-found']);
    // Deprovisioned while the provider still runs, so no later file's operator inherits them.
    await eventually(
      async () => {
        const { items } = await admin.list<StorageBucket>(STORAGE_BUCKET, { limit: 500 });
        return items.every((b) => !b.metadata.namespace?.startsWith(`mt-${run}-`));
      },
      { description: 'the tenants’ buckets to be deprovisioned', timeoutMs: 90_000, intervalMs: 1000 },
    ).catch((err: unknown) => console.log(`cleanup: ${err instanceof Error ? err.message : String(err)}`));
    await provider?.stop();
    admin?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const stack = useStack(sharedControlPlane, { name: 'tenants' });
  const run = randomBytes(3).toString('hex');
  const nsOf = (i: number): string => `mt-${run}-${String(i).padStart(3, '0')}`;
  const keys = Array.from({ length: TENANTS }, (_, i) => `mt${i}-${randomBytes(8).toString('hex')}`);
  let admin: KubeClient;
  let provider: ProviderProcess;
  let dir: string;
  let lease: LeaseMonitor;
  let leaseReport: LeaseReport | undefined;

  before(async function () {
    this.timeout(120_000);
    admin = new KubeClient({ restConfig: stack.cp.restConfig(), maxSockets: 32 });
    dir = mkdtempSync(join(tmpdir(), 'bucketoperator-tenants-'));
    const keysFile = join(dir, 'keys');
    writeFileSync(keysFile, keys.join('\n') + '\n');
    // One provider account per tenant: each API key is an account of its own.
    provider = await startProviderProcess({ activationDelayMs: 500, extraArgs: ['--api-keys-file', keysFile] });
    lease = new LeaseMonitor(admin, LEASE.namespace, LEASE.name).start();
  });

  it('sets up 100 tenants at once: every bucket Ready, the Lease renewed throughout, a rotation touching one tenant only', async () => {
    // Tenant 0 starts with a key its account does not accept; its rotation comes last.
    const wrongKey = `wrong-${randomBytes(8).toString('hex')}`;
    await inFlight(TENANTS, 10, async (i) => {
      const ns = nsOf(i);
      await admin.create(NAMESPACE, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
      const [secret, config] = providerManifests(ns, provider.url, i === 0 ? wrongKey : (keys[i] ?? ''));
      await admin.create(SECRET, secret as unknown as KubeObject);
      await admin.create(PROVIDER_CONFIG, config as unknown as KubeObject);
      for (let b = 0; b < BUCKETS_PER_TENANT; b++) {
        await admin.create(STORAGE_BUCKET, bucketManifest(ns, `b${b}`) as unknown as StorageBucket);
      }
    });

    const ours = async (): Promise<StorageBucket[]> =>
      (await admin.list<StorageBucket>(STORAGE_BUCKET, { limit: 500 })).items.filter((b) => b.metadata.namespace?.startsWith(`mt-${run}-`));
    const others = (bs: StorageBucket[]) => bs.filter((b) => b.metadata.namespace !== nsOf(0));
    await eventually(async () => others(await ours()).filter(isReady).length === (TENANTS - 1) * BUCKETS_PER_TENANT, {
      description: `${(TENANTS - 1) * BUCKETS_PER_TENANT} buckets of ${TENANTS - 1} tenants Ready`,
      timeoutMs: 240_000,
      intervalMs: 1000,
    });
    await eventually(
      async () =>
        (await ours())
          .filter((b) => b.metadata.namespace === nsOf(0))
          .every((b) => b.status?.conditions?.some((c) => c.type === 'Ready' && c.reason === 'CredentialsRejected')),
      { description: 'tenant 0 blocked on its rejected key', timeoutMs: 60_000, intervalMs: 500 },
    );
    // Each tenant's buckets live in its own account at the provider.
    expect((await provider.buckets(nsOf(1))).length).to.equal(BUCKETS_PER_TENANT);

    // The rotation: tenant 0 puts its real key in. Only its buckets may be reconciled for it.
    const reconciles = async (): Promise<number> =>
      sum(parsePrometheus(await stack.metrics()), 'controller_runtime_reconcile_total', { controller: 'storagebucket' });
    const versionsOfOthers = async () =>
      Object.fromEntries(others(await ours()).map((b) => [`${b.metadata.namespace ?? ''}/${b.metadata.name ?? ''}`, b.metadata.resourceVersion]));
    const othersBefore = await versionsOfOthers();
    const before = await reconciles();
    await admin.patch(SECRET, nsOf(0), 'provider-key', { stringData: { apiKey: keys[0] ?? '' } }, 'merge');
    await eventually(async () => (await ours()).filter((b) => b.metadata.namespace === nsOf(0)).every(isReady), {
      description: 'tenant 0 Ready after its rotation',
      timeoutMs: 60_000,
      intervalMs: 250,
    });
    // Barrier: the StorageBucket queue is empty and idle, so whatever the rotation enqueued has run.
    await eventually(
      async () => {
        const m = parsePrometheus(await stack.metrics());
        return (
          sum(m, 'workqueue_depth', { name: 'storagebucket' }) === 0 && sum(m, 'workqueue_unfinished_work_seconds', { name: 'storagebucket' }) === 0
        );
      },
      { description: 'the StorageBucket queue to drain', timeoutMs: 60_000, intervalMs: 250 },
    );
    const spent = (await reconciles()) - before;
    // Tenant 0's two buckets, up to six each: the rotation's enqueue, the create, a poll or two
    // (activation and poll interval are both 500 ms, so a loaded machine adds one), and the
    // events of the status write and of the new Secret and Service; never the other 198. (A
    // bound of four each failed CI once with 9.)
    expect(spent, 'reconciles after one tenant rotated its key').to.be.within(BUCKETS_PER_TENANT, 6 * BUCKETS_PER_TENANT);
    // And nothing of any other tenant's was written.
    expect(await versionsOfOthers()).to.deep.equal(othersBefore);

    leaseReport = await lease.stop();
    console.log(`      Lease: ${JSON.stringify(leaseReport)}`);
    expect(leaseReport.renewals, 'Lease renewals seen').to.be.at.least(2);
    expect(leaseReport.holderChanges, 'the Lease changed hands').to.equal(0);
    expect(leaseReport.maxGapSeconds, 'longest time between two Lease renewals (s)').to.be.below(LEASE_DURATION_S);
  });
});
