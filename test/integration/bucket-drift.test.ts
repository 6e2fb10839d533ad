/**
 * Bulk drift detection end to end: the operator under its ServiceAccount token, the provider
 * as a real process, a 2 s drift interval. Drift made through the provider's admin API is
 * corrected and a bucket deleted there is recreated, while Ready buckets cost the provider one
 * list per scan and no per-bucket GET, in steady state and after a restart; deleting buckets
 * costs one DELETE each and no GET. Call counts come from the /admin/stats of a provider
 * process of the test's own, so only its tenant's calls are counted.
 */
import { expect } from 'chai';
import type { ProviderStats } from '../../provider';
import { eventually } from '../support/eventually';
import { apply, bucketManifest, condition, getJson, kubectlOk, type BucketJson } from '../support/kube';
import type { ProviderProcess } from '../support/provider-process';
import { useStack, type Tenant } from '../support/stack';
import { sharedControlPlane } from './setup';

const COUNT = 6;
const LIST = 'GET /buckets 200';
/** Which account the key belongs to: asked once per account by each operator process. */
const ACCOUNT = 'GET /account 200';
const isReady = (b: BucketJson) => condition(b, 'Ready')?.status === 'True' && b.status?.observedGeneration === b.metadata.generation;

/** Requests per stats key of the bucket API between two snapshots (the test's own admin calls aside). */
function delta(before: ProviderStats, after: ProviderStats): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(after.requests)) {
    if (k.includes(' /admin/')) continue;
    const d = v - (before.requests[k] ?? 0);
    if (d !== 0) out[k] = d;
  }
  return out;
}

/** Requests of a method on the per-bucket route, whatever the status. */
const perBucket = (d: Record<string, number>, method: string) =>
  Object.entries(d)
    .filter(([k]) => k.startsWith(`${method} /buckets/{id} `))
    .reduce((n, [, v]) => n + v, 0);

describe('bulk drift detection (one provider list per scan instead of a GET per bucket)', function () {
  this.timeout(180_000);
  const stack = useStack(sharedControlPlane, { name: 'drift', provider: { activationDelayMs: 300 }, operator: { driftInterval: '2s' } });

  const listBuckets = async (t: Tenant) =>
    (JSON.parse(await kubectlOk(stack.cp, ['get', 'sbucket', '-n', t.ns, '-o', 'json'])) as { items: BucketJson[] }).items;
  const allReady = (t: Tenant, count: number, description: string) =>
    eventually(
      async () => {
        const items = await listBuckets(t);
        return items.length === count && items.every(isReady) ? items : undefined;
      },
      { description, timeoutMs: 90_000, intervalMs: 250 },
    );
  /** A tenant with a provider of its own and `count` Ready buckets `d0`, `d1`, ... */
  const tenantWithBuckets = async (count = COUNT) => {
    const t = await stack.tenant({ ownProvider: { activationDelayMs: 300 } });
    const names = Array.from({ length: count }, (_, i) => `d${i}`);
    await apply(stack.cp, { apiVersion: 'v1', kind: 'List', items: names.map((n) => bucketManifest(t.ns, n, { sizeGB: 10 })) });
    await allReady(t, count, `all ${count} buckets to be Ready`);
    return t;
  };
  /** Waits until the operator has listed the provider `scans` more times than in `from`. */
  const scansAfter = (provider: ProviderProcess, from: ProviderStats, scans: number) =>
    eventually(
      async () => {
        const now = await provider.stats();
        return (now.requests[LIST] ?? 0) - (from.requests[LIST] ?? 0) >= scans ? now : undefined;
      },
      { description: `${scans} drift scans`, timeoutMs: 60_000, intervalMs: 200 },
    );

  it('tags the buckets it creates, so one filtered list finds them all', async () => {
    const t = await tenantWithBuckets();
    const atProvider = await t.provider.buckets(t.ns);
    expect(atProvider).to.have.length(COUNT);
    for (const b of atProvider) expect(b.tags['managed-by']).to.equal('bucketoperator');
  });

  it('corrects a resize or encryption change made at the provider', async () => {
    const t = await tenantWithBuckets(2);
    const { cp } = stack;
    const [a, b] = await Promise.all([getJson<BucketJson>(cp, 'sbucket', 'd0', t.ns), getJson<BucketJson>(cp, 'sbucket', 'd1', t.ns)]);
    await t.provider.tamper(a!.status!.id!, { sizeGB: 3 });
    await t.provider.tamper(b!.status!.id!, { encrypted: true });
    await eventually(
      async () => {
        const byId = new Map((await t.provider.buckets(t.ns)).map((x) => [x.id, x]));
        const x = byId.get(a!.status!.id!);
        const y = byId.get(b!.status!.id!);
        return x?.sizeGB === 10 && x.phase === 'Active' && y?.encrypted === false ? true : undefined;
      },
      { description: 'the drift to be corrected', timeoutMs: 30_000, intervalMs: 200 },
    );
    await allReady(t, 2, 'all Ready again after the correction');
    // Each correction is counted by the field that drifted.
    const text = await stack.metrics();
    const corrected = (field: string) =>
      Number(new RegExp(`^bucketoperator_drift_corrected_total\\{field="${field}"\\} (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
    expect(corrected('sizeGB'), 'sizeGB corrections counted').to.be.at.least(1);
    expect(corrected('encrypted'), 'encrypted corrections counted').to.be.at.least(1);
  });

  it('recreates a bucket deleted at the provider', async () => {
    const t = await tenantWithBuckets(1);
    const { cp } = stack;
    const before = (await getJson<BucketJson>(cp, 'sbucket', 'd0', t.ns))!;
    await t.provider.remove(before.status!.id!);
    const after = await eventually(
      async () => {
        const b = await getJson<BucketJson>(cp, 'sbucket', 'd0', t.ns);
        return b && isReady(b) && b.status?.id !== before.status?.id ? b : undefined;
      },
      { description: 'd0 to be recreated', timeoutMs: 30_000, intervalMs: 200 },
    );
    const mine = (await t.provider.buckets(t.ns)).filter((x) => x.tags['kubernetes-name'] === 'd0');
    expect(mine.map((x) => x.id)).to.deep.equal([after.status?.id]);
  });

  it('in steady state lists once per scan and never GETs a Ready bucket', async () => {
    const t = await tenantWithBuckets();
    // The window starts after one more scan, so work started before it is finished.
    const first = await scansAfter(t.provider, await t.provider.stats(), 1);
    const last = await scansAfter(t.provider, first, 3);
    const d = delta(first, last);
    expect(perBucket(d, 'GET'), JSON.stringify(d)).to.equal(0);
    // Nothing but the scans' lists (one page each for six buckets).
    expect(Object.keys(d), JSON.stringify(d)).to.deep.equal([LIST]);
  });

  it('after a restart observes no Ready bucket one by one', async () => {
    const t = await tenantWithBuckets();
    const before = await t.provider.stats();
    await stack.restartOperator();
    // The new process's first scan comes right after its start; wait for two to be sure it ran.
    const after = await scansAfter(t.provider, before, 2);
    await allReady(t, COUNT, 'all Ready after the restart');
    const d = delta(before, after);
    expect(perBucket(d, 'GET'), JSON.stringify(d)).to.equal(0);
    // Lists, and the new process asking once which account its key belongs to.
    const { [ACCOUNT]: accountLookups = 0, ...rest } = d;
    expect(Object.keys(rest), JSON.stringify(d)).to.deep.equal([LIST]);
    expect(accountLookups, JSON.stringify(d)).to.be.at.most(1);
  });

  it("a tenant whose provider answers its list with 200 {} fails alone: its config says so, another tenant's drift is still corrected", async () => {
    const broken = await tenantWithBuckets(1);
    const fine = await tenantWithBuckets(1);
    await broken.provider.setFaults({ listEmptyObject: true });
    const config = await eventually(
      async () => {
        const c = await getJson<BucketJson>(stack.cp, 'bucketproviderconfig', 'provider', broken.ns);
        return c && condition(c, 'DriftScanned')?.status === 'False' ? c : undefined;
      },
      { description: "the broken tenant's config to report the failed scan", timeoutMs: 30_000, intervalMs: 250 },
    );
    expect(condition(config, 'DriftScanned')).to.include({ reason: 'DriftScanFailed' });
    expect(condition(config, 'DriftScanned')?.message).to.match(
      /^UnusableAnswer: drift scan: provider list is unusable: the answer has no items array$/,
    );
    const events = await kubectlOk(stack.cp, ['get', 'events', '-n', broken.ns, '--field-selector', 'reason=DriftScanFailed', '-o', 'name']);
    expect(events.trim().split('\n').filter(Boolean)).to.have.length(1);
    // The other tenant's scans go on: a resize at its provider is corrected.
    const d0 = (await getJson<BucketJson>(stack.cp, 'sbucket', 'd0', fine.ns))!;
    await fine.provider.tamper(d0.status!.id!, { sizeGB: 3 });
    await eventually(async () => (await fine.provider.buckets(fine.ns)).find((x) => x.id === d0.status!.id)?.sizeGB === 10, {
      description: "the fine tenant's drift to be corrected",
      timeoutMs: 30_000,
      intervalMs: 200,
    });
    // And the broken one recovers once its provider answers again.
    await broken.provider.setFaults({});
    await eventually(
      async () => {
        const c = await getJson<BucketJson>(stack.cp, 'bucketproviderconfig', 'provider', broken.ns);
        return c !== undefined && condition(c, 'DriftScanned')?.status === 'True';
      },
      { description: 'the broken tenant to scan again', timeoutMs: 30_000, intervalMs: 250 },
    );
  });

  it('deletes N buckets with N provider DELETEs and no GET', async () => {
    const t = await tenantWithBuckets();
    const before = await t.provider.stats();
    await kubectlOk(stack.cp, ['delete', 'sbucket', '--all', '-n', t.ns, '--timeout=60s']);
    expect(await listBuckets(t)).to.deep.equal([]);
    const d = delta(before, await t.provider.stats());
    expect(await t.provider.buckets(t.ns)).to.deep.equal([]);
    expect(d['DELETE /buckets/{id} 204'], JSON.stringify(d)).to.equal(COUNT);
    expect(perBucket(d, 'GET'), JSON.stringify(d)).to.equal(0);
    // Besides the DELETEs only the scans' lists, which go on meanwhile.
    expect(
      Object.keys(d).filter((k) => k !== LIST && k !== 'DELETE /buckets/{id} 204'),
      JSON.stringify(d),
    ).to.deep.equal([]);
  });
});
