/**
 * The StorageBucket controller end to end: dist/ applied, the operator process running under
 * its own ServiceAccount token (so RBAC is really checked), the mock provider as a real
 * process, buckets driven with kubectl. Assertions are on the end state of the world:
 * Kubernetes objects and provider buckets.
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ControlPlane } from '../support/control-plane';
import { applyDist } from '../support/dist';
import {
  apply, bucketManifest, condition, getJson, kubectlOk, providerManifests, waitForGone, waitForObject, type BucketJson,
} from '../support/kube';
import { startOperatorProcess, type OperatorProcess } from '../support/operator-process';
import { startProviderProcess, type ProviderProcess } from '../support/provider-process';
import { freshNamespace, sharedControlPlane } from './setup';
import { eventually } from '../support/eventually';

const FINALIZER = 'storage.avalonhosting.example/bucket-cleanup';
const isReady = (b: BucketJson) => condition(b, 'Ready')?.status === 'True' && b.status?.observedGeneration === b.metadata.generation;

describe('StorageBucket lifecycle (operator under its ServiceAccount, real provider process)', function () {
  this.timeout(120_000);
  let cp: ControlPlane;
  let provider: ProviderProcess;
  let operator: OperatorProcess;
  let ns: string;
  let tmp: string;

  before(async () => {
    cp = await sharedControlPlane();
    await applyDist(cp);
    tmp = mkdtempSync(join(tmpdir(), 'bucketoperator-lifecycle-'));
    provider = await startProviderProcess({ activationDelayMs: 500 });
    ns = await freshNamespace(cp, 'lifecycle');
    for (const m of providerManifests(ns, provider.url, provider.apiKey)) await apply(cp, m);
    const kubeconfig = await cp.serviceAccountKubeconfig('bucketoperator-system', 'bucketoperator-controller-manager');
    operator = await startOperatorProcess({
      kubeconfig,
      logFile: join(tmp, 'operator.log'),
      driftInterval: '2s',
      // Leader election is on, as in the Deployment; a Lease of its own keeps other tests out.
      flags: { 'leader-election-id': 'lifecycle-test' },
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

  const ready = (name: string, timeoutMs = 60_000) =>
    waitForObject<BucketJson>(cp, 'sbucket', name, ns, isReady, `StorageBucket ${name} to be Ready`, timeoutMs);

  it('creates the bucket once, publishes a Secret and a Service, and kubectl wait sees Ready', async () => {
    await apply(cp, bucketManifest(ns, 'alpha', { sizeGB: 10 }));
    await kubectlOk(cp, ['wait', '--for=condition=Ready', 'sbucket/alpha', '-n', ns, '--timeout=60s']);
    const b = (await getJson<BucketJson>(cp, 'sbucket', 'alpha', ns))!;
    expect(b.metadata.finalizers).to.include(FINALIZER);
    expect(b.status).to.include({ phase: 'Active', sizeGB: 10 });
    const atProvider = (await provider.buckets(ns)).filter((x) => x.tags['kubernetes-name'] === 'alpha');
    expect(atProvider.map((x) => x.id)).to.deep.equal([b.status?.id]);
    expect(atProvider[0]?.idempotencyKey).to.equal(b.status?.idempotencyKey);
    expect(b.metadata.annotations?.['storage.avalonhosting.example/idempotency-key']).to.equal(b.status?.idempotencyKey);

    const secret = await waitForObject<{ data: Record<string, string>; metadata: { ownerReferences: Array<{ uid: string; controller: boolean }> } }>(
      cp, 'secret', 'alpha-access', ns, () => true, 'the access Secret');
    const data = Object.fromEntries(Object.entries(secret.data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]));
    expect(data['bucketId']).to.equal(b.status?.id);
    expect(data['endpoint']).to.equal(b.status?.endpoint);
    expect(Object.values(data)).to.not.include(provider.apiKey);
    expect(secret.metadata.ownerReferences[0]).to.include({ uid: b.metadata.uid, controller: true });
    const svc = await waitForObject<{ spec: { type: string; externalName: string } }>(cp, 'service', 'alpha', ns, () => true, 'the Service');
    expect(svc.spec).to.include({ type: 'ExternalName', externalName: new URL(b.status!.endpoint!).hostname });

    const printed = await kubectlOk(cp, ['get', 'sbucket', 'alpha', '-n', ns]);
    expect(printed.split('\n')[1]).to.match(/^alpha\s+True\s+Active\s+bucket-\S+\s+us-east-1\s+10\s+/);
  });

  it('resizes when sizeGB grows', async () => {
    await kubectlOk(cp, ['patch', 'sbucket', 'alpha', '-n', ns, '--type=merge', '-p', '{"spec":{"sizeGB":25}}']);
    const b = await waitForObject<BucketJson>(cp, 'sbucket', 'alpha', ns, (x) => isReady(x) && x.status?.sizeGB === 25, 'the resize to finish');
    const atProvider = (await provider.buckets(ns)).find((x) => x.id === b.status?.id);
    expect(atProvider).to.include({ sizeGB: 25, phase: 'Active' });
  });

  it('corrects drift made behind its back', async () => {
    const b = (await getJson<BucketJson>(cp, 'sbucket', 'alpha', ns))!;
    await provider.tamper(b.status!.id!, { sizeGB: 3, encrypted: true });
    await eventually(async () => {
      const x = (await provider.buckets(ns)).find((y) => y.id === b.status?.id);
      return x && x.sizeGB === 25 && x.encrypted === false && x.phase === 'Active' ? x : undefined;
    }, { description: 'the drift to be corrected', timeoutMs: 60_000, intervalMs: 250 });
  });

  it('recreates a bucket deleted at the provider, with a new key', async () => {
    const before = (await getJson<BucketJson>(cp, 'sbucket', 'alpha', ns))!;
    await provider.remove(before.status!.id!);
    const after = await waitForObject<BucketJson>(cp, 'sbucket', 'alpha', ns, (x) => isReady(x) && x.status?.id !== before.status?.id, 'the bucket to be recreated');
    expect(after.status?.idempotencyKey).to.not.equal(before.status?.idempotencyKey);
    const atProvider = (await provider.buckets(ns)).filter((x) => x.tags['kubernetes-name'] === 'alpha');
    expect(atProvider.map((x) => x.id)).to.deep.equal([after.status?.id]);
    const events = await kubectlOk(cp, ['get', 'events.events.k8s.io', '-n', ns, '-o', 'jsonpath={.items[*].reason}']);
    expect(events.split(' ')).to.include.members(['CreatedBucket', 'BucketReady', 'BucketMissing']);
  });

  it('repairs its Secret and Service when they are deleted or edited by hand', async () => {
    await kubectlOk(cp, ['delete', 'secret', 'alpha-access', '-n', ns]);
    await kubectlOk(cp, ['patch', 'service', 'alpha', '-n', ns, '--type=merge', '-p', '{"spec":{"externalName":"evil.example"}}']);
    const b = (await getJson<BucketJson>(cp, 'sbucket', 'alpha', ns))!;
    await waitForObject(cp, 'secret', 'alpha-access', ns, () => true, 'the Secret to be recreated');
    await waitForObject<{ spec: { externalName: string } }>(cp, 'service', 'alpha', ns, (s) => s.spec.externalName === new URL(b.status!.endpoint!).hostname, 'the Service to be repaired');
  });

  it('waits for a missing BucketProviderConfig and proceeds once it appears', async () => {
    await apply(cp, bucketManifest(ns, 'waiting', { providerRef: { name: 'later' } }));
    const b = await waitForObject<BucketJson>(cp, 'sbucket', 'waiting', ns, (x) => condition(x, 'Ready')?.reason === 'ProviderConfigNotFound', 'ProviderConfigNotFound');
    expect(condition(b, 'Synced')?.status).to.equal('False');
    for (const m of providerManifests(ns, provider.url, provider.apiKey, 'later')) await apply(cp, m);
    await ready('waiting');
  });

  it('reports rejected credentials and recovers when the Secret is rotated', async () => {
    await apply(cp, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'later-key', namespace: ns }, stringData: { apiKey: 'wrong-key' } });
    await kubectlOk(cp, ['patch', 'sbucket', 'waiting', '-n', ns, '--type=merge', '-p', '{"spec":{"sizeGB":11}}']);
    await waitForObject<BucketJson>(cp, 'sbucket', 'waiting', ns, (x) => condition(x, 'Ready')?.reason === 'CredentialsRejected', 'CredentialsRejected');
    await apply(cp, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'later-key', namespace: ns }, stringData: { apiKey: provider.apiKey } });
    await waitForObject<BucketJson>(cp, 'sbucket', 'waiting', ns, (x) => isReady(x) && x.status?.sizeGB === 11, 'recovery after rotation');
  });

  it('re-reconciles its buckets when the provider endpoint changes', async () => {
    const patchEndpoint = (endpoint: string) =>
      kubectlOk(cp, ['patch', 'bucketproviderconfig', 'provider', '-n', ns, '--type=merge', '-p', JSON.stringify({ spec: { endpoint } })]);
    // Port 9 (discard) refuses connections on loopback: the provider is unreachable.
    await patchEndpoint('http://127.0.0.1:9');
    await waitForObject<BucketJson>(cp, 'sbucket', 'alpha', ns, (x) => condition(x, 'Synced')?.reason === 'ProviderUnavailable', 'ProviderUnavailable after the endpoint change');
    await patchEndpoint(provider.url);
    await waitForObject<BucketJson>(cp, 'sbucket', 'alpha', ns, (x) => isReady(x) && condition(x, 'Synced')?.status === 'True', 'Synced again after the endpoint is restored');
  });

  it('keeps a BucketProviderConfig while buckets use it, and shows the count', async () => {
    const cfg = await waitForObject<{ status?: { bucketCount?: number } }>(cp, 'bucketproviderconfig', 'later', ns, (c) => c.status?.bucketCount === 1, 'bucketCount 1');
    expect(cfg.status?.bucketCount).to.equal(1);
    await kubectlOk(cp, ['delete', 'bucketproviderconfig', 'later', '-n', ns, '--wait=false']);
    await waitForObject<{ metadata: { deletionTimestamp?: string }; status?: { conditions?: Array<{ type: string; reason: string }> } }>(
      cp, 'bucketproviderconfig', 'later', ns, (c) => Boolean(c.metadata.deletionTimestamp) && c.status?.conditions?.some((x) => x.reason === 'InUse') === true, 'config held InUse');
    await kubectlOk(cp, ['delete', 'sbucket', 'waiting', '-n', ns, '--wait=false']);
    await waitForGone(cp, 'sbucket', 'waiting', ns);
    await waitForGone(cp, 'bucketproviderconfig', 'later', ns);
  });

  it('makes no provider calls while paused, and catches up when unpaused', async () => {
    await kubectlOk(cp, ['annotate', 'sbucket', 'alpha', '-n', ns, 'storage.avalonhosting.example/paused=true']);
    await waitForObject<BucketJson>(cp, 'sbucket', 'alpha', ns, (x) => condition(x, 'Synced')?.reason === 'ReconcilePaused', 'Synced=ReconcilePaused');
    await kubectlOk(cp, ['patch', 'sbucket', 'alpha', '-n', ns, '--type=merge', '-p', '{"spec":{"sizeGB":30}}']);
    const id = (await getJson<BucketJson>(cp, 'sbucket', 'alpha', ns))!.status!.id!;
    // Longer than the drift interval: a paused bucket must still not be touched.
    await new Promise((r) => setTimeout(r, 3000));
    expect((await provider.buckets(ns)).find((x) => x.id === id)?.sizeGB).to.equal(25);
    await kubectlOk(cp, ['annotate', 'sbucket', 'alpha', '-n', ns, 'storage.avalonhosting.example/paused-']);
    await waitForObject<BucketJson>(cp, 'sbucket', 'alpha', ns, (x) => isReady(x) && x.status?.sizeGB === 30, 'resize after unpause');
  });

  it('adopts an existing provider bucket named by annotation instead of creating one', async () => {
    const res = await fetch(`${provider.url}/buckets`, {
      method: 'POST',
      headers: { authorization: `Bearer ${provider.apiKey}`, 'content-type': 'application/json', 'idempotency-key': `adopt-${ns}` },
      body: JSON.stringify({ region: 'us-east-1', sizeGB: 10, tags: { 'kubernetes-namespace': ns, 'kubernetes-name': 'adopted' } }),
    });
    const existing = (await res.json()) as { id: string };
    await apply(cp, bucketManifest(ns, 'adopted', {}, { 'storage.avalonhosting.example/adopt-id': existing.id }));
    const b = await ready('adopted');
    expect(b.status?.id).to.equal(existing.id);
    expect((await provider.buckets(ns)).filter((x) => x.tags['kubernetes-name'] === 'adopted')).to.have.length(1);
  });

  it('marks a spec the provider rejects as terminal and does not retry it', async () => {
    await apply(cp, bucketManifest(ns, 'nowhere', { region: 'mars-north-1' }));
    const b = await waitForObject<BucketJson>(cp, 'sbucket', 'nowhere', ns, (x) => condition(x, 'Ready')?.reason === 'InvalidSpec', 'InvalidSpec');
    expect(condition(b, 'Ready')?.message).to.match(/region/);
    const count = async () => (await provider.stats()).requests['POST /buckets 422'] ?? 0;
    const first = await count();
    await new Promise((r) => setTimeout(r, 3000));
    expect(await count()).to.equal(first);
    await kubectlOk(cp, ['delete', 'sbucket', 'nowhere', '-n', ns]);
  });

  it('backs off during a provider outage without a busy loop and converges afterwards', async () => {
    await provider.setFaults({ outage: true });
    const before = (await provider.stats()).total;
    await apply(cp, bucketManifest(ns, 'outage'));
    await waitForObject<BucketJson>(cp, 'sbucket', 'outage', ns, (x) => condition(x, 'Synced')?.reason === 'ProviderUnavailable', 'ProviderUnavailable');
    await new Promise((r) => setTimeout(r, 5000));
    const during = (await provider.stats()).total - before;
    // Exponential backoff from 5 ms gives about a dozen attempts in 5 s; a busy loop gives thousands.
    expect(during).to.be.lessThan(40);
    await provider.setFaults({ outage: false });
    await ready('outage', 90_000);
    expect((await provider.buckets(ns)).filter((x) => x.tags['kubernetes-name'] === 'outage')).to.have.length(1);
  });

  it('deprovisions on delete, or leaves the bucket with deletionPolicy Orphan', async () => {
    await apply(cp, bucketManifest(ns, 'keep', { deletionPolicy: 'Orphan' }));
    const keep = await ready('keep');
    const alpha = (await getJson<BucketJson>(cp, 'sbucket', 'alpha', ns))!;
    await kubectlOk(cp, ['delete', 'sbucket', 'alpha', 'keep', '-n', ns, '--timeout=60s']);
    const ids = (await provider.buckets(ns)).map((x) => x.id);
    expect(ids).to.not.include(alpha.status?.id);
    expect(ids).to.include(keep.status?.id);
    await waitForGone(cp, 'secret', 'alpha-access', ns);
  });

  it('does not busy-loop when the provider keeps failing a delete, and finishes once it recovers', async () => {
    await apply(cp, bucketManifest(ns, 'stubborn'));
    const b = await ready('stubborn');
    await provider.setFaults({ failNext: { status: 503, count: 1_000_000 } });
    const before = (await provider.stats()).total;
    await kubectlOk(cp, ['delete', 'sbucket', 'stubborn', '-n', ns, '--wait=false']);
    await new Promise((r) => setTimeout(r, 5000));
    const during = (await provider.stats()).total - before;
    expect(during).to.be.lessThan(40);
    const stuck = (await getJson<BucketJson>(cp, 'sbucket', 'stubborn', ns))!;
    expect(condition(stuck, 'Synced')?.reason).to.equal('ProviderUnavailable');
    await provider.setFaults({});
    await waitForGone(cp, 'sbucket', 'stubborn', ns, 90_000);
    expect((await provider.buckets(ns)).map((x) => x.id)).to.not.include(b.status?.id);
  });

  it('stops instead of recreating when the config now points at another provider', async () => {
    const other = await startProviderProcess({ activationDelayMs: 100 });
    try {
      await apply(cp, bucketManifest(ns, 'moved', { providerRef: { name: 'switchable' } }));
      for (const m of providerManifests(ns, provider.url, provider.apiKey, 'switchable')) await apply(cp, m);
      const b = await ready('moved');
      await apply(cp, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'switchable-key', namespace: ns }, stringData: { apiKey: other.apiKey } });
      await kubectlOk(cp, ['patch', 'bucketproviderconfig', 'switchable', '-n', ns, '--type=merge', '-p', JSON.stringify({ spec: { endpoint: other.url } })]);
      await waitForObject<BucketJson>(cp, 'sbucket', 'moved', ns, (x) => condition(x, 'Ready')?.reason === 'ProviderChanged', 'ProviderChanged');
      expect(await other.buckets()).to.deep.equal([]);
      expect((await provider.buckets(ns)).map((x) => x.id)).to.include(b.status?.id);
      // Deleting must not release the finalizer either: the bucket still exists at the old provider.
      await kubectlOk(cp, ['delete', 'sbucket', 'moved', '-n', ns, '--wait=false']);
      await new Promise((r) => setTimeout(r, 2000));
      expect(await getJson(cp, 'sbucket', 'moved', ns)).to.not.equal(undefined);
      await apply(cp, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'switchable-key', namespace: ns }, stringData: { apiKey: provider.apiKey } });
      await kubectlOk(cp, ['patch', 'bucketproviderconfig', 'switchable', '-n', ns, '--type=merge', '-p', JSON.stringify({ spec: { endpoint: provider.url } })]);
      await waitForGone(cp, 'sbucket', 'moved', ns);
      expect((await provider.buckets(ns)).map((x) => x.id)).to.not.include(b.status?.id);
    } finally {
      await other.stop();
    }
  });

  it('gives a copied manifest (with the key annotation) its own bucket', async () => {
    await apply(cp, bucketManifest(ns, 'original'));
    const original = await ready('original');
    const key = original.metadata.annotations?.['storage.avalonhosting.example/idempotency-key'];
    await apply(cp, bucketManifest(ns, 'copy', {}, { 'storage.avalonhosting.example/idempotency-key': key! }));
    const copy = await ready('copy');
    expect(copy.status?.id).to.not.equal(original.status?.id);
    expect(copy.metadata.annotations?.['storage.avalonhosting.example/idempotency-key']).to.not.equal(key);
    const atProvider = await provider.buckets(ns);
    expect(atProvider.filter((x) => x.tags['kubernetes-name'] === 'original').map((x) => x.id)).to.deep.equal([original.status?.id]);
    expect(atProvider.filter((x) => x.tags['kubernetes-name'] === 'copy').map((x) => x.id)).to.deep.equal([copy.status?.id]);
  });

  it('never takes over a Service it does not own', async () => {
    await apply(cp, {
      apiVersion: 'v1', kind: 'Service', metadata: { name: 'media', namespace: ns },
      spec: { selector: { app: 'media' }, ports: [{ port: 80 }] },
    });
    await apply(cp, bucketManifest(ns, 'media'));
    await ready('media');
    await waitForObject(cp, 'secret', 'media-access', ns, () => true, 'the access Secret');
    const svc = (await getJson<{ spec: { type: string }; metadata: { ownerReferences?: unknown[] } }>(cp, 'service', 'media', ns))!;
    expect(svc.spec.type).to.equal('ClusterIP');
    expect(svc.metadata.ownerReferences ?? []).to.deep.equal([]);
  });

  it('deprovisions everything when the whole namespace is deleted, credentials Secret included', async () => {
    const doomed = await freshNamespace(cp, 'doomed');
    for (const m of providerManifests(doomed, provider.url, provider.apiKey)) await apply(cp, m);
    await apply(cp, bucketManifest(doomed, 'one'));
    await waitForObject<BucketJson>(cp, 'sbucket', 'one', doomed, isReady, 'the bucket in the doomed namespace');
    const secret = await waitForObject<{ metadata: { finalizers?: string[] } }>(cp, 'secret', 'provider-key', doomed,
      (x) => (x.metadata.finalizers ?? []).includes('storage.avalonhosting.example/in-use'), 'the credentials Secret to be protected');
    expect(secret.metadata.finalizers).to.include('storage.avalonhosting.example/in-use');
    await kubectlOk(cp, ['delete', 'namespace', doomed, '--wait=false']);
    await eventually(async () => (await cp.kubectl(['get', 'namespace', doomed])).code !== 0, {
      description: `namespace ${doomed} to be gone`, timeoutMs: 120_000, intervalMs: 500,
    });
    expect(await provider.buckets(doomed)).to.deep.equal([]);
  });

  it('never writes the provider API key to logs, events or status', async () => {
    const events = await kubectlOk(cp, ['get', 'events.events.k8s.io', '-n', ns, '-o', 'json']);
    const buckets = await kubectlOk(cp, ['get', 'sbucket,bucketproviderconfig', '-n', ns, '-o', 'json']);
    const logs = operator.logs();
    expect(logs.length).to.be.greaterThan(1000);
    for (const [what, text] of Object.entries({ logs, events, buckets })) {
      expect(text.includes(provider.apiKey), `API key found in ${what}`).to.equal(false);
      expect(text.includes('wrong-key'), `rotated key found in ${what}`).to.equal(false);
    }
  });
});
