/**
 * The StorageBucket controller end to end: dist/ applied, the operator process running under
 * its own ServiceAccount token (so RBAC is really checked), the mock provider as a real
 * process, buckets driven with kubectl. Assertions are on the end state of the world:
 * Kubernetes objects and provider buckets. Each test runs in a tenant of its own
 * (test/support/stack.ts says how that keeps them independent of each other's order).
 */
import { expect } from 'chai';
import { eventually } from '../support/eventually';
import {
  apply,
  bucketManifest,
  condition,
  getJson,
  kubectlOk,
  credentialsSecretManifest,
  providerManifests,
  reconciledAfterNow,
  waitForGone,
  waitForObject,
  waitForReason,
  type BucketJson,
} from '../support/kube';
import { countRequests, startProviderProcess, type ProviderProcess } from '../support/provider-process';
import { scrape, sum } from '../support/prometheus';
import { useStack, type Tenant } from '../support/stack';
import { sharedControlPlane } from './setup';

const FINALIZER = 'storage.avalonhosting.example/bucket-cleanup';
const PAUSED = 'storage.avalonhosting.example/paused';
const MANAGED_BY = 'storage.avalonhosting.example/managed-by';
const isReady = (b: BucketJson) => condition(b, 'Ready')?.status === 'True' && b.status?.observedGeneration === b.metadata.generation;
/** The drift scan's list of a provider account. */
const LIST = /^GET \/buckets 200$/;
/** Calls about one bucket: create, and anything on /buckets/{id}. */
const PER_BUCKET = /^(POST \/buckets|\w+ \/buckets\/\{id\}) /;
/**
 * Attempts a retried failure makes before the no-busy-loop checks look: with the runner's
 * backoff (5 ms doubling) the 8th comes about 0.6 s after the first and the next ones 0.6 s,
 * 1.3 s, 2.6 s later, while a busy loop makes hundreds in that time.
 */
const ATTEMPTS = 8;
/** Attempts past ATTEMPTS tolerated at the moment ATTEMPTS is seen (late polls, a drift scan). */
const SLACK = 4;

describe('StorageBucket lifecycle (operator under its ServiceAccount, real provider process)', function () {
  this.timeout(120_000);
  const stack = useStack(sharedControlPlane, {
    name: 'lifecycle',
    provider: { activationDelayMs: 500 },
    // Leader election is on, as in the Deployment; a Lease of its own keeps other tests out.
    operator: { driftInterval: '2s', flags: { 'leader-election-id': 'lifecycle-test' } },
  });

  const ready = (t: Tenant, name: string, timeoutMs = 60_000) =>
    waitForObject<BucketJson>(stack.cp, 'sbucket', name, t.ns, isReady, `StorageBucket ${t.ns}/${name} to be Ready`, timeoutMs);
  /** Creates a StorageBucket in the tenant and waits until it is Ready. */
  const readyBucket = async (t: Tenant, name: string, spec: Record<string, unknown> = {}, annotations?: Record<string, string>) => {
    await apply(stack.cp, bucketManifest(t.ns, name, spec, annotations));
    return ready(t, name);
  };
  /** Waits until the provider has answered `n` more drift-scan lists than in `from`. */
  const scansAfter = (p: ProviderProcess, from: number, n: number) =>
    eventually(async () => countRequests(await p.stats(), LIST) - from >= n, {
      description: `${n} drift scans at ${p.url}`,
      timeoutMs: 30_000,
      intervalMs: 200,
    });
  /** Waits for ATTEMPTS requests matching `pattern` since `from`; returns how many there were then. */
  const attemptsSeen = async (p: ProviderProcess, pattern: RegExp, from: number) => {
    const count = async () => countRequests(await p.stats(), pattern) - from;
    await eventually(async () => (await count()) >= ATTEMPTS, {
      description: `${ATTEMPTS} attempts matching ${pattern}`,
      timeoutMs: 30_000,
      intervalMs: 20,
    });
    return count();
  };

  it('creates the bucket once, publishes a Secret and a Service, and kubectl wait sees Ready', async () => {
    const t = await stack.tenant();
    const { cp } = stack;
    await apply(cp, bucketManifest(t.ns, 'alpha', { sizeGB: 10 }));
    await kubectlOk(cp, ['wait', '--for=condition=Ready', 'sbucket/alpha', '-n', t.ns, '--timeout=60s']);
    const b = (await getJson<BucketJson>(cp, 'sbucket', 'alpha', t.ns))!;
    expect(b.metadata.finalizers).to.include(FINALIZER);
    expect(b.status).to.include({ phase: 'Active', sizeGB: 10 });
    const atProvider = (await t.provider.buckets(t.ns)).filter((x) => x.tags['kubernetes-name'] === 'alpha');
    expect(atProvider.map((x) => x.id)).to.deep.equal([b.status?.id]);
    expect(atProvider[0]?.idempotencyKey).to.equal(b.status?.idempotencyKey);
    expect(b.metadata.annotations?.['storage.avalonhosting.example/idempotency-key']).to.equal(b.status?.idempotencyKey);

    const secret = await waitForObject<{ data: Record<string, string>; metadata: { ownerReferences: Array<{ uid: string; controller: boolean }> } }>(
      cp,
      'secret',
      'alpha-access',
      t.ns,
      () => true,
      'the access Secret',
    );
    const data = Object.fromEntries(Object.entries(secret.data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]));
    expect(data['bucketId']).to.equal(b.status?.id);
    expect(data['endpoint']).to.equal(b.status?.endpoint);
    expect(Object.values(data)).to.not.include(t.provider.apiKey);
    expect(secret.metadata.ownerReferences[0]).to.include({ uid: b.metadata.uid, controller: true });
    const svc = await waitForObject<{ spec: { type: string; externalName: string } }>(cp, 'service', 'alpha', t.ns, () => true, 'the Service');
    expect(svc.spec).to.include({ type: 'ExternalName', externalName: new URL(b.status!.endpoint!).hostname });

    const printed = await kubectlOk(cp, ['get', 'sbucket', 'alpha', '-n', t.ns]);
    expect(printed.split('\n')[1]).to.match(/^alpha\s+True\s+Active\s+bucket-\S+\s+us-east-1\s+10\s+/);
  });

  it('speaks HTTP/2 to the API server, as the Deployment starts it, requests and watches on sessions of their own', async () => {
    // A Ready bucket first: its writes and its owned-object watches have all opened connections by then.
    await readyBucket(await stack.tenant(), 'h2');
    const samples = await scrape(stack.operator.metricsUrl);
    const opened = (protocol: string, lane: string) => sum(samples, 'rest_client_connections_total', { protocol, lane });
    expect(opened('h2', 'request'), 'HTTP/2 sessions for requests').to.be.greaterThan(0);
    expect(opened('h2', 'watch'), 'HTTP/2 sessions for watches').to.be.greaterThan(0);
    expect(opened('http/1.1', 'request') + opened('http/1.1', 'watch'), 'HTTP/1.1 connections').to.equal(0);
  });

  it('resizes when sizeGB grows', async () => {
    const t = await stack.tenant();
    await readyBucket(t, 'alpha', { sizeGB: 10 });
    await kubectlOk(stack.cp, ['patch', 'sbucket', 'alpha', '-n', t.ns, '--type=merge', '-p', '{"spec":{"sizeGB":25}}']);
    const b = await waitForObject<BucketJson>(
      stack.cp,
      'sbucket',
      'alpha',
      t.ns,
      (x) => isReady(x) && x.status?.sizeGB === 25,
      'the resize to finish',
    );
    const atProvider = (await t.provider.buckets(t.ns)).find((x) => x.id === b.status?.id);
    expect(atProvider).to.include({ sizeGB: 25, phase: 'Active' });
  });

  it('corrects drift made behind its back', async () => {
    const t = await stack.tenant();
    const b = await readyBucket(t, 'alpha', { sizeGB: 25 });
    await t.provider.tamper(b.status!.id!, { sizeGB: 3, encrypted: true });
    await eventually(
      async () => {
        const x = (await t.provider.buckets(t.ns)).find((y) => y.id === b.status?.id);
        return x && x.sizeGB === 25 && x.encrypted === false && x.phase === 'Active' ? x : undefined;
      },
      { description: 'the drift to be corrected', timeoutMs: 60_000, intervalMs: 250 },
    );
  });

  it('recreates a bucket deleted at the provider, with a new key', async () => {
    const t = await stack.tenant();
    const before = await readyBucket(t, 'alpha');
    await t.provider.remove(before.status!.id!);
    const after = await waitForObject<BucketJson>(
      stack.cp,
      'sbucket',
      'alpha',
      t.ns,
      (x) => isReady(x) && x.status?.id !== before.status?.id,
      'the bucket to be recreated',
    );
    expect(after.status?.idempotencyKey).to.not.equal(before.status?.idempotencyKey);
    const atProvider = (await t.provider.buckets(t.ns)).filter((x) => x.tags['kubernetes-name'] === 'alpha');
    expect(atProvider.map((x) => x.id)).to.deep.equal([after.status?.id]);
    const events = await kubectlOk(stack.cp, ['get', 'events.events.k8s.io', '-n', t.ns, '-o', 'jsonpath={.items[*].reason}']);
    expect(events.split(' ')).to.include.members(['CreatedBucket', 'BucketMissing']);
    expect(events.split(' ')).to.not.include('BucketReady');
  });

  it('repairs its Secret and Service when they are deleted or edited by hand', async () => {
    const t = await stack.tenant();
    const { cp } = stack;
    const b = await readyBucket(t, 'alpha');
    await waitForObject(cp, 'secret', 'alpha-access', t.ns, () => true, 'the Secret');
    await waitForObject(cp, 'service', 'alpha', t.ns, () => true, 'the Service');
    await kubectlOk(cp, ['delete', 'secret', 'alpha-access', '-n', t.ns]);
    await kubectlOk(cp, ['patch', 'service', 'alpha', '-n', t.ns, '--type=merge', '-p', '{"spec":{"externalName":"evil.example"}}']);
    await waitForObject(cp, 'secret', 'alpha-access', t.ns, () => true, 'the Secret to be recreated');
    await waitForObject<{ spec: { externalName: string } }>(
      cp,
      'service',
      'alpha',
      t.ns,
      (s) => s.spec.externalName === new URL(b.status!.endpoint!).hostname,
      'the Service to be repaired',
    );
  });

  it('repairs its Secret and Service after they lose the managed-by label and are tampered with, keeping keys users added', async () => {
    const t = await stack.tenant();
    const { cp } = stack;
    const b = await readyBucket(t, 'alpha');
    const host = new URL(b.status!.endpoint!).hostname;
    const managed = (o: { metadata: { labels?: Record<string, string> } }) => o.metadata.labels?.[MANAGED_BY] === 'bucketoperator';
    await waitForObject(cp, 'secret', 'alpha-access', t.ns, managed, 'the Secret');
    await waitForObject(cp, 'service', 'alpha', t.ns, managed, 'the Service');
    // As a user (or an older operator version) could leave them: label gone, contents changed,
    // keys of the user's own added. The operator's cache no longer selects them.
    const dns = { 'external-dns.alpha.kubernetes.io/hostname': 'shop.example.com' };
    const tamper = (kind: string, name: string, patch: unknown) =>
      kubectlOk(cp, ['patch', kind, name, '-n', t.ns, '--type=merge', '-p', JSON.stringify(patch)]);
    await tamper('secret', 'alpha-access', {
      metadata: { labels: { [MANAGED_BY]: null, team: 'a' } },
      data: { bucketId: Buffer.from('tampered').toString('base64') },
    });
    await tamper('service', 'alpha', { metadata: { labels: { [MANAGED_BY]: null }, annotations: dns }, spec: { externalName: 'evil.example' } });
    const secret = await waitForObject<{ data: Record<string, string>; metadata: { labels?: Record<string, string> } }>(
      cp,
      'secret',
      'alpha-access',
      t.ns,
      (s) => managed(s) && Buffer.from(s.data['bucketId'] ?? '', 'base64').toString() === b.status?.id,
      'the Secret to be repaired under the admission policy',
    );
    expect(secret.metadata.labels?.['team'], "the user's label").to.equal('a');
    const svc = await waitForObject<{
      spec: { externalName: string };
      metadata: { labels?: Record<string, string>; annotations?: Record<string, string> };
    }>(cp, 'service', 'alpha', t.ns, (s) => managed(s) && s.spec.externalName === host, 'the Service to be repaired under the admission policy');
    expect(svc.metadata.annotations, "the user's annotation").to.include(dns);
  });

  it('waits for a missing BucketProviderConfig and proceeds once it appears', async () => {
    const t = await stack.tenant();
    const { cp } = stack;
    await apply(cp, bucketManifest(t.ns, 'waiting', { providerRef: { name: 'later' } }));
    const b = await waitForReason<BucketJson>(cp, 'sbucket', 'waiting', t.ns, 'Ready', 'ProviderConfigNotFound');
    expect(condition(b, 'Synced')?.status).to.equal('False');
    await apply(cp, { apiVersion: 'v1', kind: 'List', items: providerManifests(t.ns, t.provider.url, t.provider.apiKey, 'later') });
    await ready(t, 'waiting');
  });

  it('reports rejected credentials and recovers when the Secret is rotated', async () => {
    const t = await stack.tenant();
    const { cp } = stack;
    await readyBucket(t, 'waiting');
    await apply(cp, credentialsSecretManifest(t.ns, 'provider-key', 'wrong-key'));
    await kubectlOk(cp, ['patch', 'sbucket', 'waiting', '-n', t.ns, '--type=merge', '-p', '{"spec":{"sizeGB":11}}']);
    await waitForReason<BucketJson>(cp, 'sbucket', 'waiting', t.ns, 'Ready', 'CredentialsRejected');
    await apply(cp, credentialsSecretManifest(t.ns, 'provider-key', t.provider.apiKey));
    await waitForObject<BucketJson>(cp, 'sbucket', 'waiting', t.ns, (x) => isReady(x) && x.status?.sizeGB === 11, 'recovery after rotation');
  });

  it('re-reconciles its buckets when the provider endpoint changes', async () => {
    const t = await stack.tenant();
    const { cp } = stack;
    await readyBucket(t, 'alpha');
    const patchEndpoint = (endpoint: string) =>
      kubectlOk(cp, ['patch', 'bucketproviderconfig', 'provider', '-n', t.ns, '--type=merge', '-p', JSON.stringify({ spec: { endpoint } })]);
    // Port 9 (discard) refuses connections on loopback: the provider is unreachable.
    await patchEndpoint('http://127.0.0.1:9');
    await waitForReason<BucketJson>(cp, 'sbucket', 'alpha', t.ns, 'Synced', 'ProviderUnavailable');
    await patchEndpoint(t.provider.url);
    await waitForObject<BucketJson>(
      cp,
      'sbucket',
      'alpha',
      t.ns,
      (x) => isReady(x) && condition(x, 'Synced')?.status === 'True',
      'Synced again after the endpoint is restored',
    );
  });

  it('keeps a BucketProviderConfig while buckets use it, and shows the count', async () => {
    const t = await stack.tenant();
    const { cp } = stack;
    await apply(cp, { apiVersion: 'v1', kind: 'List', items: providerManifests(t.ns, t.provider.url, t.provider.apiKey, 'later') });
    await readyBucket(t, 'waiting', { providerRef: { name: 'later' } });
    const cfg = await waitForObject<{ status?: { bucketCount?: number } }>(
      cp,
      'bucketproviderconfig',
      'later',
      t.ns,
      (c) => c.status?.bucketCount === 1,
      'bucketCount 1',
    );
    expect(cfg.status?.bucketCount).to.equal(1);
    await kubectlOk(cp, ['delete', 'bucketproviderconfig', 'later', '-n', t.ns, '--wait=false']);
    await waitForObject<{ metadata: { deletionTimestamp?: string }; status?: { conditions?: Array<{ type: string; reason: string }> } }>(
      cp,
      'bucketproviderconfig',
      'later',
      t.ns,
      (c) => Boolean(c.metadata.deletionTimestamp) && c.status?.conditions?.some((x) => x.reason === 'InUse') === true,
      'config held InUse',
    );
    await kubectlOk(cp, ['delete', 'sbucket', 'waiting', '-n', t.ns, '--wait=false']);
    await waitForGone(cp, 'sbucket', 'waiting', t.ns);
    await waitForGone(cp, 'bucketproviderconfig', 'later', t.ns);
  });

  it('makes no provider calls while paused, and catches up when unpaused', async () => {
    // Its own provider: the counts below are this bucket's alone.
    const t = await stack.tenant({ ownProvider: {} });
    const { cp } = stack;
    // The drift scan lists an account only while it has a Ready bucket: the sentinel's.
    await Promise.all([readyBucket(t, 'alpha', { sizeGB: 25 }), readyBucket(t, 'sentinel')]);
    await kubectlOk(cp, ['annotate', 'sbucket', 'alpha', '-n', t.ns, `${PAUSED}=true`]);
    await waitForReason<BucketJson>(cp, 'sbucket', 'alpha', t.ns, 'Synced', 'ReconcilePaused');
    const before = await t.provider.stats();
    await kubectlOk(cp, ['patch', 'sbucket', 'alpha', '-n', t.ns, '--type=merge', '-p', '{"spec":{"sizeGB":30}}']);
    // Barriers: a reconcile has read the resized spec, and two drift scans of the account
    // (where the bucket now disagrees with its spec) have come and gone since.
    const handled = await reconciledAfterNow(cp, t.ns, 'alpha');
    expect(condition(handled, 'Synced')?.reason).to.equal('ReconcilePaused');
    await scansAfter(t.provider, countRequests(await t.provider.stats(), LIST), 2);
    const after = await t.provider.stats();
    expect(countRequests(after, PER_BUCKET) - countRequests(before, PER_BUCKET), JSON.stringify(after.requests)).to.equal(0);
    expect((await t.provider.buckets(t.ns)).find((x) => x.id === handled.status?.id)?.sizeGB).to.equal(25);
    await kubectlOk(cp, ['annotate', 'sbucket', 'alpha', '-n', t.ns, `${PAUSED}-`]);
    await waitForObject<BucketJson>(cp, 'sbucket', 'alpha', t.ns, (x) => isReady(x) && x.status?.sizeGB === 30, 'resize after unpause');
  });

  it('adopts an existing provider bucket named by annotation instead of creating one', async () => {
    const t = await stack.tenant();
    const res = await fetch(`${t.provider.url}/buckets`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.provider.apiKey}`, 'content-type': 'application/json', 'idempotency-key': `adopt-${t.ns}` },
      body: JSON.stringify({ region: 'us-east-1', sizeGB: 10, tags: { 'kubernetes-namespace': t.ns, 'kubernetes-name': 'adopted' } }),
    });
    const existing = (await res.json()) as { id: string };
    const b = await readyBucket(t, 'adopted', {}, { 'storage.avalonhosting.example/adopt-id': existing.id });
    expect(b.status?.id).to.equal(existing.id);
    expect((await t.provider.buckets(t.ns)).filter((x) => x.tags['kubernetes-name'] === 'adopted')).to.have.length(1);
  });

  it('marks a spec the provider rejects as terminal and does not retry it', async () => {
    const t = await stack.tenant({ ownProvider: {} });
    const { cp } = stack;
    await apply(cp, bucketManifest(t.ns, 'nowhere', { region: 'mars-north-1' }));
    const b = await waitForReason<BucketJson>(cp, 'sbucket', 'nowhere', t.ns, 'Ready', 'InvalidSpec');
    expect(condition(b, 'Ready')?.message).to.match(/region/);
    // The status is written after the 422, so the count is final unless something retries.
    const rejected = /^POST \/buckets 422$/;
    const first = countRequests(await t.provider.stats(), rejected);
    expect(first).to.be.at.least(1);
    // Barriers: a bucket created afterwards is Ready (a retry with backoff would have come
    // within milliseconds), and two drift scans have come and gone.
    await readyBucket(t, 'sentinel');
    await scansAfter(t.provider, countRequests(await t.provider.stats(), LIST), 2);
    expect(countRequests(await t.provider.stats(), rejected)).to.equal(first);
  });

  it('backs off during a provider outage without a busy loop and converges afterwards', async () => {
    const t = await stack.tenant({ ownProvider: { faults: { outage: true } } });
    const { cp } = stack;
    await apply(cp, bucketManifest(t.ns, 'outage'));
    await waitForReason<BucketJson>(cp, 'sbucket', 'outage', t.ns, 'Synced', 'ProviderUnavailable');
    // Each attempt fails at its first call: the account lookup, which is kept only once answered.
    const seen = await attemptsSeen(t.provider, /^GET \/account 503$/, 0);
    expect(seen, 'attempts when the 8th was seen').to.be.at.most(ATTEMPTS + SLACK);
    await t.provider.setFaults({});
    await ready(t, 'outage', 90_000);
    expect((await t.provider.buckets(t.ns)).filter((x) => x.tags['kubernetes-name'] === 'outage')).to.have.length(1);
  });

  it('deprovisions on delete, or leaves the bucket with deletionPolicy Orphan', async () => {
    const t = await stack.tenant();
    const { cp } = stack;
    const [alpha, keep] = await Promise.all([readyBucket(t, 'alpha'), readyBucket(t, 'keep', { deletionPolicy: 'Orphan' })]);
    await kubectlOk(cp, ['delete', 'sbucket', 'alpha', 'keep', '-n', t.ns, '--timeout=60s']);
    const ids = (await t.provider.buckets(t.ns)).map((x) => x.id);
    expect(ids).to.not.include(alpha.status?.id);
    expect(ids).to.include(keep.status?.id);
    await waitForGone(cp, 'secret', 'alpha-access', t.ns);
  });

  it('does not busy-loop when the provider keeps failing a delete, and finishes once it recovers', async () => {
    const t = await stack.tenant({ ownProvider: {} });
    const { cp } = stack;
    const b = await readyBucket(t, 'stubborn');
    await t.provider.setFaults({ failNext: { status: 503, count: 1_000_000 } });
    const failedDeletes = /^DELETE \/buckets\/\{id\} 503$/;
    const from = countRequests(await t.provider.stats(), failedDeletes);
    await kubectlOk(cp, ['delete', 'sbucket', 'stubborn', '-n', t.ns, '--wait=false']);
    const seen = await attemptsSeen(t.provider, failedDeletes, from);
    expect(seen, 'attempts when the 8th was seen').to.be.at.most(ATTEMPTS + SLACK);
    const stuck = await waitForReason<BucketJson>(cp, 'sbucket', 'stubborn', t.ns, 'Synced', 'ProviderUnavailable');
    expect(stuck.metadata.finalizers).to.include(FINALIZER);
    await t.provider.setFaults({});
    await waitForGone(cp, 'sbucket', 'stubborn', t.ns, 90_000);
    expect((await t.provider.buckets(t.ns)).map((x) => x.id)).to.not.include(b.status?.id);
  });

  it('stops instead of recreating when the config now points at another provider', async () => {
    const t = await stack.tenant();
    const { cp } = stack;
    const other = await startProviderProcess({ activationDelayMs: 100 });
    try {
      await apply(cp, bucketManifest(t.ns, 'moved', { providerRef: { name: 'switchable' } }));
      await apply(cp, { apiVersion: 'v1', kind: 'List', items: providerManifests(t.ns, t.provider.url, t.provider.apiKey, 'switchable') });
      const b = await ready(t, 'moved');
      const pointAt = async (p: ProviderProcess) => {
        await apply(cp, credentialsSecretManifest(t.ns, 'switchable-key', p.apiKey));
        await kubectlOk(cp, [
          'patch',
          'bucketproviderconfig',
          'switchable',
          '-n',
          t.ns,
          '--type=merge',
          '-p',
          JSON.stringify({ spec: { endpoint: p.url } }),
        ]);
      };
      await pointAt(other);
      await waitForReason<BucketJson>(cp, 'sbucket', 'moved', t.ns, 'Ready', 'ProviderChanged');
      expect(await other.buckets()).to.deep.equal([]);
      expect((await t.provider.buckets(t.ns)).map((x) => x.id)).to.include(b.status?.id);
      // Deleting must not release the finalizer either: the bucket still exists at the old
      // provider. Barrier: a reconcile of the deleting object has run and decided.
      await kubectlOk(cp, ['delete', 'sbucket', 'moved', '-n', t.ns, '--wait=false']);
      const deleting = await reconciledAfterNow(cp, t.ns, 'moved');
      expect(deleting.metadata.deletionTimestamp).to.be.a('string');
      expect(deleting.metadata.finalizers).to.include(FINALIZER);
      expect(condition(deleting, 'Ready')?.reason).to.equal('ProviderChanged');
      expect(await other.buckets()).to.deep.equal([]);
      await pointAt(t.provider);
      await waitForGone(cp, 'sbucket', 'moved', t.ns);
      expect((await t.provider.buckets(t.ns)).map((x) => x.id)).to.not.include(b.status?.id);
    } finally {
      await other.stop();
    }
  });

  it('gives a copied manifest (with the key annotation) its own bucket', async () => {
    const t = await stack.tenant();
    const original = await readyBucket(t, 'original');
    const key = original.metadata.annotations?.['storage.avalonhosting.example/idempotency-key'];
    const copy = await readyBucket(t, 'copy', {}, { 'storage.avalonhosting.example/idempotency-key': key! });
    expect(copy.status?.id).to.not.equal(original.status?.id);
    expect(copy.metadata.annotations?.['storage.avalonhosting.example/idempotency-key']).to.not.equal(key);
    const atProvider = await t.provider.buckets(t.ns);
    expect(atProvider.filter((x) => x.tags['kubernetes-name'] === 'original').map((x) => x.id)).to.deep.equal([original.status?.id]);
    expect(atProvider.filter((x) => x.tags['kubernetes-name'] === 'copy').map((x) => x.id)).to.deep.equal([copy.status?.id]);
  });

  it('never takes over a Service it does not own', async () => {
    const t = await stack.tenant();
    const { cp } = stack;
    await apply(cp, {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'media', namespace: t.ns },
      spec: { selector: { app: 'media' }, ports: [{ port: 80 }] },
    });
    await readyBucket(t, 'media');
    await waitForObject(cp, 'secret', 'media-access', t.ns, () => true, 'the access Secret');
    // Barrier: Ready is written before the owned objects, and the Secret before the Service, so
    // neither says the Service was looked at; the conflict Event is written when it was.
    await eventually(
      async () => {
        const events = JSON.parse(await kubectlOk(cp, ['get', 'events.events.k8s.io', '-n', t.ns, '-o', 'json'])) as {
          items: Array<{ reason: string; regarding: { name: string } }>;
        };
        return events.items.some((e) => e.regarding.name === 'media' && e.reason === 'OwnedObjectConflict');
      },
      { description: 'the OwnedObjectConflict Event about the Service media', timeoutMs: 30_000, intervalMs: 250 },
    );
    const svc = (await getJson<{ spec: { type: string }; metadata: { ownerReferences?: unknown[] } }>(cp, 'service', 'media', t.ns))!;
    expect(svc.spec.type).to.equal('ClusterIP');
    expect(svc.metadata.ownerReferences ?? []).to.deep.equal([]);
  });

  it('deprovisions everything when the whole namespace is deleted, credentials Secret included', async () => {
    const t = await stack.tenant({ prefix: 'doomed' });
    const { cp } = stack;
    await readyBucket(t, 'one');
    const secret = await waitForObject<{ metadata: { finalizers?: string[] } }>(
      cp,
      'secret',
      'provider-key',
      t.ns,
      (x) => (x.metadata.finalizers ?? []).includes('storage.avalonhosting.example/in-use'),
      'the credentials Secret to be protected',
    );
    expect(secret.metadata.finalizers).to.include('storage.avalonhosting.example/in-use');
    await kubectlOk(cp, ['delete', 'namespace', t.ns, '--wait=false']);
    await eventually(async () => (await cp.kubectl(['get', 'namespace', t.ns])).code !== 0, {
      description: `namespace ${t.ns} to be gone`,
      timeoutMs: 120_000,
      intervalMs: 500,
    });
    expect(await t.provider.buckets(t.ns)).to.deep.equal([]);
  });

  it('never writes the provider API key to logs, events or status', async () => {
    const t = await stack.tenant();
    const { cp } = stack;
    const wrongKey = `wrong-${t.ns}`;
    // Through a rejection and a rotation, where a careless message would quote a key.
    await apply(cp, { apiVersion: 'v1', kind: 'List', items: providerManifests(t.ns, t.provider.url, wrongKey, 'rotated') });
    await apply(cp, bucketManifest(t.ns, 'quiet', { providerRef: { name: 'rotated' } }));
    await waitForReason<BucketJson>(cp, 'sbucket', 'quiet', t.ns, 'Ready', 'CredentialsRejected');
    await apply(cp, credentialsSecretManifest(t.ns, 'rotated-key', t.provider.apiKey));
    await ready(t, 'quiet');
    const events = await kubectlOk(cp, ['get', 'events.events.k8s.io', '-n', t.ns, '-o', 'json']);
    const buckets = await kubectlOk(cp, ['get', 'sbucket,bucketproviderconfig', '-n', t.ns, '-o', 'json']);
    const logs = stack.operator.logs();
    expect(logs.length).to.be.greaterThan(1000);
    for (const [what, text] of Object.entries({ logs, events, buckets })) {
      expect(text.includes(t.provider.apiKey), `API key found in ${what}`).to.equal(false);
      expect(text.includes(wrongKey), `rotated key found in ${what}`).to.equal(false);
    }
  });
});
