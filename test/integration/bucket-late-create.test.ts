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
import type { LateCommitReport } from '../../provider';
import { eventually } from '../support/eventually';
import { apply, bucketManifest, kubectlOk, waitForGone } from '../support/kube';
import type { ProviderProcess } from '../support/provider-process';
import { useStack } from '../support/stack';
import { sharedControlPlane } from './setup';

/** Longer than the operator's default provider timeout (10 s) plus its backoff and the deletion. */
const LATE_COMMIT_DELAY_MS = 30_000;
const NAME = 'late';

/** What `provider` did with the creates it held (admin API). */
const lateCommits = async (provider: ProviderProcess): Promise<LateCommitReport> => {
  const res = await fetch(`${provider.url}/admin/late-commits`, { headers: { authorization: `Bearer ${provider.adminToken}` } });
  if (!res.ok) throw new Error(`GET /admin/late-commits: ${res.status} ${await res.text()}`);
  return (await res.json()) as LateCommitReport;
};

describe('a create committed after its StorageBucket was deleted (late commit)', function () {
  this.timeout(180_000);
  const stack = useStack(sharedControlPlane, {
    name: 'late-create',
    provider: { activationDelayMs: 300 },
    operator: { flags: { 'leader-election-id': 'late-create-test' } },
  });

  it('leaves no provider bucket behind when the create commits after the deletion', async () => {
    // A provider of its own: the held create and the dropped-request count are this test's alone.
    const t = await stack.tenant({
      ownProvider: { activationDelayMs: 300, faults: { lateCommitOnCreate: { count: 1, delayMs: LATE_COMMIT_DELAY_MS } } },
    });
    const { cp } = stack;
    await apply(cp, bucketManifest(t.ns, NAME, { sizeGB: 1 }));

    // The create has reached the provider, which holds it unanswered.
    await eventually(async () => ((await lateCommits(t.provider)).pending.length === 1 ? true : undefined), {
      description: 'the provider to hold the create',
      timeoutMs: 60_000,
      intervalMs: 200,
    });
    // Deleted while the create is in flight, before the operator's call has even timed out.
    await kubectlOk(cp, ['delete', 'sbucket', NAME, '-n', t.ns, '--wait=false']);
    await waitForGone(cp, 'sbucket', NAME, t.ns, 60_000);
    expect((await lateCommits(t.provider)).pending, 'the StorageBucket was released before the create was due').to.have.length(1);

    // The provider has settled the held create: committed it, or discarded it after a revoke.
    const settled = await eventually(
      async () => {
        const report = await lateCommits(t.provider);
        return report.pending.length === 0 ? report : undefined;
      },
      { description: 'the late commit to be due', timeoutMs: LATE_COMMIT_DELAY_MS + 30_000, intervalMs: 500 },
    );
    expect((await t.provider.stats()).requests['POST /buckets dropped'], 'the create was never answered').to.equal(1);

    const left = (await t.provider.buckets(t.ns)).filter((b) => b.tags['kubernetes-name'] === NAME);
    expect(
      left.map((b) => b.id),
      `provider buckets of ${t.ns}/${NAME} after its deletion (late commits: ${JSON.stringify(settled)})`,
    ).to.deep.equal([]);
  });
});
