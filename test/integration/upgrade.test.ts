/**
 * Upgrading from the previous release (0.1.0) to this one, exactly as CHANGELOG.md's upgrade
 * notes for this version say: their shell blocks are run as written.
 *
 * The previous release comes from git (test/support/previous-release.ts): its dist/ installed
 * as it shipped, its operator built by its own build script and started as its own Deployment
 * starts it, under the operator's ServiceAccount token, so its RBAC and admission policies are
 * really checked. It makes StorageBuckets in every state a running installation holds:
 * - `ready`, `resize`, `drift`: Ready, deletionPolicy Delete;
 * - `orphan`: Ready, deletionPolicy Orphan;
 * - `observed`: managementPolicy Observe of a bucket made outside the operator;
 * - `paused`: paused after it was Ready, and resized while paused (not applied);
 * - `provisioning`: created, the provider still provisioning it (held there by the provider's
 *   admin API until this version runs);
 * - `midcreate`: its create accepted by the provider and not yet committed (the provider's
 *   `lateCommitOnCreate`) when the operator is killed.
 * Then that operator stops, the notes' commands apply this version's dist/, and this version's
 * operator starts. The tests assert on the world: the provider's buckets (none created twice,
 * none deleted, none orphaned; the mid-create one made exactly once, by the key 0.1.0 sent), the
 * conditions, the key 0.1.0 recorded for the observed bucket no longer the observer's, and that
 * every bucket is still managed: resized, drift corrected, resumed, deleted (gone at the
 * provider) or orphaned (kept). The way back the notes promise is run last.
 *
 * The control plane is this file's own: the CRDs and policies are replaced by an older release's
 * and back, which no other file should see.
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { VERSION } from '../../infra/version';
import { ADOPT_ANNOTATION, IDEMPOTENCY_KEY_ANNOTATION, PAUSED_ANNOTATION } from '../../operator/api/v1';
import type { LateCommitReport } from '../../provider';
import type { ProviderBucket } from '../../operator/provider-client';
import { REPO_ROOT, upgradeNotes } from '../../scripts/release';
import { waitForSecretPolicy } from '../support/admission';
import { startControlPlane, type ControlPlane } from '../support/control-plane';
import type { DeploymentLike } from '../support/deployment-invocation';
import { eventually } from '../support/eventually';
import {
  apply,
  bucketManifest,
  condition,
  freshNamespace,
  getJson,
  kubectlOk,
  providerManifests,
  reconciledAfterNow,
  waitForGone,
  type BucketJson,
} from '../support/kube';
import { startOperatorProcess, type OperatorProcess } from '../support/operator-process';
import { installDist, prepareRelease, PREVIOUS_RELEASE, startReleaseOperator, type PreparedRelease } from '../support/previous-release';
import { countRequests, startProviderProcess, type ProviderProcess } from '../support/provider-process';

const OPERATOR_SA = { namespace: 'bucketoperator-system', name: 'bucketoperator-controller-manager' } as const;
/** The operator's Deployment, as dist/ names it. */
const DEPLOYMENT = { namespace: 'bucketoperator-system', name: 'bucketoperator-controller-manager' } as const;
/**
 * One Pod name for every operator process: a Deployment's new Pod would wait out the Lease of
 * the one killed mid-create (15 s), which tests nothing here.
 */
const POD_NAME = 'bucketoperator-upgrade-test';
/**
 * When the held create commits, counted from its arrival: after the operator of this version has
 * sent it again with the same key (20 s after the kill on 2 cores at a load average of 11), so
 * the commit finds the key used and makes nothing. Should a machine be slower still, the commit
 * comes first and the operator finds the bucket by its key: one bucket, made by that key, either
 * way; the tests hold for both.
 */
const LATE_COMMIT_DELAY_MS = 30_000;
/** The provider provisions every bucket this long, so `provisioning` can be held there in time. */
const ACTIVATION_DELAY_MS = 4000;

const FULL = ['ready', 'resize', 'drift', 'orphan', 'provisioning', 'midcreate'] as const;
const ALL = [...FULL, 'observed', 'paused'] as const;
type Name = (typeof ALL)[number];

const isReady = (b: BucketJson | undefined) =>
  b !== undefined && condition(b, 'Ready')?.status === 'True' && b.status?.observedGeneration === b.metadata.generation;

/** What the provider did with the creates it held (admin API). */
async function lateCommits(provider: ProviderProcess): Promise<LateCommitReport> {
  const res = await fetch(`${provider.url}/admin/late-commits`, { headers: { authorization: `Bearer ${provider.adminToken}` } });
  if (!res.ok) throw new Error(`GET /admin/late-commits: ${res.status} ${await res.text()}`);
  return (await res.json()) as LateCommitReport;
}

/** Zeroes the provider's request counters. */
async function resetStats(provider: ProviderProcess): Promise<void> {
  const res = await fetch(`${provider.url}/admin/stats`, { method: 'DELETE', headers: { authorization: `Bearer ${provider.adminToken}` } });
  if (!res.ok) throw new Error(`DELETE /admin/stats: ${res.status}`);
}

/** Makes a bucket at the provider the way another tool would, outside the operator. */
async function outsideBucket(provider: ProviderProcess): Promise<string> {
  const res = await fetch(`${provider.url}/buckets`, {
    method: 'POST',
    headers: { authorization: `Bearer ${provider.apiKey}`, 'content-type': 'application/json', 'idempotency-key': 'made-outside' },
    body: JSON.stringify({ region: 'us-east-1', sizeGB: 5, tags: { team: 'data' } }),
  });
  if (res.status !== 201) throw new Error(`POST /buckets: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { id: string }).id;
}

/** Runs one shell block of the upgrade notes with kubectl pointed at `cp`, from the repository root. */
async function runNotes(cp: ControlPlane, block: string): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const child = spawn('bash', ['-euo', 'pipefail', '-c', block], {
      cwd: REPO_ROOT,
      env: { ...process.env, PATH: `${dirname(cp.binaries.kubectl)}:${process.env['PATH'] ?? ''}`, KUBECONFIG: cp.kubeconfigPath },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`the upgrade notes' block failed (exit ${code}):\n${block}\n---\n${out}`)),
    );
  });
}

/** The images of the operator's Deployment as the cluster holds it. */
async function deploymentImages(cp: ControlPlane): Promise<string[]> {
  const out = await kubectlOk(cp, [
    'get',
    'deployment',
    DEPLOYMENT.name,
    '-n',
    DEPLOYMENT.namespace,
    '-o',
    'jsonpath={.spec.template.spec.containers[*].image}',
  ]);
  return out.split(' ').filter(Boolean);
}

/** The operator's Deployment as the cluster holds it. */
async function clusterDeployment(cp: ControlPlane): Promise<DeploymentLike> {
  const d = await getJson<DeploymentLike>(cp, 'deployment', DEPLOYMENT.name, DEPLOYMENT.namespace);
  if (!d) throw new Error(`no Deployment ${DEPLOYMENT.namespace}/${DEPLOYMENT.name}`);
  return d;
}

describe(`upgrade from ${PREVIOUS_RELEASE.version} to ${VERSION} (a control plane of its own)`, function () {
  this.timeout(300_000);
  const notes = upgradeNotes(readFileSync(join(REPO_ROOT, 'CHANGELOG.md'), 'utf8'), VERSION);
  const [upgradeBlock, backBlock] = notes.shellBlocks;

  let cp: ControlPlane;
  let provider: ProviderProcess;
  let release: PreparedRelease;
  let kubeconfig = '';
  let dir = '';
  let operator: OperatorProcess | undefined;
  let ns = '';
  let failed = false;
  /** Before the upgrade: each StorageBucket's uid and provider id, and the provider's buckets. */
  const snapshot = {
    uid: new Map<Name, string>(),
    id: new Map<Name, string>(),
    atProvider: [] as ProviderBucket[],
    midcreateKey: '',
    observedKey: '' as string | undefined,
  };
  let observedId = '';

  const get = (name: string) => getJson<BucketJson>(cp, 'sbucket', name, ns);
  const waitFor = (name: string, what: string, check: (b: BucketJson) => boolean, timeoutMs = 90_000) =>
    eventually(
      async () => {
        const b = await get(name);
        return b && check(b) ? b : undefined;
      },
      { description: `StorageBucket ${name} ${what}`, timeoutMs, intervalMs: 250 },
    );
  const atProvider = async (name: string) => (await provider.buckets(ns)).filter((b) => b.tags['kubernetes-name'] === name);
  const stopOperator = async (signal: NodeJS.Signals) => {
    await operator?.kill(signal);
    operator = undefined;
  };
  const operatorOptions = () => ({ kubeconfig, logFile: join(dir, 'operator.log'), podName: POD_NAME, driftInterval: '2s', pollInterval: '300ms' });

  before(async function () {
    this.timeout(240_000);
    expect(upgradeBlock, `CHANGELOG.md's ${VERSION} upgrade notes have a shell block with the upgrade's commands`).to.be.a('string');
    dir = mkdtempSync(join(tmpdir(), 'bucketoperator-upgrade-'));
    [cp, release, provider] = await Promise.all([
      startControlPlane(),
      prepareRelease(),
      startProviderProcess({ activationDelayMs: ACTIVATION_DELAY_MS }),
    ]);

    // The previous release, installed as its README said, its operator confined before it starts.
    await installDist(cp, release.dist);
    await waitForSecretPolicy(cp, `system:serviceaccount:${OPERATOR_SA.namespace}:${OPERATOR_SA.name}`, 'default');
    kubeconfig = await cp.serviceAccountKubeconfig(OPERATOR_SA.namespace, OPERATOR_SA.name);
    ns = await freshNamespace(cp, 'upgrade');
    await apply(cp, { apiVersion: 'v1', kind: 'List', items: providerManifests(ns, provider.url, provider.apiKey) });
    observedId = await outsideBucket(provider);
    operator = await startReleaseOperator(release, operatorOptions());

    // `provisioning` first, held in Provisioning at the provider as soon as it is there.
    await apply(cp, bucketManifest(ns, 'provisioning', { sizeGB: 1 }));
    const held = await eventually(async () => (await atProvider('provisioning'))[0], {
      description: 'the provider to hold provisioning',
      timeoutMs: 60_000,
      intervalMs: 50,
    });
    await provider.tamper(held.id, { phase: 'Provisioning' });

    await apply(cp, {
      apiVersion: 'v1',
      kind: 'List',
      items: [
        bucketManifest(ns, 'ready', { sizeGB: 1 }),
        bucketManifest(ns, 'resize', { sizeGB: 1 }),
        bucketManifest(ns, 'drift', { sizeGB: 1 }),
        bucketManifest(ns, 'paused', { sizeGB: 1 }),
        bucketManifest(ns, 'orphan', { sizeGB: 1, deletionPolicy: 'Orphan' }),
        bucketManifest(ns, 'observed', { sizeGB: 5, managementPolicy: 'Observe' }, { [ADOPT_ANNOTATION]: observedId }),
      ],
    });
    await Promise.all(
      ['ready', 'resize', 'drift', 'paused', 'orphan', 'observed'].map((n) => waitFor(n, `to be Ready under ${release.version}`, isReady)),
    );
    await waitFor('provisioning', 'to be provisioning', (b) => Boolean(b.status?.id) && condition(b, 'Ready')?.reason === 'Provisioning');

    // Paused, and resized in the same write: the resize waits for the resume.
    await kubectlOk(cp, [
      'patch',
      'sbucket',
      'paused',
      '-n',
      ns,
      '--type=merge',
      '-p',
      JSON.stringify({ metadata: { annotations: { [PAUSED_ANNOTATION]: 'true' } }, spec: { sizeGB: 2 } }),
    ]);
    await waitFor('paused', 'to report the pause', (b) => condition(b, 'Synced')?.reason === 'ReconcilePaused');

    // The create the provider accepts and holds; the operator is killed before any answer.
    await provider.setFaults({ lateCommitOnCreate: { count: 1, delayMs: LATE_COMMIT_DELAY_MS } });
    await apply(cp, bucketManifest(ns, 'midcreate', { sizeGB: 1 }));
    await eventually(async () => (await lateCommits(provider)).pending.length === 1, {
      description: 'the provider to hold the create of midcreate',
      timeoutMs: 30_000,
      intervalMs: 50,
    });
    await stopOperator('SIGKILL');
    await provider.setFaults({});

    // The state of the world the upgrade starts from.
    const mid = await get('midcreate');
    snapshot.midcreateKey = mid?.metadata.annotations?.[IDEMPOTENCY_KEY_ANNOTATION] ?? '';
    expect(snapshot.midcreateKey, 'midcreate: the key its create was sent with').not.to.equal('');
    expect(mid?.status?.id, 'midcreate: no answer recorded').to.equal(undefined);
    const objects = await Promise.all(ALL.map(async (name) => [name, await get(name)] as const));
    for (const [name, b] of objects) {
      if (!b) throw new Error(`StorageBucket ${name} is missing before the upgrade`);
      snapshot.uid.set(name, b.metadata.uid);
      if (b.status?.id) snapshot.id.set(name, b.status.id);
    }
    // 0.1.0 recorded the key of the bucket it observed as the observer's own (see the 0.2.0 Fixed).
    snapshot.observedKey = objects.find(([name]) => name === 'observed')?.[1]?.status?.idempotencyKey;
    snapshot.atProvider = await provider.buckets();
    expect((await atProvider('paused'))[0]?.sizeGB, 'paused: the resize waits').to.equal(1);

    // The upgrade, as the notes say; then this version's operator.
    await resetStats(provider);
    await runNotes(cp, upgradeBlock ?? '');
    expect(await deploymentImages(cp), 'the image the Deployment rolls to').to.deep.equal([`bucketoperator:${VERSION}`]);
    operator = await startOperatorProcess(operatorOptions());
    await provider.tamper(held.id, { phase: 'Active' });
  });

  afterEach(function () {
    if (this.currentTest?.state === 'failed') failed = true;
  });

  after(async function () {
    this.timeout(60_000);
    await stopOperator('SIGTERM');
    await provider?.stop();
    await cp?.stop();
    if (failed) console.log(`      upgrade: operator log kept in ${dir}`);
    else if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('keeps every provider bucket: none created twice, none deleted, the mid-create one made once, every bucket in its condition', async () => {
    await Promise.all(FULL.map((n) => waitFor(n, `to be Ready under ${VERSION}`, isReady)));
    await waitFor('observed', 'to be Ready (observed)', (b) => condition(b, 'Ready')?.status === 'True');
    const paused = await reconciledAfterNow(cp, ns, 'paused');
    expect(condition(paused, 'Synced')?.reason, 'paused stays paused').to.equal('ReconcilePaused');

    // The held create is due: it committed (and was found by its key) or found its key used.
    const settled = await eventually(
      async () => {
        const r = await lateCommits(provider);
        return r.pending.length === 0 ? r : undefined;
      },
      { description: 'the held create to be due', timeoutMs: LATE_COMMIT_DELAY_MS + 30_000, intervalMs: 500 },
    );

    const now = await provider.buckets();
    for (const name of ALL) {
      const b = await get(name);
      expect(b?.metadata.uid, `${name}: the same object`).to.equal(snapshot.uid.get(name));
      const id = snapshot.id.get(name);
      if (id) expect(b?.status?.id, `${name}: the same provider bucket`).to.equal(id);
    }
    for (const name of FULL) {
      const mine = now.filter((x) => x.tags['kubernetes-namespace'] === ns && x.tags['kubernetes-name'] === name);
      expect(
        mine.map((x) => x.id),
        `${name}: exactly one provider bucket, the one its status names (held create: ${JSON.stringify(settled)})`,
      ).to.deep.equal([(await get(name))?.status?.id]);
    }
    const midId = (await get('midcreate'))?.status?.id ?? '';
    expect(now.find((b) => b.id === midId)?.idempotencyKey, `midcreate: made by the key ${release.version} sent`).to.equal(snapshot.midcreateKey);
    expect(now.map((b) => b.id).sort(), 'the provider holds what it held before the upgrade, and the mid-create bucket').to.deep.equal(
      [...snapshot.atProvider.map((b) => b.id), midId].sort(),
    );
    expect(now.find((b) => b.id === observedId)?.tags, 'the observed bucket is left as it was').to.deep.equal({ team: 'data' });
    expect(
      (await get('observed'))?.status?.idempotencyKey,
      `observed: the key ${release.version} recorded (${snapshot.observedKey ?? 'none'}) is no longer its own`,
    ).to.equal(undefined);
    expect((await atProvider('paused'))[0]?.sizeGB, 'paused: nothing sent while paused').to.equal(1);
    expect(countRequests(await provider.stats(), /^DELETE \/buckets/), 'DELETEs sent since the upgrade').to.equal(0);
  });

  it('manages every bucket afterwards: resize, drift, resume, delete (gone at the provider) and Orphan (kept)', async () => {
    const ids = new Map<string, string>();
    for (const name of ALL) ids.set(name, (await get(name))?.status?.id ?? '');
    const idOf = (name: string) => ids.get(name) ?? '';
    const provided = async (id: string) => (await provider.buckets()).find((b) => b.id === id);

    await kubectlOk(cp, ['patch', 'sbucket', 'resize', '-n', ns, '--type=merge', '-p', '{"spec":{"sizeGB":3}}']);
    await provider.tamper(idOf('drift'), { encrypted: true });
    await kubectlOk(cp, ['annotate', 'sbucket', 'paused', '-n', ns, `${PAUSED_ANNOTATION}-`]);
    await kubectlOk(cp, ['delete', 'sbucket', 'ready', 'midcreate', 'orphan', 'observed', '-n', ns, '--wait=false']);

    await Promise.all([
      eventually(async () => (await provided(idOf('resize')))?.sizeGB === 3, {
        description: 'resize to be 3 GB at the provider',
        timeoutMs: 60_000,
        intervalMs: 250,
      }),
      eventually(async () => (await provided(idOf('drift')))?.encrypted === false, {
        description: 'the drift to be put back',
        timeoutMs: 60_000,
        intervalMs: 250,
      }),
      eventually(async () => (await provided(idOf('paused')))?.sizeGB === 2, {
        description: 'the resize made while paused to be applied',
        timeoutMs: 60_000,
        intervalMs: 250,
      }),
      ...['ready', 'midcreate', 'orphan', 'observed'].map((n) => waitForGone(cp, 'sbucket', n, ns, 60_000)),
    ]);
    await Promise.all(['resize', 'paused'].map((n) => waitFor(n, 'to be Ready at its new size', isReady)));

    const left = new Set((await provider.buckets()).map((b) => b.id));
    expect(left.has(idOf('ready')), 'ready (Delete) is deleted at the provider').to.equal(false);
    expect(left.has(idOf('midcreate')), 'midcreate (made under the old key) is deleted at the provider').to.equal(false);
    expect(left.has(idOf('orphan')), 'orphan (Orphan) is kept at the provider').to.equal(true);
    expect(left.has(observedId), 'observed is kept at the provider').to.equal(true);
  });

  it('goes back to the previous release as the notes say: every bucket kept, one made by this version managed by that one', async function () {
    if (backBlock === undefined) this.skip();
    await apply(cp, bucketManifest(ns, 'fresh', { sizeGB: 1 }));
    const fresh = await waitFor('fresh', `to be Ready under ${VERSION}`, isReady);
    const kept = await provider.buckets();

    await stopOperator('SIGTERM');
    await runNotes(cp, backBlock ?? '');
    // The previous image, run as the Deployment the cluster now holds describes it.
    const deployment = await clusterDeployment(cp);
    expect(await deploymentImages(cp), 'the image the notes set').to.deep.equal([`bucketoperator:${release.version}`]);
    operator = await startReleaseOperator(release, operatorOptions(), deployment);

    // It creates under this version's policies, owned Secret and Service included.
    await apply(cp, bucketManifest(ns, 'back', { sizeGB: 1 }));
    await waitFor('back', `to be Ready under ${release.version}`, isReady);
    expect(await getJson(cp, 'secret', 'back-access', ns), 'its Secret').not.to.equal(undefined);
    expect(await getJson(cp, 'service', 'back', ns), 'its Service').not.to.equal(undefined);

    await kubectlOk(cp, ['patch', 'sbucket', 'fresh', '-n', ns, '--type=merge', '-p', '{"spec":{"sizeGB":4}}']);
    await eventually(async () => (await provider.buckets()).find((b) => b.id === fresh.status?.id)?.sizeGB === 4, {
      description: `fresh to be resized by ${release.version}`,
      timeoutMs: 60_000,
      intervalMs: 250,
    });
    const names = (await provider.buckets(ns)).map((b) => b.tags['kubernetes-name'] ?? '');
    expect(new Set(names).size, 'no bucket made twice').to.equal(names.length);
    const backId = (await get('back'))?.status?.id ?? '';
    expect((await provider.buckets()).map((b) => b.id).sort(), `${release.version} keeps every bucket`).to.deep.equal(
      [...kept.map((b) => b.id), backId].sort(),
    );

    await kubectlOk(cp, ['delete', 'sbucket', 'fresh', 'back', '-n', ns, '--wait=false']);
    await Promise.all(['fresh', 'back'].map((n) => waitForGone(cp, 'sbucket', n, ns, 60_000)));
    const left = (await provider.buckets()).map((b) => b.id);
    expect(left, `${release.version} deletes the bucket ${VERSION} made`).not.to.include(fresh.status?.id);
    expect(left, `${release.version} deletes its own`).not.to.include(backId);
  });
});
