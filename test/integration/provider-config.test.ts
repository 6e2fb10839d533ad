/**
 * BucketProviderConfig safety against the real API server and the compiled operator: the
 * https rule (CEL, enforced by kube-apiserver), endpoints the operator refuses, and no
 * creates through a config that is being deleted. Assertions are on objects and on the
 * provider's own request counts.
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HTTPS_RULE } from '../../operator/api/v1';
import type { ControlPlane } from '../support/control-plane';
import { applyDist } from '../support/dist';
import {
  apply, bucketManifest, condition, getJson, kubectlOk, providerManifests, waitForGone, waitForObject, type BucketJson,
} from '../support/kube';
import { startOperatorProcess, type OperatorProcess } from '../support/operator-process';
import { startProviderProcess, type ProviderProcess } from '../support/provider-process';
import { freshNamespace, sharedControlPlane } from './setup';

interface ConfigJson {
  metadata: { deletionTimestamp?: string; finalizers?: string[] };
  spec: { endpoint: string; insecure?: boolean };
  status?: { bucketCount?: number; conditions?: Array<{ type: string; status: string; reason: string; message: string }> };
}

const configManifest = (ns: string, name: string, spec: Record<string, unknown>) => ({
  apiVersion: 'storage.avalonhosting.example/v1',
  kind: 'BucketProviderConfig',
  metadata: { name, namespace: ns },
  spec: { secretRef: { name: 'provider-key', key: 'apiKey' }, ...spec },
});

describe('BucketProviderConfig endpoint rule (real API server)', function () {
  this.timeout(120_000);
  let cp: ControlPlane;
  let ns: string;

  before(async () => {
    cp = await sharedControlPlane();
    await applyDist(cp);
    ns = await freshNamespace(cp, 'bpc-rule');
  });

  it('refuses an http endpoint without insecure: true, with the CEL message', async () => {
    const res = await cp.kubectl(['apply', '-f', '-'], { input: JSON.stringify(configManifest(ns, 'plain', { endpoint: 'http://storage.example.com' })) });
    expect(res.code, res.stdout).to.not.equal(0);
    expect(res.stderr).to.include(HTTPS_RULE.message);
    expect(await getJson(cp, 'bpc', 'plain', ns)).to.equal(undefined);
  });

  it('refuses insecure: false just the same', async () => {
    const res = await cp.kubectl(['apply', '-f', '-'], { input: JSON.stringify(configManifest(ns, 'plain', { endpoint: 'http://storage.example.com', insecure: false })) });
    expect(res.code).to.not.equal(0);
    expect(res.stderr).to.include(HTTPS_RULE.message);
  });

  it('accepts http with insecure: true, https without it, and kubectl get shows the column', async () => {
    await apply(cp, configManifest(ns, 'local', { endpoint: 'http://127.0.0.1:8090', insecure: true }));
    await apply(cp, configManifest(ns, 'tls', { endpoint: 'https://storage.example.com' }));
    // The default is applied by the API server, so the column reads false rather than blank.
    expect((await getJson<ConfigJson>(cp, 'bpc', 'tls', ns))?.spec.insecure).to.equal(false);
    const printed = (await kubectlOk(cp, ['get', 'bpc', 'local', 'tls', '-n', ns])).trim().split('\n');
    expect(printed[0]).to.match(/^NAME\s+ENDPOINT\s+INSECURE\s+READY\s+BUCKETS\s+AGE$/);
    expect(printed[1]).to.match(/^local\s+http:\/\/127\.0\.0\.1:8090\s+true\s/);
    expect(printed[2]).to.match(/^tls\s+https:\/\/storage\.example\.com\s+false\s/);
  });

  it('refuses switching an existing https config to http without insecure', async () => {
    const res = await cp.kubectl(['patch', 'bpc', 'tls', '-n', ns, '--type=merge', '-p', JSON.stringify({ spec: { endpoint: 'http://storage.example.com' } })]);
    expect(res.code).to.not.equal(0);
    expect(res.stderr).to.include(HTTPS_RULE.message);
  });
});

describe('BucketProviderConfig safety (operator under its ServiceAccount, real provider process)', function () {
  this.timeout(120_000);
  let cp: ControlPlane;
  let provider: ProviderProcess;
  let operator: OperatorProcess;
  let ns: string;
  let tmp: string;

  before(async () => {
    cp = await sharedControlPlane();
    await applyDist(cp);
    tmp = mkdtempSync(join(tmpdir(), 'bucketoperator-provider-config-'));
    provider = await startProviderProcess({ activationDelayMs: 200 });
    ns = await freshNamespace(cp, 'bpc-safety');
    for (const m of providerManifests(ns, provider.url, provider.apiKey)) await apply(cp, m);
    const kubeconfig = await cp.serviceAccountKubeconfig('bucketoperator-system', 'bucketoperator-controller-manager');
    operator = await startOperatorProcess({
      kubeconfig,
      logFile: join(tmp, 'operator.log'),
      flags: { 'leader-election-id': 'provider-config-test' },
    });
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

  /** Every create the provider answered, whatever the status. */
  const creates = async () =>
    Object.entries((await provider.stats()).requests).filter(([k]) => k.startsWith('POST /buckets ')).reduce((n, [, v]) => n + v, 0);

  it('refuses a config pointing at the cloud metadata address: the bucket and the config say why', async () => {
    await apply(cp, configManifest(ns, 'metadata', { endpoint: 'http://169.254.169.254', insecure: true }));
    await apply(cp, bucketManifest(ns, 'nosy', { providerRef: { name: 'metadata' } }));
    const b = await waitForObject<BucketJson>(cp, 'sbucket', 'nosy', ns, (x) => condition(x, 'Ready')?.reason === 'InvalidProviderConfig', 'nosy InvalidProviderConfig');
    expect(condition(b, 'Ready')?.message).to.match(/169\.254\.169\.254 is a cloud metadata address: refused \(--allow-link-local-endpoints allows it\)/);
    expect(condition(b, 'Ready')?.message).to.not.include(provider.apiKey);
    const cfg = await waitForObject<ConfigJson>(cp, 'bpc', 'metadata', ns, (c) => condition(c, 'Ready')?.reason === 'InvalidProviderConfig', 'the config InvalidProviderConfig');
    expect(condition(cfg, 'Ready')?.message).to.include('--allow-link-local-endpoints');
    await kubectlOk(cp, ['delete', 'sbucket', 'nosy', '-n', ns]);
  });

  it('creates nothing through a config being deleted, and still deprovisions through it', async () => {
    await apply(cp, bucketManifest(ns, 'holder'));
    await kubectlOk(cp, ['wait', '--for=condition=Ready', 'sbucket/holder', '-n', ns, '--timeout=60s']);
    // The config controller's live check filters on this selectable field at the server.
    const users = await kubectlOk(cp, ['get', 'sbucket', '-n', ns, '--field-selector', 'spec.providerRef.name=provider', '-o', 'name']);
    expect(users.trim().split('\n')).to.deep.equal(['storagebucket.storage.avalonhosting.example/holder']);
    // The holder keeps the config's in-use finalizer, so the config stays, being deleted.
    await kubectlOk(cp, ['delete', 'bpc', 'provider', '-n', ns, '--wait=false']);
    await waitForObject<ConfigJson>(cp, 'bpc', 'provider', ns, (c) => Boolean(c.metadata.deletionTimestamp) && condition(c, 'Ready')?.reason === 'InUse', 'the config held InUse');
    const before = await creates();

    await apply(cp, bucketManifest(ns, 'newcomer'));
    const b = await waitForObject<BucketJson>(cp, 'sbucket', 'newcomer', ns, (x) => condition(x, 'Ready')?.reason === 'ProviderConfigDeleting', 'newcomer ProviderConfigDeleting');
    expect(condition(b, 'Ready')).to.include({ status: 'False' });
    expect(condition(b, 'Ready')?.message).to.match(/BucketProviderConfig .*\/provider is being deleted/);
    // Terminal: kstatus Stalled, Argo CD Degraded, Flux failed.
    expect(condition(b, 'Stalled')?.status).to.equal('True');
    // Longer than a few reconciles: still nothing created.
    await new Promise((r) => setTimeout(r, 3000));
    expect(await creates(), 'creates at the provider').to.equal(before);
    expect((await provider.buckets(ns)).filter((x) => x.tags['kubernetes-name'] === 'newcomer')).to.deep.equal([]);

    // Nothing was made for the newcomer, so it goes at once; the holder deprovisions through
    // the deleting config, and only then does the config go.
    await kubectlOk(cp, ['delete', 'sbucket', 'newcomer', '-n', ns, '--wait=false']);
    await waitForGone(cp, 'sbucket', 'newcomer', ns);
    await kubectlOk(cp, ['delete', 'sbucket', 'holder', '-n', ns, '--wait=false']);
    await waitForGone(cp, 'sbucket', 'holder', ns);
    await waitForGone(cp, 'bpc', 'provider', ns);
    expect(await provider.buckets(ns)).to.deep.equal([]);
  });
});
