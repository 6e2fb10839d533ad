/**
 * Bulk drift detection end to end: the operator under its ServiceAccount token, the provider
 * as a real process, a 2 s drift interval. Drift made through the provider's admin API is
 * corrected and a bucket deleted there is recreated, while Ready buckets cost the provider one
 * list per scan and no per-bucket GET, in steady state and after a restart; deleting buckets
 * costs one DELETE each and no GET. Call counts come from the provider's own /admin/stats.
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ProviderStats } from '../../provider';
import { type ControlPlane } from '../support/control-plane';
import { applyDist } from '../support/dist';
import { apply, bucketManifest, condition, getJson, kubectlOk, providerManifests, type BucketJson } from '../support/kube';
import { startOperatorProcess, type OperatorProcess } from '../support/operator-process';
import { startProviderProcess, type ProviderProcess } from '../support/provider-process';
import { freshNamespace, sharedControlPlane } from './setup';
import { eventually } from '../support/eventually';

const COUNT = 6;
const LIST = 'GET /buckets 200';
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
  Object.entries(d).filter(([k]) => k.startsWith(`${method} /buckets/{id} `)).reduce((n, [, v]) => n + v, 0);

describe('bulk drift detection (one provider list per scan instead of a GET per bucket)', function () {
  this.timeout(180_000);
  let cp: ControlPlane;
  let provider: ProviderProcess;
  let operator: OperatorProcess | undefined;
  let ns: string;
  let tmp: string;
  let kubeconfig: string;
  const names = Array.from({ length: COUNT }, (_, i) => `d${i}`);

  const start = async () => {
    operator = await startOperatorProcess({ kubeconfig, logFile: join(tmp, 'operator.log'), driftInterval: '2s' });
  };
  const listBuckets = async () =>
    (JSON.parse(await kubectlOk(cp, ['get', 'sbucket', '-n', ns, '-o', 'json'])) as { items: BucketJson[] }).items;
  const allReady = (description: string) =>
    eventually(async () => {
      const items = await listBuckets();
      return items.length === COUNT && items.every(isReady) ? items : undefined;
    }, { description, timeoutMs: 90_000, intervalMs: 250 });
  /** Waits until the operator has listed the provider `scans` more times than in `from`. */
  const scansAfter = (from: ProviderStats, scans: number) =>
    eventually(async () => {
      const now = await provider.stats();
      return (now.requests[LIST] ?? 0) - (from.requests[LIST] ?? 0) >= scans ? now : undefined;
    }, { description: `${scans} drift scans`, timeoutMs: 60_000, intervalMs: 200 });

  before(async () => {
    cp = await sharedControlPlane();
    await applyDist(cp);
    tmp = mkdtempSync(join(tmpdir(), 'bucketoperator-drift-'));
    provider = await startProviderProcess({ activationDelayMs: 300 });
    ns = await freshNamespace(cp, 'drift');
    for (const m of providerManifests(ns, provider.url, provider.apiKey)) await apply(cp, m);
    kubeconfig = await cp.serviceAccountKubeconfig('bucketoperator-system', 'bucketoperator-controller-manager');
    await start();
    await apply(cp, { apiVersion: 'v1', kind: 'List', items: names.map((n) => bucketManifest(ns, n, { sizeGB: 10 })) });
    await allReady(`all ${COUNT} buckets to be Ready`);
  });

  let failed = false;
  afterEach(function () {
    if (this.currentTest?.state === 'failed') failed = true;
  });

  after(async () => {
    await operator?.kill('SIGTERM');
    await provider?.stop();
    if (failed) console.log(`operator log kept in ${tmp}`);
    else if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it('tags the buckets it creates, so one filtered list finds them all', async () => {
    const atProvider = await provider.buckets(ns);
    expect(atProvider).to.have.length(COUNT);
    for (const b of atProvider) expect(b.tags['managed-by']).to.equal('bucketoperator');
  });

  it('corrects a resize or encryption change made at the provider', async () => {
    const [a, b] = await Promise.all([getJson<BucketJson>(cp, 'sbucket', 'd0', ns), getJson<BucketJson>(cp, 'sbucket', 'd1', ns)]);
    await provider.tamper(a!.status!.id!, { sizeGB: 3 });
    await provider.tamper(b!.status!.id!, { encrypted: true });
    await eventually(async () => {
      const byId = new Map((await provider.buckets(ns)).map((x) => [x.id, x]));
      const x = byId.get(a!.status!.id!);
      const y = byId.get(b!.status!.id!);
      return x?.sizeGB === 10 && x.phase === 'Active' && y?.encrypted === false ? true : undefined;
    }, { description: 'the drift to be corrected', timeoutMs: 30_000, intervalMs: 200 });
    await allReady('all Ready again after the correction');
    // Each correction is counted by the field that drifted.
    const text = await (await fetch(operator!.metricsUrl)).text();
    const corrected = (field: string) => Number(new RegExp(`^bucketoperator_drift_corrected_total\\{field="${field}"\\} (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
    expect(corrected('sizeGB'), 'sizeGB corrections counted').to.be.at.least(1);
    expect(corrected('encrypted'), 'encrypted corrections counted').to.be.at.least(1);
  });

  it('recreates a bucket deleted at the provider', async () => {
    const before = (await getJson<BucketJson>(cp, 'sbucket', 'd2', ns))!;
    await provider.remove(before.status!.id!);
    const after = await eventually(async () => {
      const b = await getJson<BucketJson>(cp, 'sbucket', 'd2', ns);
      return b && isReady(b) && b.status?.id !== before.status?.id ? b : undefined;
    }, { description: 'd2 to be recreated', timeoutMs: 30_000, intervalMs: 200 });
    const mine = (await provider.buckets(ns)).filter((x) => x.tags['kubernetes-name'] === 'd2');
    expect(mine.map((x) => x.id)).to.deep.equal([after.status?.id]);
  });

  it('in steady state lists once per scan and never GETs a Ready bucket', async () => {
    await allReady('all Ready before the window');
    // The window starts after one more scan, so work started before it is finished.
    const first = await scansAfter(await provider.stats(), 1);
    const last = await scansAfter(first, 3);
    const d = delta(first, last);
    expect(perBucket(d, 'GET'), JSON.stringify(d)).to.equal(0);
    // Nothing but the scans' lists (one page each for six buckets).
    expect(Object.keys(d), JSON.stringify(d)).to.deep.equal([LIST]);
  });

  it('after a restart observes no Ready bucket one by one', async () => {
    const before = await provider.stats();
    await operator?.kill('SIGTERM');
    await start();
    // The new process's first scan comes right after its start; wait for two to be sure it ran.
    const after = await scansAfter(before, 2);
    await allReady('all Ready after the restart');
    const d = delta(before, after);
    expect(perBucket(d, 'GET'), JSON.stringify(d)).to.equal(0);
    expect(Object.keys(d), JSON.stringify(d)).to.deep.equal([LIST]);
  });

  it('deletes N buckets with N provider DELETEs and no GET', async () => {
    const before = await provider.stats();
    await kubectlOk(cp, ['delete', 'sbucket', '--all', '-n', ns, '--timeout=60s']);
    expect(await listBuckets()).to.deep.equal([]);
    const d = delta(before, await provider.stats());
    expect(await provider.buckets(ns)).to.deep.equal([]);
    expect(d['DELETE /buckets/{id} 204'], JSON.stringify(d)).to.equal(COUNT);
    expect(perBucket(d, 'GET'), JSON.stringify(d)).to.equal(0);
    // Besides the DELETEs only the scans' lists, which go on meanwhile.
    expect(Object.keys(d).filter((k) => k !== LIST && k !== 'DELETE /buckets/{id} 204'), JSON.stringify(d)).to.deep.equal([]);
  });
});
