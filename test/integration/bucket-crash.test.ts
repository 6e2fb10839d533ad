/**
 * Crash safety: the operator is SIGKILLed at arbitrary points while 20 buckets are created and
 * again while they are deleted, the provider drops the connection after committing some
 * creates, and the API server restarts mid-way. Afterwards there is exactly one provider bucket per StorageBucket, and none once
 * they are deleted.
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ControlPlane } from '../support/control-plane';
import { applyDist } from '../support/dist';
import { apply, bucketManifest, condition, kubectlOk, providerManifests, type BucketJson } from '../support/kube';
import { startOperatorProcess, type OperatorProcess } from '../support/operator-process';
import { startProviderProcess, type ProviderProcess } from '../support/provider-process';
import { freshNamespace, sharedControlPlane } from './setup';
import { eventually } from '../support/eventually';

const COUNT = 20;

/** Deterministic pseudo-random delays, so a failing run can be replayed. */
function mulberry32(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('crash safety (operator killed mid-flight, provider drops committed creates, API server restarts)', function () {
  this.timeout(300_000);
  let cp: ControlPlane;
  let provider: ProviderProcess;
  let operator: OperatorProcess | undefined;
  let ns: string;
  let tmp: string;
  let kubeconfig: string;
  const random = mulberry32(20261129);

  const start = async () => {
    // One Pod name throughout: a SIGKILL and restart is a container restart in the same Pod,
    // which takes its own Lease back at once instead of waiting for it to expire.
    operator = await startOperatorProcess({
      kubeconfig,
      logFile: join(tmp, 'operator.log'),
      pollInterval: '300ms',
      podName: 'bucketoperator-crash-test',
      flags: { 'leader-election-id': 'crash-test' },
    });
  };
  const crashAfterRandomDelay = async () => {
    await new Promise((r) => setTimeout(r, 200 + Math.floor(random() * 1200)));
    await operator?.kill('SIGKILL');
    await start();
  };
  const listBuckets = async () =>
    (JSON.parse(await kubectlOk(cp, ['get', 'sbucket', '-n', ns, '-o', 'json'])) as { items: BucketJson[] }).items;

  before(async () => {
    cp = await sharedControlPlane();
    await applyDist(cp);
    tmp = mkdtempSync(join(tmpdir(), 'bucketoperator-crash-'));
    provider = await startProviderProcess({ activationDelayMs: 300 });
    ns = await freshNamespace(cp, 'crash');
    for (const m of providerManifests(ns, provider.url, provider.apiKey)) await apply(cp, m);
    kubeconfig = await cp.serviceAccountKubeconfig('bucketoperator-system', 'bucketoperator-controller-manager');
    await provider.setFaults({ dropAfterCommitOnCreate: 0.5, seed: 7 });
    await start();
  });

  after(async () => {
    await operator?.kill('SIGKILL');
    await provider?.stop();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it('creates exactly one provider bucket per StorageBucket', async () => {
    const items = Array.from({ length: COUNT }, (_, i) => bucketManifest(ns, `b${i}`, { sizeGB: 1 + i }));
    await apply(cp, { apiVersion: 'v1', kind: 'List', items });
    for (let i = 0; i < 6; i++) await crashAfterRandomDelay();
    // An API server outage in the middle of it must only delay the work.
    await cp.restartApiServer();
    await provider.setFaults({});
    await eventually(async () => {
      const ready = (await listBuckets()).filter((b) => condition(b, 'Ready')?.status === 'True');
      return ready.length === COUNT ? true : undefined;
    }, { description: `all ${COUNT} buckets to be Ready`, timeoutMs: 180_000, intervalMs: 500 });

    const dropped = (await provider.stats()).requests['POST /buckets dropped'] ?? 0;
    expect(dropped, 'the provider dropped some committed creates').to.be.greaterThan(0);
    const atProvider = await provider.buckets(ns);
    for (const b of await listBuckets()) {
      const mine = atProvider.filter((x) => x.tags['kubernetes-name'] === b.metadata.name);
      expect(mine.map((x) => x.id), b.metadata.name).to.deep.equal([b.status?.id]);
    }
    expect(atProvider).to.have.length(COUNT);
  });

  it('leaves no provider bucket behind after deletion, even when killed while deleting', async () => {
    await kubectlOk(cp, ['delete', 'sbucket', '--all', '-n', ns, '--wait=false']);
    for (let i = 0; i < 3; i++) await crashAfterRandomDelay();
    await eventually(async () => (await listBuckets()).length === 0, {
      description: 'every StorageBucket to be gone', timeoutMs: 120_000, intervalMs: 500,
    });
    expect(await provider.buckets(ns)).to.deep.equal([]);
  });
});
