/**
 * A create whose answer never arrives and that the provider commits later (issue 10): the
 * operator's create times out, the StorageBucket is deleted while the provider still holds the
 * create, the finalizer is released, and only then does the provider commit. A deleted
 * StorageBucket must never leave a bucket behind, however late the commit: a lookup by key that
 * finds nothing proves nothing about a create still in flight, only a revoke of the key does.
 *
 * The compiled operator image runs with the Deployment's args against the provider process,
 * under its own ServiceAccount token. The operator's provider timeout is the default 10 s (no
 * flag sets it), so the late commit is due well after it and after the deletion.
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LateCommitReport } from '../../provider';
import type { ControlPlane } from '../support/control-plane';
import { eventually } from '../support/eventually';
import { applyDist } from '../support/dist';
import { apply, bucketManifest, kubectlOk, providerManifests, waitForGone } from '../support/kube';
import { startOperatorProcess, type OperatorProcess } from '../support/operator-process';
import { startProviderProcess, type ProviderProcess } from '../support/provider-process';
import { freshNamespace, sharedControlPlane } from './setup';

/** Longer than the operator's default provider timeout (10 s) plus its backoff and the deletion. */
const LATE_COMMIT_DELAY_MS = 30_000;
const NAME = 'late';

describe('a create committed after its StorageBucket was deleted (late commit)', function () {
  this.timeout(180_000);
  let cp: ControlPlane;
  let provider: ProviderProcess;
  let operator: OperatorProcess | undefined;
  let ns: string;
  let tmp: string;

  /** What the provider did with the creates it held (admin API). */
  const lateCommits = async (): Promise<LateCommitReport> => {
    const res = await fetch(`${provider.url}/admin/late-commits`, { headers: { authorization: `Bearer ${provider.adminToken}` } });
    if (!res.ok) throw new Error(`GET /admin/late-commits: ${res.status} ${await res.text()}`);
    return (await res.json()) as LateCommitReport;
  };

  before(async () => {
    cp = await sharedControlPlane();
    await applyDist(cp);
    tmp = mkdtempSync(join(tmpdir(), 'bucketoperator-late-create-'));
    provider = await startProviderProcess({ activationDelayMs: 300 });
    ns = await freshNamespace(cp, 'late-create');
    for (const m of providerManifests(ns, provider.url, provider.apiKey)) await apply(cp, m);
    const kubeconfig = await cp.serviceAccountKubeconfig('bucketoperator-system', 'bucketoperator-controller-manager');
    operator = await startOperatorProcess({
      kubeconfig,
      logFile: join(tmp, 'operator.log'),
      flags: { 'leader-election-id': 'late-create-test' },
    });
  });

  let failed = false;
  afterEach(function () {
    if (this.currentTest?.state === 'failed') failed = true;
  });

  after(async () => {
    await operator?.kill('SIGTERM');
    await provider?.stop();
    // The operator log explains a failure; keep it then.
    if (failed) console.log(`operator log kept in ${tmp}`);
    else if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it('leaves no provider bucket behind when the create commits after the deletion', async () => {
    await provider.setFaults({ lateCommitOnCreate: { count: 1, delayMs: LATE_COMMIT_DELAY_MS } });
    await apply(cp, bucketManifest(ns, NAME, { sizeGB: 1 }));

    // The create has reached the provider, which holds it unanswered.
    await eventually(async () => ((await lateCommits()).pending.length === 1 ? true : undefined), {
      description: 'the provider to hold the create',
      timeoutMs: 60_000,
      intervalMs: 200,
    });
    // Deleted while the create is in flight, before the operator's call has even timed out.
    await kubectlOk(cp, ['delete', 'sbucket', NAME, '-n', ns, '--wait=false']);
    await waitForGone(cp, 'sbucket', NAME, ns, 60_000);
    expect((await lateCommits()).pending, 'the StorageBucket was released before the create was due').to.have.length(1);

    // The provider has settled the held create: committed it, or discarded it after a revoke.
    const settled = await eventually(
      async () => {
        const report = await lateCommits();
        return report.pending.length === 0 ? report : undefined;
      },
      { description: 'the late commit to be due', timeoutMs: LATE_COMMIT_DELAY_MS + 30_000, intervalMs: 500 },
    );
    expect((await provider.stats()).requests['POST /buckets dropped'], 'the create was never answered').to.equal(1);

    const left = (await provider.buckets(ns)).filter((b) => b.tags['kubernetes-name'] === NAME);
    expect(
      left.map((b) => b.id),
      `provider buckets of ${ns}/${NAME} after its deletion (late commits: ${JSON.stringify(settled)})`,
    ).to.deep.equal([]);
  });
});
