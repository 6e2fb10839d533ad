/**
 * BucketProviderConfig safety against the real API server and the compiled operator: the
 * https rule (CEL, enforced by kube-apiserver), endpoints the operator refuses, credential
 * Secrets that did not opt in with the label, and no creates through a config that is being
 * deleted. Assertions are on objects and on the
 * provider's own request counts.
 */
import { expect } from 'chai';
import { CREDENTIALS_SECRET_LABEL, CREDENTIALS_SECRET_TYPE, HTTPS_RULE } from '../../operator/api/v1';
import { applyDist } from '../support/dist';
import {
  apply,
  bucketManifest,
  condition,
  credentialsSecretManifest,
  getJson,
  kubectlOk,
  waitForGone,
  waitForObject,
  waitForReason,
  type BucketJson,
} from '../support/kube';
import type { ProviderProcess } from '../support/provider-process';
import { useStack } from '../support/stack';
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
  // Only the API server decides here: dist/ applied, no operator and no provider. Each test
  // gets a namespace of its own.
  const namespaces: string[] = [];
  const fresh = async () => {
    const cp = await sharedControlPlane();
    await applyDist(cp);
    const ns = await freshNamespace(cp, 'bpc-rule');
    namespaces.push(ns);
    return { cp, ns };
  };

  after(async () => {
    if (namespaces.length === 0) return;
    const cp = await sharedControlPlane();
    await cp.kubectl(['delete', 'namespace', ...namespaces.splice(0), '--wait=false', '--ignore-not-found']);
  });

  it('refuses an http endpoint without insecure: true, with the CEL message', async () => {
    const { cp, ns } = await fresh();
    const res = await cp.kubectl(['apply', '-f', '-'], {
      input: JSON.stringify(configManifest(ns, 'plain', { endpoint: 'http://storage.example.com' })),
    });
    expect(res.code, res.stdout).to.not.equal(0);
    expect(res.stderr).to.include(HTTPS_RULE.message);
    expect(await getJson(cp, 'bpc', 'plain', ns)).to.equal(undefined);
  });

  it('refuses insecure: false just the same', async () => {
    const { cp, ns } = await fresh();
    const res = await cp.kubectl(['apply', '-f', '-'], {
      input: JSON.stringify(configManifest(ns, 'plain', { endpoint: 'http://storage.example.com', insecure: false })),
    });
    expect(res.code).to.not.equal(0);
    expect(res.stderr).to.include(HTTPS_RULE.message);
  });

  it('accepts http with insecure: true, https without it, and kubectl get shows the column', async () => {
    const { cp, ns } = await fresh();
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
    const { cp, ns } = await fresh();
    await apply(cp, configManifest(ns, 'tls', { endpoint: 'https://storage.example.com' }));
    const res = await cp.kubectl([
      'patch',
      'bpc',
      'tls',
      '-n',
      ns,
      '--type=merge',
      '-p',
      JSON.stringify({ spec: { endpoint: 'http://storage.example.com' } }),
    ]);
    expect(res.code).to.not.equal(0);
    expect(res.stderr).to.include(HTTPS_RULE.message);
  });
});

describe('BucketProviderConfig safety (operator under its ServiceAccount, real provider process)', function () {
  this.timeout(120_000);
  const stack = useStack(sharedControlPlane, {
    name: 'bpc-safety',
    provider: { activationDelayMs: 200 },
    operator: { flags: { 'leader-election-id': 'provider-config-test' } },
  });

  /** Every create `provider` answered, whatever the status. */
  const creates = async (provider: ProviderProcess) =>
    Object.entries((await provider.stats()).requests)
      .filter(([k]) => k.startsWith('POST /buckets '))
      .reduce((n, [, v]) => n + v, 0);

  it('refuses a config pointing at the cloud metadata address: the bucket and the config say why', async () => {
    const t = await stack.tenant();
    const { cp } = stack;
    await apply(cp, configManifest(t.ns, 'metadata', { endpoint: 'http://169.254.169.254', insecure: true }));
    await apply(cp, bucketManifest(t.ns, 'nosy', { providerRef: { name: 'metadata' } }));
    const b = await waitForReason<BucketJson>(cp, 'sbucket', 'nosy', t.ns, 'Ready', 'InvalidProviderConfig');
    expect(condition(b, 'Ready')?.message).to.match(
      /169\.254\.169\.254 is a cloud metadata address: refused \(--allow-link-local-endpoints allows it\)/,
    );
    expect(condition(b, 'Ready')?.message).to.not.include(t.provider.apiKey);
    const cfg = await waitForObject<ConfigJson>(
      cp,
      'bpc',
      'metadata',
      t.ns,
      (c) => condition(c, 'Ready')?.reason === 'InvalidProviderConfig',
      'the config InvalidProviderConfig',
    );
    expect(condition(cfg, 'Ready')?.message).to.include('--allow-link-local-endpoints');
    await kubectlOk(cp, ['delete', 'sbucket', 'nosy', '-n', t.ns]);
  });

  // The hole of issue 16: on 606f4bc any Secret a config named was read, and its key sent.
  it('never uses a Secret without the credentials label; labelling it brings the bucket to Ready, and rotation still works', async () => {
    // A provider of its own: every request it sees is this test's.
    const t = await stack.tenant({ ownProvider: { activationDelayMs: 200 } });
    const { cp } = stack;
    // The valid key, so only the missing label stands between it and the provider.
    await apply(cp, credentialsSecretManifest(t.ns, 'team-key', t.provider.apiKey, { labelled: false }));
    await apply(cp, configManifest(t.ns, 'optin', { endpoint: t.provider.url, insecure: true, secretRef: { name: 'team-key', key: 'apiKey' } }));
    await apply(cp, bucketManifest(t.ns, 'waits', { providerRef: { name: 'optin' } }));
    const command = `kubectl label secret -n ${t.ns} team-key ${CREDENTIALS_SECRET_LABEL}=${CREDENTIALS_SECRET_TYPE}`;

    const cfg = await waitForReason<ConfigJson>(cp, 'bpc', 'optin', t.ns, 'Ready', 'SecretNotLabeled');
    expect(condition(cfg, 'Ready')).to.include({ status: 'False' });
    expect(condition(cfg, 'Ready')?.message).to.include(command);
    const b = await waitForReason<BucketJson>(cp, 'sbucket', 'waits', t.ns, 'Ready', 'SecretNotLabeled');
    expect(condition(b, 'Ready')?.message).to.include(command);
    // A barrier instead of a sleep: a reconcile asked for after the refusal has been handled.
    await kubectlOk(cp, [
      'annotate',
      'sbucket',
      'waits',
      '-n',
      t.ns,
      'storage.avalonhosting.example/reconcile-requested-at=unlabelled',
      '--overwrite',
    ]);
    await waitForObject<BucketJson & { status?: { lastHandledReconcileAt?: string } }>(
      cp,
      'sbucket',
      'waits',
      t.ns,
      (x) => x.status?.lastHandledReconcileAt === 'unlabelled',
      'the bucket reconciled again',
    );
    expect(await creates(t.provider), 'creates at the provider').to.equal(0);
    expect(await t.provider.buckets(t.ns)).to.deep.equal([]);
    const secret = JSON.parse(await kubectlOk(cp, ['get', 'secret', 'team-key', '-n', t.ns, '-o', 'json'])) as {
      metadata: { finalizers?: string[] };
    };
    expect(secret.metadata.finalizers ?? [], 'finalizers of the unlabelled Secret').to.deep.equal([]);

    // Opting in is the one command the status gave.
    await kubectlOk(cp, command.split(' ').slice(1));
    await waitForObject<BucketJson>(
      cp,
      'sbucket',
      'waits',
      t.ns,
      (x) => condition(x, 'Ready')?.status === 'True',
      'the bucket Ready once the Secret is labelled',
      20_000,
    );
    await waitForObject<ConfigJson>(
      cp,
      'bpc',
      'optin',
      t.ns,
      (c) => condition(c, 'Ready')?.status === 'True',
      'the config Ready once the Secret is labelled',
      20_000,
    );

    // Rotation: a wrong key is rejected, the right one brings the resize through.
    await apply(cp, credentialsSecretManifest(t.ns, 'team-key', 'wrong-key'));
    await kubectlOk(cp, ['patch', 'sbucket', 'waits', '-n', t.ns, '--type=merge', '-p', '{"spec":{"sizeGB":12}}']);
    await waitForReason<BucketJson>(cp, 'sbucket', 'waits', t.ns, 'Ready', 'CredentialsRejected');
    await apply(cp, credentialsSecretManifest(t.ns, 'team-key', t.provider.apiKey));
    await waitForObject<BucketJson>(
      cp,
      'sbucket',
      'waits',
      t.ns,
      (x) => condition(x, 'Ready')?.status === 'True' && x.status?.sizeGB === 12,
      'the bucket resized after the rotation',
      20_000,
    );
    await kubectlOk(cp, ['delete', 'sbucket', 'waits', '-n', t.ns, '--wait=false']);
    await waitForGone(cp, 'sbucket', 'waits', t.ns);
  });

  it('creates nothing through a config being deleted, and still deprovisions through it', async () => {
    // A provider of its own: its create count is this test's alone.
    const t = await stack.tenant({ ownProvider: { activationDelayMs: 200 } });
    const { cp } = stack;
    await apply(cp, bucketManifest(t.ns, 'holder'));
    await kubectlOk(cp, ['wait', '--for=condition=Ready', 'sbucket/holder', '-n', t.ns, '--timeout=60s']);
    // The config controller's live check filters on this selectable field at the server.
    const users = await kubectlOk(cp, ['get', 'sbucket', '-n', t.ns, '--field-selector', 'spec.providerRef.name=provider', '-o', 'name']);
    expect(users.trim().split('\n')).to.deep.equal(['storagebucket.storage.avalonhosting.example/holder']);
    // The holder keeps the config's in-use finalizer, so the config stays, being deleted.
    await kubectlOk(cp, ['delete', 'bpc', 'provider', '-n', t.ns, '--wait=false']);
    await waitForObject<ConfigJson>(
      cp,
      'bpc',
      'provider',
      t.ns,
      (c) => Boolean(c.metadata.deletionTimestamp) && condition(c, 'Ready')?.reason === 'InUse',
      'the config held InUse',
    );
    const before = await creates(t.provider);

    await apply(cp, bucketManifest(t.ns, 'newcomer'));
    const b = await waitForReason<BucketJson>(cp, 'sbucket', 'newcomer', t.ns, 'Ready', 'ProviderConfigDeleting');
    expect(condition(b, 'Ready')).to.include({ status: 'False' });
    expect(condition(b, 'Ready')?.message).to.match(/BucketProviderConfig .*\/provider is being deleted/);
    // Terminal: kstatus Stalled, Argo CD Degraded, Flux failed.
    expect(condition(b, 'Stalled')?.status).to.equal('True');
    // A barrier instead of a sleep: a reconcile asked for after the refusal has been handled
    // (its request is echoed in status), and still nothing was created.
    await kubectlOk(cp, [
      'annotate',
      'sbucket',
      'newcomer',
      '-n',
      t.ns,
      'storage.avalonhosting.example/reconcile-requested-at=after-refusal',
      '--overwrite',
    ]);
    await waitForObject<BucketJson & { status?: { lastHandledReconcileAt?: string } }>(
      cp,
      'sbucket',
      'newcomer',
      t.ns,
      (x) => x.status?.lastHandledReconcileAt === 'after-refusal',
      'the newcomer reconciled again',
    );
    expect(await creates(t.provider), 'creates at the provider').to.equal(before);
    // The bucket the config already manages keeps working: still Ready, and it can be resized.
    await kubectlOk(cp, ['patch', 'sbucket', 'holder', '-n', t.ns, '--type=merge', '-p', '{"spec":{"sizeGB":20}}']);
    await waitForObject<BucketJson>(
      cp,
      'sbucket',
      'holder',
      t.ns,
      (x) => x.status?.sizeGB === 20 && condition(x, 'Ready')?.status === 'True' && x.status.observedGeneration === x.metadata.generation,
      'the holder resized and Ready through the deleting config',
    );
    expect(condition((await getJson<BucketJson>(cp, 'sbucket', 'holder', t.ns))!, 'Stalled'), 'the holder is not Stalled').to.equal(undefined);
    expect((await t.provider.buckets(t.ns)).filter((x) => x.tags['kubernetes-name'] === 'newcomer')).to.deep.equal([]);

    // Nothing was made for the newcomer, so it goes at once; the holder deprovisions through
    // the deleting config, and only then does the config go.
    await kubectlOk(cp, ['delete', 'sbucket', 'newcomer', '-n', t.ns, '--wait=false']);
    await waitForGone(cp, 'sbucket', 'newcomer', t.ns);
    await kubectlOk(cp, ['delete', 'sbucket', 'holder', '-n', t.ns, '--wait=false']);
    await waitForGone(cp, 'sbucket', 'holder', t.ns);
    await waitForGone(cp, 'bpc', 'provider', t.ns);
    expect(await t.provider.buckets(t.ns)).to.deep.equal([]);
  });
});
