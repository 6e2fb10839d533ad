/**
 * The support matrix's smoke suite, for one Kubernetes version (BUCKETOPERATOR_K8S_VERSION, one
 * of test/support/control-plane/matrix.env; `npm run test:matrix` runs it once per version):
 * on a control plane of that version, dist/ and each dist/v2*\/ folder installed as the docs say,
 * in the docs' order, with the operator of each folder running as its ServiceAccount under the
 * shipped RBAC and admission policies.
 *
 * 1. dist/: one v1 bucket's whole life (created, Ready, grown, deleted, gone at the provider).
 * 2. dist/v2/: v2 served through the operator's webhook, reached through its Service (see
 *    operator.ts): a bucket written in v2 read in v1 and back, one written in v1 round-tripped
 *    through v2.
 * 3. dist/v2-stored/: v2 stored and every stored object rewritten in v2, proven in etcd: by the
 *    StorageVersionMigrations where the minor serves them (1.37+), else by docs/v2.md's blocks,
 *    run as written; then a v2 bucket's whole life.
 * 4. dist/v2-back-to-v1/, dist/v2/, dist/: back to v1 alone the same way, nothing lost.
 *
 * Each step needs the one before, so the runner stops at the first failure (--bail).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { parseKubernetesVersion, storageMigrationPlan } from '../../infra/kubernetes-versions';
import * as v1 from '../../operator/api/v1';
import * as v2 from '../../operator/api/v2';
import { pinnedVersions, startControlPlane, type ControlPlane } from '../support/control-plane';
import { applyDist } from '../support/dist';
import { eventually } from '../support/eventually';
import { REPO } from '../support/image';
import { apply, freshNamespace, getJson, kubectlOk, providerManifests } from '../support/kube';
import type { OperatorProcess } from '../support/operator-process';
import { freePort } from '../support/ports';
import { startProviderProcess, type ProviderProcess } from '../support/provider-process';
import { hostAddress, routeWebhook, startFolderOperator, WEBHOOK_SERVICE } from './operator';
import { documentedBlocks, runDocumented, storedApiVersions } from './stored';

const BUCKETS_V1 = `storagebuckets.${v1.VERSION}.${v1.GROUP}`;
const BUCKETS_V2 = `storagebuckets.${v2.VERSION}.${v2.GROUP}`;
const CRDS = [`storagebuckets.${v1.GROUP}`, `bucketproviderconfigs.${v1.GROUP}`] as const;
const RESOURCES = ['storagebuckets', 'bucketproviderconfigs'] as const;
const MIGRATIONS = 'storageversionmigrations.storagemigration.k8s.io';
const OPERATOR_SA = { namespace: 'bucketoperator-system', name: 'bucketoperator-controller-manager' } as const;
/** Buckets the operator cannot provision (their config names a missing Secret), so only the storage changes under them. */
const BULK = 25;

interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}
interface Obj {
  metadata: { name: string; uid: string; generation?: number; annotations?: Record<string, string>; finalizers?: string[] };
  spec: Record<string, unknown>;
  status?: { observedGeneration?: number; conditions?: Condition[] } & Record<string, unknown>;
}
interface Crd {
  spec: {
    versions: Array<{ name: string; served: boolean; storage: boolean }>;
    conversion?: { strategy: string; webhook?: { clientConfig?: { caBundle?: string } } };
  };
  status?: { storedVersions?: string[] };
}

const isReady = (o: Obj | undefined): boolean =>
  o !== undefined &&
  o.status?.observedGeneration === o.metadata.generation &&
  (o.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');

describe('support matrix smoke suite', function () {
  this.timeout(240_000);
  let version = process.env['BUCKETOPERATOR_K8S_VERSION'] ?? '';
  let cp: ControlPlane;
  let provider: ProviderProcess;
  let operator: OperatorProcess | undefined;
  let kubeconfig = '';
  let dir = '';
  let ns = '';
  let bulkNs = '';
  let webhookPort = 0;
  /** Whether this minor runs StorageVersionMigrations, as the construct decides it. */
  let migrates = false;
  let failed = false;
  /** What must come through every flip unchanged, by bucket name. */
  const kept = new Map<string, { uid: string; spec: unknown }>();

  /** Stops the running operator and starts the one of `folder`: a rollout of that folder's Deployment. */
  async function rollOut(folder: string): Promise<void> {
    await operator?.kill('SIGTERM');
    operator = await startFolderOperator({ folder, kubeconfig, logFile: join(dir, 'operator.log'), webhookPort });
  }

  /** `kubectl apply` of files of a dist/ folder, in the order given. */
  const applyFiles = (folder: string, files: string[]) => kubectlOk(cp, ['apply', ...files.flatMap((f) => ['-f', join(REPO, folder, f)])]);

  const crd = async (name: string) => (await getJson<Crd>(cp, 'crd', name, ''))!;
  const storedVersionsOf = async () => Promise.all(CRDS.map(async (n) => (await crd(n)).status?.storedVersions ?? []));

  async function waitReady(resource: string, name: string, namespace: string, extra: (o: Obj) => boolean = () => true): Promise<Obj> {
    return eventually(
      async () => {
        const o = await getJson<Obj>(cp, resource, name, namespace);
        return isReady(o) && extra(o!) ? o : undefined;
      },
      { description: `${resource} ${namespace}/${name} to be Ready`, timeoutMs: 60_000, intervalMs: 250 },
    );
  }

  /** A bucket's whole life in `apiVersion`: created once, Ready, grown, deleted, gone at the provider. */
  async function wholeLife(apiVersion: 'v1' | 'v2', name: string): Promise<void> {
    const resource = apiVersion === 'v1' ? BUCKETS_V1 : BUCKETS_V2;
    const spec =
      apiVersion === 'v1'
        ? { region: 'eu-west-1', sizeGB: 10, providerRef: { name: 'provider' } }
        : { forProvider: { region: 'eu-west-1', size: '10G' }, providerConfigRef: { name: 'provider' } };
    const grown = apiVersion === 'v1' ? { spec: { sizeGB: 20 } } : { spec: { forProvider: { size: '20G' } } };
    await apply(cp, { apiVersion: `${v1.GROUP}/${apiVersion}`, kind: 'StorageBucket', metadata: { name, namespace: ns }, spec });
    const ready = await waitReady(resource, name, ns);
    expect(ready.metadata.finalizers).to.include(v1.BUCKET_FINALIZER);
    const atProvider = async () => (await provider.buckets(ns)).filter((b) => b.tags['kubernetes-name'] === name);
    expect((await atProvider()).map((b) => b.sizeGB)).to.deep.equal([10]);

    await kubectlOk(cp, ['patch', resource, name, '-n', ns, '--type=merge', '-p', JSON.stringify(grown)]);
    await waitReady(resource, name, ns, (o) => (o.metadata.generation ?? 0) > (ready.metadata.generation ?? 0));
    await eventually(async () => ((await atProvider()).map((b) => b.sizeGB).join() === '20' ? true : undefined), {
      description: `${name} grown to 20 GB at the provider`,
      timeoutMs: 30_000,
      intervalMs: 250,
    });

    await kubectlOk(cp, ['delete', resource, name, '-n', ns, '--wait=true', '--timeout=60s']);
    expect(await atProvider(), `${name} is gone at the provider`).to.deep.equal([]);
  }

  /**
   * Rewrites every stored object in the storage version the CRDs name now, after `folder`'s
   * CRDs and Deployment are in: with the folder's StorageVersionMigrations where the minor serves
   * them, else with docs/v2.md's block, as written.
   */
  async function migrateStorage(folder: string, to: 'v1' | 'v2'): Promise<void> {
    // The operator's own writes must not be what rewrites them: most are still in the old version.
    const from = `${v1.GROUP}/${to === 'v2' ? 'v1' : 'v2'}`;
    const stale = (await Promise.all(RESOURCES.map((r) => storedApiVersions(cp, r)))).reduce((n, tally) => n + (tally[from] ?? 0), 0);
    expect(stale, `objects stored in ${from} before the migration`).to.be.at.least(BULK);
    if (migrates) {
      await applyFiles(folder, ['05-storage-migration.yaml']);
      const names = CRDS.map((c) => `${c}-to-${to}`);
      // A migration starts once the garbage collector's watch has passed the resourceVersion it
      // recorded; one write of each kind afterwards moves it along at once (see
      // test/integration/storage-migration.test.ts), instead of the next bookmark a minute away.
      for (const name of names) {
        await eventually(
          async () =>
            (await getJson<{ status?: { resourceVersion?: string } }>(cp, MIGRATIONS, name, ''))?.status?.resourceVersion ? true : undefined,
          {
            description: `${name} to record a resourceVersion`,
            timeoutMs: 30_000,
            intervalMs: 200,
          },
        );
      }
      for (const resource of RESOURCES) await kubectlOk(cp, ['annotate', '--overwrite', resource, '--all', '-n', bulkNs, `example.com/nudged=${to}`]);
      for (const name of names) {
        await eventually(
          async () => {
            const conditions = (await getJson<{ status?: { conditions?: Condition[] } }>(cp, MIGRATIONS, name, ''))?.status?.conditions ?? [];
            const failed = conditions.find((c) => c.type === 'Failed' && c.status === 'True');
            if (failed) throw new Error(`${name} failed: ${failed.message ?? ''}`);
            return conditions.some((c) => c.type === 'Succeeded' && c.status === 'True') ? true : undefined;
          },
          { description: `${name} to succeed`, timeoutMs: 120_000, intervalMs: 500 },
        );
      }
    } else {
      const [, rewrite] = documentedBlocks('docs/v2.md');
      expect(rewrite?.script, 'docs/v2.md marks the rewrite block').to.include('storedVersions');
      await runDocumented(cp, rewrite!.script, `docs/v2.md line ${rewrite!.line}`);
    }
  }

  /** Everything stored, in etcd, is in `to`, and both CRDs say so; nothing kept changed. */
  async function expectAllStoredIn(to: 'v1' | 'v2'): Promise<void> {
    expect(await storedVersionsOf()).to.deep.equal([[to], [to]]);
    for (const resource of RESOURCES) {
      const tally = await storedApiVersions(cp, resource);
      expect(Object.keys(tally), `${resource} in etcd: ${JSON.stringify(tally)}`).to.deep.equal([`${v1.GROUP}/${to}`]);
    }
    for (const [name, before] of kept) {
      const now = (await getJson<Obj>(cp, BUCKETS_V1, name, ns))!;
      expect({ uid: now.metadata.uid, spec: now.spec }, name).to.deep.equal(before);
    }
  }

  before(async function () {
    this.timeout(180_000);
    version ||= (await pinnedVersions()).kubernetes;
    const minor = parseKubernetesVersion(version);
    if (!minor) throw new Error(`BUCKETOPERATOR_K8S_VERSION=${version} is not a Kubernetes version`);
    migrates = storageMigrationPlan({ kubernetes: minor, storageVersion: 'v2', migrateStorage: undefined }).kind === 'storage-version-migration';
    dir = mkdtempSync(join(tmpdir(), 'bucketoperator-matrix-'));
    webhookPort = await freePort();
    [cp, provider] = await Promise.all([
      // Aggregator routing: webhook Services are reached through their EndpointSlices (operator.ts).
      startControlPlane({ kubernetesVersion: version, apiServerExtraArgs: ['--enable-aggregator-routing=true'], logDir: join(dir, 'logs') }),
      startProviderProcess({ activationDelayMs: 200 }),
    ]);
  });

  afterEach(function () {
    if (this.currentTest?.state === 'failed') failed = true;
  });

  after(async function () {
    this.timeout(60_000);
    await operator?.kill('SIGTERM');
    await provider?.stop();
    await cp?.stop();
    // The control plane's and the operator's logs explain a failure; a pass needs neither.
    if (failed) console.log(`Kubernetes ${version}: logs kept in ${dir}`);
    else if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('runs the Kubernetes version asked for', async () => {
    const got = JSON.parse(await kubectlOk(cp, ['version', '-o', 'json'])) as {
      serverVersion: { gitVersion: string };
      clientVersion: { gitVersion: string };
    };
    expect([got.serverVersion.gitVersion, got.clientVersion.gitVersion]).to.deep.equal([version, version]);
  });

  it('dist/: installed as the README says, the operator takes a v1 bucket through its whole life', async () => {
    await applyDist(cp);
    kubeconfig = await cp.serviceAccountKubeconfig(OPERATOR_SA.namespace, OPERATOR_SA.name, { expirationSeconds: 3600 });
    await rollOut('dist');
    [ns, bulkNs] = await Promise.all([freshNamespace(cp, 'matrix'), freshNamespace(cp, 'matrix-bulk')]);
    await apply(cp, { apiVersion: 'v1', kind: 'List', items: providerManifests(ns, provider.url, provider.apiKey) });
    await wholeLife('v1', 'life-v1');

    // Left in place for the storage flips: one Ready bucket, and BULK the operator only reports on.
    await apply(cp, {
      apiVersion: v1.API_VERSION,
      kind: 'StorageBucket',
      metadata: { name: 'kept', namespace: ns },
      spec: { region: 'us-east-1', sizeGB: 3, providerRef: { name: 'provider' } },
    });
    await apply(cp, {
      apiVersion: 'v1',
      kind: 'List',
      items: [
        {
          apiVersion: v1.API_VERSION,
          kind: 'BucketProviderConfig',
          metadata: { name: 'nowhere', namespace: bulkNs },
          spec: { endpoint: 'https://storage.example.com', secretRef: { name: 'missing' } },
        },
        ...Array.from({ length: BULK }, (_, i) => ({
          apiVersion: v1.API_VERSION,
          kind: 'StorageBucket',
          metadata: { name: `bulk-${i}`, namespace: bulkNs },
          spec: { region: 'us-east-1', sizeGB: 1 + i, providerRef: { name: 'nowhere' } },
        })),
      ],
    });
    const ready = await waitReady(BUCKETS_V1, 'kept', ns);
    kept.set('kept', { uid: ready.metadata.uid, spec: ready.spec });
  });

  it("dist/v2/: v2 served through the operator's webhook, a bucket round-trips between v1 and v2", async () => {
    await applyFiles('dist/v2', ['00-crds.yaml']);
    await kubectlOk(cp, ['apply', '-f', join(REPO, 'dist', 'v2')]);
    await routeWebhook(cp, hostAddress(), webhookPort);
    await rollOut('dist/v2');
    for (const name of CRDS) {
      await eventually(async () => ((await crd(name)).spec.conversion?.webhook?.clientConfig?.caBundle ? true : undefined), {
        description: `the operator to inject its CA into ${name}`,
        timeoutMs: 60_000,
        intervalMs: 250,
      });
    }

    // Written in v2 in a spelling v1 cannot hold, read in v1 (rounded up, the spelling kept aside), and back.
    await apply(cp, {
      apiVersion: v2.API_VERSION,
      kind: 'StorageBucket',
      metadata: { name: 'made-in-v2', namespace: ns },
      spec: { forProvider: { region: 'us-east-1', size: '1500Mi' }, providerConfigRef: { name: 'provider' } },
    });
    const asV1 = (await getJson<Obj>(cp, BUCKETS_V1, 'made-in-v2', ns))!;
    expect(asV1.spec['sizeGB']).to.equal(2);
    expect(asV1.metadata.annotations?.[`${v1.GROUP}/v2-size`]).to.equal('1500Mi');
    const asV2 = (await getJson<Obj>(cp, BUCKETS_V2, 'made-in-v2', ns))!;
    expect(asV2.spec['forProvider']).to.deep.include({ size: '1500Mi', region: 'us-east-1' });
    const madeInV2 = await waitReady(BUCKETS_V1, 'made-in-v2', ns);
    kept.set('made-in-v2', { uid: madeInV2.metadata.uid, spec: madeInV2.spec });

    // Written in v1, read in v2 and written back in v2: v1 reads the same spec.
    const keptV2 = (await getJson<Obj>(cp, BUCKETS_V2, 'kept', ns))!;
    expect(keptV2.spec['forProvider']).to.deep.include({ region: 'us-east-1', size: '3G' });
    await kubectlOk(cp, ['replace', '-f', '-'], JSON.stringify(keptV2));
    expect((await getJson<Obj>(cp, BUCKETS_V1, 'kept', ns))!.spec).to.deep.equal(kept.get('kept')?.spec);
  });

  it('dist/v2-stored/: v2 stored, every stored object rewritten in v2 as the docs say for this minor', async () => {
    for (const resource of RESOURCES) expect(Object.keys(await storedApiVersions(cp, resource)), resource).to.deep.equal([v1.API_VERSION]);
    if (migrates) {
      await applyFiles('dist/v2-stored', ['00-crds.yaml']);
      await applyFiles('dist/v2-stored', ['00-crds.yaml', '01-namespace.yaml', '02-rbac.yaml', '03-admission-policy.yaml', '04-manager.yaml']);
    } else {
      // As rendered for the newest minor, the migrations are refused here: the docs' way applies.
      const refused = await cp.kubectl(['apply', '--dry-run=server', '-f', join(REPO, 'dist', 'v2-stored', '05-storage-migration.yaml')]);
      expect(refused.code).to.not.equal(0);
      expect(refused.stderr).to.include('no matches for kind "StorageVersionMigration" in version "storagemigration.k8s.io/v1"');
      const [applyBlock] = documentedBlocks('docs/v2.md');
      expect(applyBlock?.script, 'docs/v2.md marks the apply block').to.include('dist/v2-stored/04-manager.yaml');
      await runDocumented(cp, applyBlock!.script, `docs/v2.md line ${applyBlock!.line}`);
    }
    expect(await storedVersionsOf()).to.deep.equal([
      ['v1', 'v2'],
      ['v1', 'v2'],
    ]);
    await rollOut('dist/v2-stored');
    await migrateStorage('dist/v2-stored', 'v2');
    await expectAllStoredIn('v2');
  });

  it('the operator of dist/v2-stored/ takes a v2 bucket through its whole life', async () => {
    await wholeLife('v2', 'life-v2');
  });

  it('back: dist/v2-back-to-v1/ stores v1 again and rewrites everything in v1, then dist/v2/ and dist/ leave v1 alone', async () => {
    if (migrates) {
      await applyFiles('dist/v2-back-to-v1', ['00-crds.yaml']);
      await applyFiles('dist/v2-back-to-v1', ['00-crds.yaml', '01-namespace.yaml', '02-rbac.yaml', '03-admission-policy.yaml', '04-manager.yaml']);
      // A migration to v1 ran never before here; the docs' note on rerunning applies to a second flip.
    } else {
      const [applyBlock] = documentedBlocks('docs/v2.md');
      await runDocumented(cp, applyBlock!.script.replaceAll('dist/v2-stored/', 'dist/v2-back-to-v1/'), `docs/v2.md line ${applyBlock!.line}, back`);
    }
    await rollOut('dist/v2-back-to-v1');
    await migrateStorage('dist/v2-back-to-v1', 'v1');
    await expectAllStoredIn('v1');

    await applyFiles('dist/v2', ['00-crds.yaml']);
    await kubectlOk(cp, ['apply', '-f', join(REPO, 'dist', 'v2')]);
    await rollOut('dist/v2');
    // Client-side apply drops the conversion stanza and v2 (docs/v2.md, "Rolling back the webhook").
    await applyFiles('dist', ['00-crds.yaml']);
    await kubectlOk(cp, ['apply', '-f', join(REPO, 'dist')]);
    await rollOut('dist');
    for (const name of CRDS) {
      const got = await crd(name);
      expect([got.spec.versions.map((v) => v.name), got.spec.conversion?.strategy ?? 'None'], name).to.deep.equal([['v1'], 'None']);
    }
    await expectAllStoredIn('v1');
    for (const name of kept.keys()) await waitReady(BUCKETS_V1, name, ns);
    // The webhook's Service is left by a client-side apply; its EndpointSlice goes with this test.
    await kubectlOk(cp, ['delete', 'endpointslice', `${WEBHOOK_SERVICE.name}-local`, '-n', WEBHOOK_SERVICE.namespace]);
  });
});
