/**
 * What the operator's caches hold, on a real control plane: the operator runs in-process
 * (operator.ts `startOperator`, watching all namespaces) so the test can look inside every
 * informer, under its own ServiceAccount token, so RBAC and the admission policy of dist/ apply
 * to it as to the Deployment. Unrelated Secrets and Services, labelled or not, in the buckets' namespace and in
 * another one, must never be cached; owned objects are cached without managedFields and owned
 * Secrets without their data; credential Secrets are cached only when labelled as such (one
 * label-selected watch, however many configs), never because a config names them.
 *
 * The `before` hook sets up what every test may read (unrelated objects, configs); each test
 * makes the buckets and configs it changes or counts on, so any one passes alone.
 */
import { expect } from 'chai';
import { CREDENTIALS_SECRET_LABEL, CREDENTIALS_SECRET_TYPE, MANAGED_BY_LABEL, MANAGED_BY_VALUE } from '../../operator/api/v1';
import { startOperator, type RunningOperator } from '../../operator/operator';
import { CACHED_OBJECTS_METRIC } from '../../operator/runtime/informer-factory';
import { loadKubeconfig } from '../../operator/runtime/kubeconfig';
import { createLogger } from '../../operator/runtime/logging';
import { LAST_APPLIED_ANNOTATION } from '../../operator/runtime/transforms';
import type { KubeObject } from '../../operator/runtime/types';
import type { ControlPlane } from '../support/control-plane';
import {
  apply,
  bucketManifest,
  condition,
  credentialsSecretManifest,
  getJson,
  kubectlOk,
  providerManifests,
  waitForGone,
  waitForObject,
  type BucketJson,
} from '../support/kube';
import type { ProviderProcess } from '../support/provider-process';
import { useStack } from '../support/stack';
import { freshNamespace, sharedControlPlane } from './setup';
import { eventually } from '../support/eventually';

const IN_USE = 'storage.avalonhosting.example/in-use';
const BUCKET_LABEL = 'storage.avalonhosting.example/bucket';
const isReady = (b: BucketJson) => condition(b, 'Ready')?.status === 'True' && b.status?.observedGeneration === b.metadata.generation;

interface SecretJson {
  metadata: {
    uid: string;
    resourceVersion: string;
    labels?: Record<string, string>;
    finalizers?: string[];
    ownerReferences?: Array<{ uid: string; controller?: boolean }>;
  };
  data?: Record<string, string>;
}

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');
const decoded = (s: SecretJson) => Object.fromEntries(Object.entries(s.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]));

/** Unrelated objects: a Secret (10 KiB of data) and a Service per label set, in `ns`. */
function unrelated(ns: string, prefix: string) {
  const labelSets: Record<string, Record<string, string> | undefined> = {
    plain: undefined,
    app: { app: 'shop', tier: 'web' },
    random: { [`random-${Math.random().toString(36).slice(2, 8)}`]: 'x' },
    // Our bucket-name label alone does not make an object ours: only managed-by does.
    lookalike: { [BUCKET_LABEL]: 'one' },
  };
  const items: KubeObject[] = [];
  for (const [what, labels] of Object.entries(labelSets)) {
    const metadata = { name: `${prefix}-${what}`, namespace: ns, ...(labels ? { labels } : {}) };
    items.push({ apiVersion: 'v1', kind: 'Secret', metadata, data: { blob: b64('s'.repeat(10 * 1024)) } } as KubeObject);
    items.push({ apiVersion: 'v1', kind: 'Service', metadata, spec: { ports: [{ port: 80 }] } } as KubeObject);
  }
  return { apiVersion: 'v1', kind: 'List', items };
}

describe('lean caches: only our objects and referenced Secrets are cached (real control plane)', function () {
  this.timeout(120_000);
  let op: RunningOperator;
  // Registered first, so the in-process operator stops before the stack does.
  after(async () => {
    await op?.stop();
  });
  // The operator runs in-process here (see the top of the file), so the stack starts none.
  const stack = useStack(sharedControlPlane, { name: 'lean', provider: { activationDelayMs: 200 }, operator: false });
  let cp: ControlPlane;
  let provider: ProviderProcess;
  let ns: string;
  let other: string;
  const unrelatedNames = new Set<string>();

  const ready = (name: string, namespace = ns) =>
    waitForObject<BucketJson>(cp, 'sbucket', name, namespace, isReady, `StorageBucket ${name} to be Ready`);

  /** Every object of `kind` in any cache, with the informer's selectors. */
  const cached = (kind: string): KubeObject[] =>
    op.informers
      .informers()
      .filter((i) => i.kind.kind === kind)
      .flatMap((i) => i.cache.list());
  const cachedKeys = (kind: string): string[] => cached(kind).map((o) => `${o.metadata?.namespace}/${o.metadata?.name}`);

  before(async () => {
    cp = stack.cp;
    provider = stack.provider;
    // Its config `provider` and Secret `provider-key` point at the stack's provider.
    ns = (await stack.tenant()).ns;
    other = await freshNamespace(cp, 'lean-other');
    for (const [namespace, prefix] of [
      [ns, 'before'],
      [other, 'before'],
    ] as const) {
      const list = unrelated(namespace, prefix);
      for (const item of list.items) unrelatedNames.add(`${namespace}/${item.metadata?.name}`);
      await apply(cp, list);
    }
    for (const m of providerManifests(ns, provider.url, 'wrong-key', 'rotating')) await apply(cp, m);
    // A config naming a Secret that did not opt in: the Secret must not be cached.
    for (const m of providerManifests(ns, provider.url, 'not-opted-in', 'unlabelled', { labelled: false })) await apply(cp, m);
    unrelatedNames.add(`${ns}/unlabelled-key`);
    // A Secret a config names in another namespace is not a reference: configs are namespace-local.
    await apply(cp, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'provider-key', namespace: other }, stringData: { apiKey: 'other' } });
    unrelatedNames.add(`${other}/provider-key`);

    // An access Secret as an older operator version made it: controlled by the bucket, no managed-by label, stale data.
    await apply(cp, bucketManifest(ns, 'legacy'));
    const legacy = (await getJson<BucketJson>(cp, 'sbucket', 'legacy', ns))!;
    await apply(cp, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: 'legacy-access',
        namespace: ns,
        labels: { [BUCKET_LABEL]: 'legacy' },
        ownerReferences: [
          {
            apiVersion: 'storage.avalonhosting.example/v1',
            kind: 'StorageBucket',
            name: 'legacy',
            uid: legacy.metadata.uid,
            controller: true,
            blockOwnerDeletion: true,
          },
        ],
      },
      data: { bucketId: b64('stale') },
    });
    // Someone else's Secret under the name the bucket "foreign" would use.
    await apply(cp, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'foreign-access', namespace: ns, labels: { app: 'theirs' } },
      stringData: { token: 'theirs' },
    });
    unrelatedNames.add(`${ns}/foreign-access`);

    op = startOperator({
      // The operator's ServiceAccount token, never the admin: RBAC and the admission policy apply.
      restConfig: loadKubeconfig(stack.kubeconfig),
      logger: createLogger({ level: process.env.LEAN_LOG === '1' ? 'debug' : 'silent' }),
      leaderElection: false,
      metricsBindAddress: '0',
      healthProbeBindAddress: '0',
      pollIntervalMs: 300,
    });
    await op.manager.elected();
  });

  it('brings buckets to Ready, migrating an unlabelled Secret it controls and leaving a foreign one alone', async () => {
    const legacyBefore = (await getJson<SecretJson>(cp, 'secret', 'legacy-access', ns))!;
    const foreignBefore = (await getJson<SecretJson>(cp, 'secret', 'foreign-access', ns))!;
    for (const name of ['one', 'two', 'foreign']) await apply(cp, bucketManifest(ns, name));
    for (const name of ['one', 'two', 'legacy', 'foreign']) await ready(name);

    const legacyBucket = (await getJson<BucketJson>(cp, 'sbucket', 'legacy', ns))!;
    const legacy = await waitForObject<SecretJson>(
      cp,
      'secret',
      'legacy-access',
      ns,
      (s) => s.metadata.labels?.[MANAGED_BY_LABEL] === MANAGED_BY_VALUE && decoded(s)['bucketId'] === legacyBucket.status?.id,
      'the legacy Secret to be migrated',
    );
    // Updated in place, not replaced.
    expect(legacy.metadata.uid).to.equal(legacyBefore.metadata.uid);

    // Barrier: Ready is written before the owned objects, so only the conflict Event says the
    // foreign Secret was looked at (and left alone).
    await eventually(
      async () => {
        const events = JSON.parse(await kubectlOk(cp, ['get', 'events.events.k8s.io', '-n', ns, '-o', 'json'])) as {
          items: Array<{ reason: string; regarding: { name: string } }>;
        };
        return events.items.some((e) => e.regarding.name === 'foreign' && e.reason === 'OwnedObjectConflict');
      },
      { description: 'the OwnedObjectConflict Event about bucket foreign', timeoutMs: 30_000, intervalMs: 250 },
    );
    const foreign = (await getJson<SecretJson>(cp, 'secret', 'foreign-access', ns))!;
    expect(foreign.metadata.resourceVersion).to.equal(foreignBefore.metadata.resourceVersion);
    expect(foreign.metadata.ownerReferences ?? []).to.deep.equal([]);
  });

  it('caches no Secret or Service that is not ours or not referenced, and nothing it never reads', async () => {
    // Created while the operator runs. Then a bucket's Secret: the owned-Secret watch delivers in
    // resourceVersion order, so once that Secret is cached any of these would have arrived too.
    const late = unrelated(ns, 'after');
    for (const item of [...late.items, ...unrelated(other, 'after').items]) unrelatedNames.add(`${item.metadata?.namespace}/${item.metadata?.name}`);
    await apply(cp, late);
    await apply(cp, unrelated(other, 'after'));
    await apply(cp, bucketManifest(ns, 'three'));
    await ready('three');
    await eventually(async () => cachedKeys('Secret').includes(`${ns}/three-access`), {
      description: 'three-access in the cache',
      timeoutMs: 30_000,
      intervalMs: 100,
    });

    const secrets = cached('Secret');
    const services = cached('Service');
    expect(cachedKeys('Secret').filter((k) => unrelatedNames.has(k))).to.deep.equal([]);
    expect(cachedKeys('Service').filter((k) => unrelatedNames.has(k))).to.deep.equal([]);
    for (const s of secrets) {
      const key = `${s.metadata?.namespace}/${s.metadata?.name}`;
      const ours = s.metadata?.labels?.[MANAGED_BY_LABEL] === MANAGED_BY_VALUE;
      const credentials = s.metadata?.labels?.[CREDENTIALS_SECRET_LABEL] === CREDENTIALS_SECRET_TYPE;
      expect(ours || credentials, `${key} is neither ours nor labelled as credentials`).to.equal(true);
      // Owned Secrets keep hashes of their data, never the data.
      if (ours) expect(s, key).to.not.have.property('data');
    }
    for (const s of services) expect(s.metadata?.labels?.[MANAGED_BY_LABEL], `Service ${s.metadata?.name}`).to.equal(MANAGED_BY_VALUE);
    expect(cachedKeys('Secret')).to.include.members([`${ns}/three-access`, `${ns}/provider-key`, `${ns}/rotating-key`]);
    expect(cachedKeys('Service')).to.include.members([`${ns}/three`]);

    for (const kind of ['Secret', 'Service', 'StorageBucket', 'BucketProviderConfig']) {
      for (const o of cached(kind)) {
        expect(o.metadata?.managedFields, `${kind} ${o.metadata?.name} managedFields`).to.equal(undefined);
        expect(o.metadata?.annotations?.[LAST_APPLIED_ANNOTATION], `${kind} ${o.metadata?.name} last-applied`).to.equal(undefined);
      }
    }

    // The metric tells the same counts, far below what the cluster holds.
    const metrics = await op.registry.metrics();
    const gauge = (kind: string) => Number(new RegExp(`^${CACHED_OBJECTS_METRIC}\\{kind="${kind}"\\} (\\d+)$`, 'm').exec(metrics)?.[1]);
    expect(gauge('Secret')).to.equal(secrets.length);
    expect(gauge('Service')).to.equal(services.length);
    // Counted in this file's namespaces only: other files' namespaces on the shared control plane
    // may still be going away, so a cluster-wide count taken after the cache was read can be lower.
    const mine = (key: string) => key.startsWith(`${ns}/`) || key.startsWith(`${other}/`);
    const inCluster: string[] = [];
    for (const n of [ns, other]) {
      const list = JSON.parse(await kubectlOk(cp, ['get', 'secrets', '-n', n, '-o', 'json'])) as { items: Array<{ metadata: { name: string } }> };
      inCluster.push(...list.items.map((i) => `${n}/${i.metadata.name}`));
    }
    const cachedMine = cachedKeys('Secret').filter(mine);
    expect(
      cachedMine.filter((k) => !inCluster.includes(k)),
      'cached Secrets of this file that do not exist',
    ).to.deep.equal([]);
    expect(cachedMine.length).to.be.at.most(inCluster.filter((k) => !unrelatedNames.has(k)).length);
  });

  it('repairs an owned Secret whose data was edited', async () => {
    await apply(cp, bucketManifest(ns, 'edited'));
    const want = (await ready('edited')).status?.id;
    await waitForObject<SecretJson>(cp, 'secret', 'edited-access', ns, (s) => decoded(s)['bucketId'] === want, 'the access Secret');
    await kubectlOk(cp, [
      'patch',
      'secret',
      'edited-access',
      '-n',
      ns,
      '--type=merge',
      '-p',
      JSON.stringify({ data: { bucketId: b64('tampered') } }),
    ]);
    await waitForObject<SecretJson>(cp, 'secret', 'edited-access', ns, (s) => decoded(s)['bucketId'] === want, 'the edited Secret to be repaired');
  });

  it("re-reconciles a config's buckets at once when its credential Secret is rotated", async () => {
    await apply(cp, bucketManifest(ns, 'rot', { providerRef: { name: 'rotating' } }));
    await waitForObject<BucketJson>(cp, 'sbucket', 'rot', ns, (b) => condition(b, 'Ready')?.reason === 'CredentialsRejected', 'CredentialsRejected');
    // Rejected credentials are retried only every few minutes; only the Secret's watch brings it back sooner.
    await apply(cp, credentialsSecretManifest(ns, 'rotating-key', provider.apiKey));
    await waitForObject<BucketJson>(cp, 'sbucket', 'rot', ns, isReady, 'Ready after the rotation', 30_000);
  });

  it('reports a config whose Secret is not labelled, caches nothing of it, and adds no Secret watch per config', async () => {
    await waitForObject<KubeObject & { status?: { conditions?: { type: string; reason: string; message: string }[] } }>(
      cp,
      'bucketproviderconfig',
      'unlabelled',
      ns,
      (c) => c.status?.conditions?.some((x) => x.type === 'Ready' && x.reason === 'SecretNotLabeled') ?? false,
      'config unlabelled to report SecretNotLabeled',
    );
    const secretInformers = () => op.informers.informers().filter((i) => i.kind.kind === 'Secret').length;
    const before = secretInformers();
    // Five more tenants' worth of configs, each with a Secret of its own.
    for (let i = 0; i < 5; i++) await apply(cp, { apiVersion: 'v1', kind: 'List', items: providerManifests(ns, provider.url, `k${i}`, `more-${i}`) });
    await eventually(async () => cachedKeys('BucketProviderConfig').filter((k) => k.startsWith(`${ns}/more-`)).length === 5, {
      description: 'the five new configs in the cache',
      timeoutMs: 30_000,
      intervalMs: 100,
    });
    await eventually(async () => cachedKeys('Secret').includes(`${ns}/more-4-key`), {
      description: 'more-4-key cached',
      timeoutMs: 30_000,
      intervalMs: 100,
    });
    // Owned Secrets and credential Secrets: two informers, before and after.
    expect(before).to.equal(2);
    expect(secretInformers()).to.equal(before);
    expect(cachedKeys('Secret')).to.not.include(`${ns}/unlabelled-key`);
    // The config's status carries the command, never the key.
    const config = await kubectlOk(cp, ['get', 'bucketproviderconfig', 'unlabelled', '-n', ns, '-o', 'json']);
    expect(config).to.include(`kubectl label secret -n ${ns} unlabelled-key ${CREDENTIALS_SECRET_LABEL}=${CREDENTIALS_SECRET_TYPE}`);
    expect(config).to.not.include('not-opted-in');
  });

  it('protects a referenced credential Secret, and releases it once no config names it', async () => {
    // A config and bucket of this test's own, so no other test's use of a config matters.
    for (const m of providerManifests(ns, provider.url, provider.apiKey, 'guarded')) await apply(cp, m);
    await apply(cp, bucketManifest(ns, 'guarded', { providerRef: { name: 'guarded' } }));
    await ready('guarded');
    await waitForObject<SecretJson>(
      cp,
      'secret',
      'guarded-key',
      ns,
      (s) => (s.metadata.finalizers ?? []).includes(IN_USE),
      'guarded-key to be protected',
    );
    await kubectlOk(cp, ['delete', 'sbucket', 'guarded', '-n', ns, '--wait=false']);
    await waitForGone(cp, 'sbucket', 'guarded', ns);
    await kubectlOk(cp, ['delete', 'bucketproviderconfig', 'guarded', '-n', ns, '--wait=false']);
    await waitForGone(cp, 'bucketproviderconfig', 'guarded', ns);
    await waitForObject<SecretJson>(
      cp,
      'secret',
      'guarded-key',
      ns,
      (s) => !(s.metadata.finalizers ?? []).includes(IN_USE),
      'guarded-key to be released',
    );
    // Still labelled, so still cached (the cache follows the label, not the configs).
    expect(cachedKeys('Secret')).to.include(`${ns}/guarded-key`);
  });

  it('releases a referenced Secret whose credentials label is removed, and drops it from the cache', async () => {
    // Its own config and Secret: the shared `provider` ones stay labelled for the other tests.
    for (const m of providerManifests(ns, provider.url, provider.apiKey, 'relabel')) await apply(cp, m);
    await waitForObject<SecretJson>(
      cp,
      'secret',
      'relabel-key',
      ns,
      (s) => (s.metadata.finalizers ?? []).includes(IN_USE),
      'relabel-key to be protected',
    );
    await kubectlOk(cp, ['label', 'secret', 'relabel-key', '-n', ns, `${CREDENTIALS_SECRET_LABEL}-`]);
    await waitForObject<SecretJson>(
      cp,
      'secret',
      'relabel-key',
      ns,
      (s) => !(s.metadata.finalizers ?? []).includes(IN_USE),
      'relabel-key to be released',
    );
    await eventually(async () => !cachedKeys('Secret').includes(`${ns}/relabel-key`), {
      description: 'relabel-key out of the cache',
      timeoutMs: 30_000,
      intervalMs: 100,
    });
    await kubectlOk(cp, ['label', 'secret', 'relabel-key', '-n', ns, `${CREDENTIALS_SECRET_LABEL}=${CREDENTIALS_SECRET_TYPE}`]);
    await waitForObject<SecretJson>(
      cp,
      'secret',
      'relabel-key',
      ns,
      (s) => (s.metadata.finalizers ?? []).includes(IN_USE),
      'relabel-key protected again',
    );
  });
});
