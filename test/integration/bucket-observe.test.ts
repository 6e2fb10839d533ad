/**
 * managementPolicy Observe and the manual reconcile trigger, end to end: dist/ applied, the
 * operator process under its ServiceAccount, the provider as a real process. An observed
 * bucket is imported read-only: the operator's provider writes are counted from the
 * provider's own statistics (a provider process of the test's own, so no other test's calls
 * are counted), so "never creates, changes or deletes" is a fact, not a claim.
 */
import { expect } from 'chai';
import {
  apply,
  bucketManifest,
  condition,
  getJson,
  kubectlOk,
  reconciledAfterNow,
  waitForGone,
  waitForObject,
  waitForReason,
  type BucketJson,
} from '../support/kube';
import { countRequests, type ProviderProcess } from '../support/provider-process';
import { useStack } from '../support/stack';
import { sharedControlPlane } from './setup';

const ADOPT = 'storage.avalonhosting.example/adopt-id';
const REQUESTED = 'storage.avalonhosting.example/reconcile-requested-at';
const FINALIZER = 'storage.avalonhosting.example/bucket-cleanup';

interface ObservedJson extends BucketJson {
  status?: BucketJson['status'] & { region?: string; encrypted?: boolean; lastHandledReconcileAt?: string };
}

/** Provider writes (create, change, delete), admin routes excluded. */
const WRITES = /^(POST|PATCH|PUT|DELETE) \/buckets/;
const writes = async (p: ProviderProcess) => countRequests(await p.stats(), WRITES);

describe('StorageBucket managementPolicy Observe and reconcile-requested-at', function () {
  this.timeout(120_000);
  const stack = useStack(sharedControlPlane, { name: 'observe', provider: { activationDelayMs: 200 }, operator: { driftInterval: '2s' } });

  /** Makes a bucket at `provider` the way another tool would, outside the operator. */
  async function providerBucket(provider: ProviderProcess, sizeGB: number): Promise<string> {
    const res = await fetch(`${provider.url}/buckets`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${provider.apiKey}`,
        'content-type': 'application/json',
        'idempotency-key': `outside-${Date.now()}-${Math.random()}`,
      },
      body: JSON.stringify({ region: 'eu-west-1', sizeGB, encrypted: true, tags: { team: 'data' } }),
    });
    expect(res.status).to.equal(201);
    return ((await res.json()) as { id: string }).id;
  }

  it('imports an existing bucket read-only: Ready, status mirrors it, nothing written at the provider, delete leaves it', async () => {
    const t = await stack.tenant({ ownProvider: {} });
    const { cp } = stack;
    const id = await providerBucket(t.provider, 40);
    const before = await writes(t.provider);
    // The spec's size and encryption disagree with the provider's on purpose: Observe enforces nothing.
    await apply(cp, bucketManifest(t.ns, 'imported', { sizeGB: 100, encrypted: false, managementPolicy: 'Observe' }, { [ADOPT]: id }));
    const b = await waitForObject<ObservedJson>(
      cp,
      'sbucket',
      'imported',
      t.ns,
      (x) => condition(x, 'Ready')?.status === 'True',
      'the observed bucket to be Ready',
    );
    expect(b.status).to.deep.include({ id, sizeGB: 40, region: 'eu-west-1', encrypted: true, phase: 'Active' });
    expect(b.metadata.finalizers ?? []).to.not.include(FINALIZER);
    await waitForObject(cp, 'secret', 'imported-access', t.ns, () => true, 'the access Secret of the observed bucket');

    // A change made at the provider shows up in status within a drift interval.
    await t.provider.tamper(id, { sizeGB: 60 });
    await waitForObject<ObservedJson>(cp, 'sbucket', 'imported', t.ns, (x) => x.status?.sizeGB === 60, 'status to mirror the new size');

    await kubectlOk(cp, ['delete', 'sbucket', 'imported', '-n', t.ns, '--wait=true', '--timeout=60s']);
    const left = (await t.provider.buckets()).find((x) => x.id === id);
    expect(left, 'the observed bucket is still at the provider').to.not.equal(undefined);
    expect(left?.sizeGB).to.equal(60);
    expect((await writes(t.provider)) - before, 'provider writes by the operator').to.equal(0);
  });

  it('a missing observed bucket is reported with a reason and never created', async () => {
    const t = await stack.tenant({ ownProvider: {} });
    const { cp } = stack;
    const before = await writes(t.provider);
    await apply(cp, bucketManifest(t.ns, 'ghost', { managementPolicy: 'Observe' }, { [ADOPT]: 'bucket-999999' }));
    const b = await waitForReason<ObservedJson>(cp, 'sbucket', 'ghost', t.ns, 'Ready', 'ObservedBucketNotFound');
    expect(condition(b, 'Ready')).to.include({ status: 'False' });
    expect(condition(b, 'Reconciling')).to.include({ status: 'True', reason: 'ObservedBucketNotFound' });
    // Barrier: one more reconcile of it has run since, and still nothing was written.
    await reconciledAfterNow(cp, t.ns, 'ghost');
    expect((await writes(t.provider)) - before).to.equal(0);
    await kubectlOk(cp, ['delete', 'sbucket', 'ghost', '-n', t.ns, '--wait=true', '--timeout=60s']);
  });

  it('without the adopt-id annotation Observe is Stalled with a clear message', async () => {
    const t = await stack.tenant();
    const { cp } = stack;
    await apply(cp, bucketManifest(t.ns, 'unnamed', { managementPolicy: 'Observe' }));
    const b = await waitForObject<ObservedJson>(cp, 'sbucket', 'unnamed', t.ns, (x) => condition(x, 'Stalled')?.status === 'True', 'Stalled');
    expect(condition(b, 'Ready')).to.include({ status: 'False', reason: 'InvalidSpec' });
    expect(condition(b, 'Ready')?.message).to.contain(ADOPT);
    await kubectlOk(cp, ['delete', 'sbucket', 'unnamed', '-n', t.ns, '--wait=true', '--timeout=60s']);
  });

  it('switching Observe to Full adopts the bucket: finalizer, spec enforced, deleted with the StorageBucket', async () => {
    const t = await stack.tenant();
    const { cp } = stack;
    const id = await providerBucket(t.provider, 10);
    await apply(cp, bucketManifest(t.ns, 'promoted', { sizeGB: 10, managementPolicy: 'Observe' }, { [ADOPT]: id }));
    await waitForObject<ObservedJson>(cp, 'sbucket', 'promoted', t.ns, (x) => condition(x, 'Ready')?.status === 'True', 'observed first');
    await kubectlOk(cp, ['patch', 'sbucket', 'promoted', '-n', t.ns, '--type=merge', '-p', '{"spec":{"managementPolicy":"Full","sizeGB":30}}']);
    const b = await waitForObject<ObservedJson>(
      cp,
      'sbucket',
      'promoted',
      t.ns,
      (x) => (x.metadata.finalizers ?? []).includes(FINALIZER) && x.status?.sizeGB === 30 && condition(x, 'Ready')?.status === 'True',
      'adopted and resized',
    );
    expect(b.status?.id).to.equal(id);
    await kubectlOk(cp, ['delete', 'sbucket', 'promoted', '-n', t.ns, '--wait=true', '--timeout=60s']);
    expect(
      (await t.provider.buckets()).find((x) => x.id === id),
      'deleted with the StorageBucket',
    ).to.equal(undefined);
  });

  it('reconcile-requested-at is handled and echoed into status.lastHandledReconcileAt', async () => {
    const t = await stack.tenant();
    const { cp } = stack;
    await apply(cp, bucketManifest(t.ns, 'poked', { sizeGB: 10 }));
    await kubectlOk(cp, ['wait', '--for=condition=Ready', 'sbucket/poked', '-n', t.ns, '--timeout=60s']);
    const b0 = (await getJson<ObservedJson>(cp, 'sbucket', 'poked', t.ns))!;
    // Drift made at the provider; the drift interval is short here, so the proof that the
    // request was handled is the echo, which only a reconcile of this request writes.
    await kubectlOk(cp, ['annotate', 'sbucket', 'poked', '-n', t.ns, `${REQUESTED}=2026-12-01T10:00:00Z`, '--overwrite']);
    const b1 = await waitForObject<ObservedJson>(
      cp,
      'sbucket',
      'poked',
      t.ns,
      (x) => x.status?.lastHandledReconcileAt === '2026-12-01T10:00:00Z',
      'the request to be echoed',
    );
    expect(condition(b1, 'Ready')?.status).to.equal('True');
    expect(b1.status?.id).to.equal(b0.status?.id);
    await kubectlOk(cp, ['delete', 'sbucket', 'poked', '-n', t.ns, '--wait=false']);
    await waitForGone(cp, 'sbucket', 'poked', t.ns);
  });
});
