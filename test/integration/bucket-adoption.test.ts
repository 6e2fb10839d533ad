/**
 * Ownership at the provider and status writes against the real API server. Two
 * StorageBuckets naming the same provider bucket: the first adopts it (its owner tags are
 * recorded at the provider), the second is blocked with a clear condition, and deleting the
 * second never destroys the first one's bucket. And a status computed from a stale snapshot
 * is refused by the API server instead of overwriting a fresher one.
 */
import { expect } from 'chai';
import type { StorageBucket } from '../../operator/api/v1';
import { kubeWriter } from '../../operator/bucket/kube-writer';
import { STORAGE_BUCKET } from '../../operator/bucket/kinds';
import { ApiError, KubeClient } from '../../operator/runtime';
import { loadKubeconfig } from '../../operator/runtime/kubeconfig';
import { applyDist } from '../support/dist';
import { apply, bucketManifest, condition, getJson, kubectlOk, waitForObject, type BucketJson } from '../support/kube';
import { useStack } from '../support/stack';
import { freshNamespace, sharedControlPlane } from './setup';

const ADOPT = 'storage.avalonhosting.example/adopt-id';

describe('status writes are preconditioned on the resourceVersion they were computed from', function () {
  this.timeout(60_000);

  it('a status from a stale snapshot is refused with Conflict and the fresher status stays', async () => {
    const cp = await sharedControlPlane();
    await applyDist(cp);
    // No provider config in this namespace and no operator running: only this test writes.
    const ns = await freshNamespace(cp, 'stale-status');
    await apply(cp, bucketManifest(ns, 'b', {}, { 'storage.avalonhosting.example/paused': 'true' }));
    // The operator's writer under the operator's ServiceAccount, as the operator writes status
    // (its role has no get on StorageBuckets: the admin reads the snapshot).
    const admin = new KubeClient({ restConfig: cp.restConfig() });
    const client = new KubeClient({
      restConfig: loadKubeconfig(await cp.serviceAccountKubeconfig('bucketoperator-system', 'bucketoperator-controller-manager')),
    });
    try {
      const writer = kubeWriter(client, 'precondition-test');
      const snapshot = await admin.get<StorageBucket>(STORAGE_BUCKET, ns, 'b');
      const ready = {
        phase: 'Active',
        conditions: [{ type: 'Ready', status: 'True', reason: 'Available', message: '', lastTransitionTime: '2026-12-01T00:00:00Z' }],
      };
      await writer.patchStatus(STORAGE_BUCKET, snapshot, ready);

      const stale = {
        phase: 'Pending',
        conditions: [{ type: 'Ready', status: 'False', reason: 'ProviderUnavailable', message: 'x', lastTransitionTime: '2026-12-01T00:00:00Z' }],
      };
      const err = await writer.patchStatus(STORAGE_BUCKET, snapshot, stale).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).to.be.instanceOf(ApiError).and.have.property('status', 409);
    } finally {
      client.close();
      admin.close();
    }
    const live = await getJson<BucketJson>(cp, 'sbucket', 'b', ns);
    expect(live && condition(live, 'Ready')).to.include({ status: 'True', reason: 'Available' });
    await kubectlOk(cp, ['delete', 'sbucket', 'b', '-n', ns, '--wait=true', '--timeout=30s']);
  });
});

describe('StorageBucket adoption: one owner per provider bucket', function () {
  this.timeout(120_000);
  const stack = useStack(sharedControlPlane, { name: 'adoption', provider: { activationDelayMs: 200 }, operator: { driftInterval: '2s' } });

  it('the second adopter is Stalled with BucketOwnedElsewhere, and deleting it leaves the bucket to the first', async () => {
    const t = await stack.tenant();
    const { cp } = stack;
    const res = await fetch(`${t.provider.url}/buckets`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.provider.apiKey}`, 'content-type': 'application/json', 'idempotency-key': `outside-${Date.now()}` },
      body: JSON.stringify({ region: 'us-east-1', sizeGB: 10, encrypted: false, tags: { team: 'data' } }),
    });
    expect(res.status).to.equal(201);
    const id = ((await res.json()) as { id: string }).id;

    await apply(cp, bucketManifest(t.ns, 'first', {}, { [ADOPT]: id }));
    await kubectlOk(cp, ['wait', '--for=condition=Ready', 'sbucket/first', '-n', t.ns, '--timeout=60s']);
    const tagged = (await t.provider.buckets()).find((b) => b.id === id);
    expect(tagged?.tags).to.include({ team: 'data', 'kubernetes-namespace': t.ns, 'kubernetes-name': 'first' });

    await apply(cp, bucketManifest(t.ns, 'second', {}, { [ADOPT]: id }));
    const second = await waitForObject<BucketJson>(
      cp,
      'sbucket',
      'second',
      t.ns,
      (b) => condition(b, 'Stalled')?.status === 'True',
      'the second adopter to be Stalled',
    );
    expect(condition(second, 'Ready')).to.include({ status: 'False', reason: 'BucketOwnedElsewhere' });
    expect(condition(second, 'Ready')?.message).to.contain(`StorageBucket ${t.ns}/first`);
    expect((await t.provider.buckets()).find((b) => b.id === id)?.tags['kubernetes-name'], 'the owner tags are not taken over').to.equal('first');

    await kubectlOk(cp, ['delete', 'sbucket', 'second', '-n', t.ns, '--wait=true', '--timeout=60s']);
    expect(
      (await t.provider.buckets()).find((b) => b.id === id),
      "the first one's bucket survives the second's deletion",
    ).to.not.equal(undefined);
    expect(condition((await getJson<BucketJson>(cp, 'sbucket', 'first', t.ns))!, 'Ready')?.status).to.equal('True');

    await kubectlOk(cp, ['delete', 'sbucket', 'first', '-n', t.ns, '--wait=true', '--timeout=60s']);
    expect(
      (await t.provider.buckets()).find((b) => b.id === id),
      'deleted with its owner',
    ).to.equal(undefined);
  });
});
