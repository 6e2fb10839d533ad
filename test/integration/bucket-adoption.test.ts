/**
 * Ownership at the provider and status writes against the real API server. Two
 * StorageBuckets naming the same provider bucket: the first adopts it (its owner tags are
 * recorded at the provider), the second is blocked with a clear condition, and deleting the
 * second never destroys the first one's bucket. And a status computed from a stale snapshot
 * is refused by the API server instead of overwriting a fresher one.
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { StorageBucket } from '../../operator/api/v1';
import { kubeWriter } from '../../operator/bucket/kube-writer';
import { STORAGE_BUCKET } from '../../operator/bucket/kinds';
import { ApiError, KubeClient } from '../../operator/runtime';
import type { ControlPlane } from '../support/control-plane';
import { applyDist } from '../support/dist';
import { apply, bucketManifest, condition, getJson, kubectlOk, providerManifests, waitForObject, type BucketJson } from '../support/kube';
import { startOperatorProcess, type OperatorProcess } from '../support/operator-process';
import { startProviderProcess, type ProviderProcess } from '../support/provider-process';
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
    const client = new KubeClient({ restConfig: cp.restConfig() });
    const writer = kubeWriter(client, 'precondition-test');
    const snapshot = await client.get<StorageBucket>(STORAGE_BUCKET, ns, 'b');
    const ready = { phase: 'Active', conditions: [{ type: 'Ready', status: 'True', reason: 'Available', message: '', lastTransitionTime: '2026-12-01T00:00:00Z' }] };
    await writer.patchStatus(STORAGE_BUCKET, snapshot, ready);

    const stale = { phase: 'Pending', conditions: [{ type: 'Ready', status: 'False', reason: 'ProviderUnavailable', message: 'x', lastTransitionTime: '2026-12-01T00:00:00Z' }] };
    const err = await writer.patchStatus(STORAGE_BUCKET, snapshot, stale).then(() => undefined, (e: unknown) => e);
    expect(err).to.be.instanceOf(ApiError).and.have.property('status', 409);
    const live = await getJson<BucketJson>(cp, 'sbucket', 'b', ns);
    expect(live && condition(live, 'Ready')).to.include({ status: 'True', reason: 'Available' });
    await kubectlOk(cp, ['delete', 'sbucket', 'b', '-n', ns, '--wait=true', '--timeout=30s']);
  });
});

describe('StorageBucket adoption: one owner per provider bucket', function () {
  this.timeout(120_000);
  let cp: ControlPlane;
  let provider: ProviderProcess;
  let operator: OperatorProcess;
  let ns: string;
  let tmp: string;
  let failed = false;

  before(async () => {
    cp = await sharedControlPlane();
    await applyDist(cp);
    tmp = mkdtempSync(join(tmpdir(), 'bucketoperator-adoption-'));
    provider = await startProviderProcess({ activationDelayMs: 200 });
    ns = await freshNamespace(cp, 'adoption');
    for (const m of providerManifests(ns, provider.url, provider.apiKey)) await apply(cp, m);
    const kubeconfig = await cp.serviceAccountKubeconfig('bucketoperator-system', 'bucketoperator-controller-manager');
    operator = await startOperatorProcess({ kubeconfig, logFile: join(tmp, 'operator.log'), driftInterval: '2s' });
  });

  afterEach(function () {
    if (this.currentTest?.state === 'failed') failed = true;
  });

  after(async () => {
    await operator?.kill('SIGTERM');
    await provider?.stop();
    if (failed) console.log(`operator log kept in ${tmp}`);
    else if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it('the second adopter is Stalled with BucketOwnedElsewhere, and deleting it leaves the bucket to the first', async () => {
    const res = await fetch(`${provider.url}/buckets`, {
      method: 'POST',
      headers: { authorization: `Bearer ${provider.apiKey}`, 'content-type': 'application/json', 'idempotency-key': `outside-${Date.now()}` },
      body: JSON.stringify({ region: 'us-east-1', sizeGB: 10, encrypted: false, tags: { team: 'data' } }),
    });
    expect(res.status).to.equal(201);
    const id = ((await res.json()) as { id: string }).id;

    await apply(cp, bucketManifest(ns, 'first', {}, { [ADOPT]: id }));
    await kubectlOk(cp, ['wait', '--for=condition=Ready', 'sbucket/first', '-n', ns, '--timeout=60s']);
    const tagged = (await provider.buckets()).find((b) => b.id === id);
    expect(tagged?.tags).to.include({ team: 'data', 'kubernetes-namespace': ns, 'kubernetes-name': 'first' });

    await apply(cp, bucketManifest(ns, 'second', {}, { [ADOPT]: id }));
    const second = await waitForObject<BucketJson>(cp, 'sbucket', 'second', ns, (b) => condition(b, 'Stalled')?.status === 'True', 'the second adopter to be Stalled');
    expect(condition(second, 'Ready')).to.include({ status: 'False', reason: 'BucketOwnedElsewhere' });
    expect(condition(second, 'Ready')?.message).to.contain(`StorageBucket ${ns}/first`);
    expect((await provider.buckets()).find((b) => b.id === id)?.tags['kubernetes-name'], 'the owner tags are not taken over').to.equal('first');

    await kubectlOk(cp, ['delete', 'sbucket', 'second', '-n', ns, '--wait=true', '--timeout=60s']);
    expect((await provider.buckets()).find((b) => b.id === id), 'the first one\'s bucket survives the second\'s deletion').to.not.equal(undefined);
    expect(condition((await getJson<BucketJson>(cp, 'sbucket', 'first', ns))!, 'Ready')?.status).to.equal('True');

    await kubectlOk(cp, ['delete', 'sbucket', 'first', '-n', ns, '--wait=true', '--timeout=60s']);
    expect((await provider.buckets()).find((b) => b.id === id), 'deleted with its owner').to.equal(undefined);
  });
});
