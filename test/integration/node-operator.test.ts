/**
 * The operator as the Pod dist/ describes, on the real node: `kubectl apply -f dist/` with the
 * manifests unchanged (the image is the one `npm run build:oci` loads under the name dist/
 * gives), the mock provider as a Pod behind a Service, and each step of the README's way to v2
 * finished with `kubectl rollout status`. The Pods run under the shipped ServiceAccount, RBAC
 * and admission policy, since they are the only operator here. Needs root, `npm run
 * build:node` and `npm run build:control-plane`.
 *
 * One cluster for the whole file, in order: dist/ (one replica), then dist/v2/ (two, the
 * rollout that never finished on 4482d8e), the Lease, load, drain and token cases on those two,
 * then dist/v2-stored/.
 *
 * BUCKETOPERATOR_NODE_TEST_RELEASE=previous runs the same steps on the previous release (its
 * dist/ and its operator's build, on this checkout's base image): on 0.1.0 (4482d8e) the rollout
 * to dist/v2/ never finishes.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { expect } from 'chai';
import { stringify } from 'yaml';
import { startControlPlane, type ControlPlane } from '../support/control-plane';
import { eventually } from '../support/eventually';
import {
  applyDistFolder,
  buildImages,
  DIST,
  containerPid,
  deployProvider,
  operatorDeployment,
  operatorPods,
  tenantNamespace,
  type ClusterProvider,
  type OperatorDeployment,
  type OperatorPod,
} from '../support/in-cluster';
import { bucketManifest, condition, getJson, kubectlOk, type BucketJson } from '../support/kube';
import { controlPlaneOptionsForNode, startNode, type RunningNode } from '../support/node';
import { prepareRelease } from '../support/previous-release';
import { projectedTokenDir, readProjectedToken, swapProjectedToken } from '../support/projected-token';

const NS = 'team-a';
const NONROOT = '65532';
const LEASE = 'bucketoperator-leader';
/**
 * StorageBuckets read and patched in v1 by name: once v2 is served the API server prefers it,
 * so `sbucket` means v2, where `spec.sizeGB` is not a field (and a patch of it is pruned).
 */
const V1 = 'storagebuckets.v1.storage.avalonhosting.example';

/** `Uid:`/`Gid:` (real, effective, saved, filesystem) and other lines of /proc/<pid>/status. */
function procStatus(text: string): Map<string, string> {
  return new Map(text.split('\n').map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 1).trim()] as [string, string]));
}

/** The mount options of the mount at `/` in a /proc/<pid>/mountinfo (the container's root filesystem). */
function rootMountOptions(mountinfo: string): string[] {
  const root = mountinfo.split('\n').find((l) => l.split(' ')[4] === '/');
  if (!root) throw new Error(`no root mount in:\n${mountinfo}`);
  return (root.split(' ')[5] ?? '').split(',');
}

/** Every value of the Lease's holder as a watch saw it, in order ('' once released). */
class LeaseWatch {
  readonly holders: string[] = [];
  private readonly child: ChildProcess;
  private buffered = '';

  constructor(cp: ControlPlane, namespace: string) {
    this.child = spawn(cp.binaries.kubectl, ['-n', namespace, 'get', 'lease', LEASE, '--watch', '-o', 'jsonpath={.spec.holderIdentity}{"\\n"}'], {
      env: { ...process.env, KUBECONFIG: cp.kubeconfigPath },
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    this.child.stdout?.on('data', (chunk: Buffer) => {
      this.buffered += chunk.toString();
      const lines = this.buffered.split('\n');
      this.buffered = lines.pop() ?? '';
      for (const l of lines) if (this.holders.at(-1) !== l) this.holders.push(l);
    });
  }

  stop(): void {
    this.child.kill();
  }
}

/** The 401 answers the operator in `pod` has had from the API server (its rest_client_requests_total). */
async function unauthorizedCount(cp: ControlPlane, namespace: string, pod: string): Promise<number> {
  const ip = (await kubectlOk(cp, ['-n', namespace, 'get', 'pod', pod, '-o', 'jsonpath={.status.podIP}'])).trim();
  const res = await fetch(`http://${ip}:8080/metrics`, { signal: AbortSignal.timeout(5000) });
  const text = await res.text();
  return text
    .split('\n')
    .filter((l) => l.startsWith('rest_client_requests_total{') && l.includes('code="401"'))
    .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

describe('the operator as the Pod dist/ describes, on a real node', function () {
  let cp: ControlPlane;
  let node: RunningNode;
  let provider: ClusterProvider;
  let op: OperatorDeployment;
  let dist: string;

  const readyBucket = (name: string, timeoutMs = 90_000, sizeGB?: number): Promise<BucketJson> =>
    eventually(
      async () => {
        const b = await getJson<BucketJson>(cp, V1, name, NS);
        return b && condition(b, 'Ready')?.status === 'True' && (sizeGB === undefined || b.status?.sizeGB === sizeGB) ? b : undefined;
      },
      { description: `StorageBucket ${NS}/${name} Ready${sizeGB === undefined ? '' : ` at ${sizeGB} GB`}`, timeoutMs, intervalMs: 500 },
    );
  const applyBuckets = (names: readonly string[], sizeGB = 10): Promise<string> =>
    kubectlOk(
      cp,
      ['apply', '-f', '-'],
      names.map((n) => stringify(bucketManifest(NS, n, { sizeGB, providerRef: { name: 'default' } }))).join('---\n'),
    );
  const leaseHolder = async (): Promise<string> =>
    (await kubectlOk(cp, ['-n', op.namespace, 'get', 'lease', LEASE, '-o', 'jsonpath={.spec.holderIdentity}'])).trim();
  const readyPods = async (): Promise<OperatorPod[]> => (await operatorPods(cp, op)).filter((p) => p.ready && !p.deleting);

  before(async function () {
    this.timeout(600_000);
    const release = process.env['BUCKETOPERATOR_NODE_TEST_RELEASE'] === 'previous' ? await prepareRelease() : undefined;
    dist = release?.dist ?? DIST;
    const images = buildImages(release && { app: release.imageDir, dist: release.dist });
    images.catch(() => undefined);
    cp = await startControlPlane(controlPlaneOptionsForNode());
    node = await startNode(cp);
    const { provider: providerArchive, operator: operatorArchive } = await images;
    await node.importImage(providerArchive);
    await node.importImage(operatorArchive);
    provider = await deployProvider(cp);
    op = operatorDeployment('', dist);
  });

  afterEach(async function () {
    if (this.currentTest?.state !== 'failed' || !cp) return;
    // What a reader of a failed run needs: the buckets, the operator's Pods and their last log lines.
    const show = async (args: string[]) => {
      const res = await cp.kubectl(args);
      console.log(`$ kubectl ${args.join(' ')}\n${res.stdout}${res.stderr}`);
    };
    await show(['get', 'sbucket', '-A', '-o', 'wide']);
    await show(['-n', op.namespace, 'get', 'pods,pdb,lease', '-o', 'wide']);
    for (const p of await operatorPods(cp, op)) await show(['-n', op.namespace, 'logs', p.name, '--tail=40']);
  });

  after(async function () {
    this.timeout(120_000);
    await node?.stop();
    await cp?.stop();
  });

  it('kubectl apply -f dist/ runs the operator non-root on a read-only root filesystem, with its probes passing', async function () {
    this.timeout(240_000);
    await applyDistFolder(cp, '', 180, dist);
    const [pod, ...more] = await readyPods();
    expect(more, 'dist/ runs one replica').to.have.length(0);
    expect(pod!.restarts, 'restarts').to.equal(0);
    const pid = await containerPid(node, pod!.containerId!);
    const status = procStatus(await readFile(`/proc/${pid}/status`, 'utf8'));
    expect(status.get('Uid')?.split(/\s+/), 'real, effective, saved and filesystem uid').to.deep.equal([NONROOT, NONROOT, NONROOT, NONROOT]);
    expect(status.get('Gid')?.split(/\s+/), 'gids').to.deep.equal([NONROOT, NONROOT, NONROOT, NONROOT]);
    expect(status.get('NoNewPrivs'), 'no_new_privs').to.equal('1');
    expect(status.get('CapEff'), 'effective capabilities').to.match(/^0+$/);
    expect(rootMountOptions(await readFile(`/proc/${pid}/mountinfo`, 'utf8')), 'root filesystem').to.include('ro');

    // The probes pass for real: Ready, and a container that kubelet never restarted.
    const probes = await kubectlOk(cp, [
      '-n',
      op.namespace,
      'get',
      'pod',
      pod!.name,
      '-o',
      'jsonpath={.spec.containers[0].readinessProbe.httpGet.path} {.spec.containers[0].livenessProbe.httpGet.path}',
    ]);
    expect(probes.trim()).to.equal('/readyz /healthz');
  });

  it('takes a bucket through its life against the provider behind a Service', async function () {
    this.timeout(180_000);
    await tenantNamespace(cp, NS, provider);
    await applyBuckets(['logs']);
    const ready = await readyBucket('logs');
    const atProvider = () => provider.buckets().then((all) => all.find((b) => b.id === ready.status?.id));
    expect(await atProvider(), 'the provider bucket').to.include({ sizeGB: 10 });

    await kubectlOk(cp, ['-n', NS, 'patch', V1, 'logs', '--type=merge', '-p', '{"spec":{"sizeGB":20}}']);
    await readyBucket('logs', 60_000, 20);
    expect(await atProvider(), 'resized at the provider').to.include({ sizeGB: 20 });

    await kubectlOk(cp, ['-n', NS, 'delete', 'sbucket', 'logs', '--timeout=60s']);
    expect(await atProvider(), 'deprovisioned').to.equal(undefined);
  });

  it('finishes the rollout to dist/v2/ (which deadlocked on 4482d8e) and serves v2 through the webhook Service', async function () {
    this.timeout(300_000);
    await tenantNamespace(cp, NS, provider);
    await applyBuckets(['before-v2']);
    await readyBucket('before-v2');
    await applyDistFolder(cp, 'v2', 180, dist);
    const pods = await readyPods();
    expect(pods, 'two Ready replicas').to.have.length(2);
    // The old leader released the Lease on its way out; one of the new replicas takes it.
    await eventually(async () => pods.map((p) => p.name).includes(await leaseHolder()), {
      description: 'a Ready replica to hold the Lease',
      timeoutMs: 30_000,
      intervalMs: 250,
    });

    const conversion = JSON.parse(
      await kubectlOk(cp, ['get', 'crd', 'storagebuckets.storage.avalonhosting.example', '-o', 'jsonpath={.spec.conversion.webhook.clientConfig}']),
    ) as { service?: { name: string; namespace: string }; url?: string };
    expect(conversion.url, 'a Service, not a URL').to.equal(undefined);
    expect(conversion.service?.namespace).to.equal(op.namespace);
    // The stored v1 object read as v2: the API server calls the webhook through that Service.
    const v2 = await kubectlOk(cp, ['-n', NS, 'get', 'storagebuckets.v2.storage.avalonhosting.example', 'before-v2', '-o', 'jsonpath={.apiVersion}']);
    expect(v2.trim()).to.equal('storage.avalonhosting.example/v2');
  });

  it('hands the Lease over on SIGTERM: the leader releases it and another replica takes it', async function () {
    this.timeout(180_000);
    const leader = await leaseHolder();
    expect(
      (await readyPods()).some((p) => p.name !== leader),
      'a second Ready replica',
    ).to.equal(true);
    const watch = new LeaseWatch(cp, op.namespace);
    try {
      await eventually(() => watch.holders.includes(leader), { description: 'the Lease watch to start', timeoutMs: 15_000, intervalMs: 100 });
      // A graceful delete: SIGTERM, then up to terminationGracePeriodSeconds before SIGKILL.
      await kubectlOk(cp, ['-n', op.namespace, 'delete', 'pod', leader, '--wait=false']);
      const next = await eventually(
        () => {
          const last = watch.holders.at(-1);
          return last && last !== leader ? last : undefined;
        },
        { description: `a replica other than ${leader} to hold the Lease`, timeoutMs: 60_000, intervalMs: 200 },
      );
      const after = watch.holders.slice(watch.holders.indexOf(leader));
      // Released by its holder on SIGTERM (holder ''), not left to expire, then taken by the
      // replica that asked first: the one that was waiting, or the replacement if it was quicker.
      expect(after, 'the holders the watch saw').to.deep.equal([leader, '', next]);
      expect(
        (await operatorPods(cp, op)).some((p) => p.name === next && !p.deleting),
        `${next} is a live replica`,
      ).to.equal(true);
    } finally {
      watch.stop();
    }
    await applyBuckets(['after-handover']);
    await readyBucket('after-handover');
    await kubectlOk(cp, ['-n', op.namespace, 'rollout', 'status', `deployment/${op.name}`, '--timeout=120s']);
  });

  it('rolls out under load with no reconcile missed and no bucket made twice', async function () {
    this.timeout(400_000);
    const first = Array.from({ length: 12 }, (_, i) => `load-a-${i}`);
    const second = Array.from({ length: 12 }, (_, i) => `load-b-${i}`);
    await applyBuckets(first);
    await kubectlOk(cp, ['-n', op.namespace, 'rollout', 'restart', `deployment/${op.name}`]);
    // While the replicas are replaced one by one: new buckets, and every first one resized.
    await applyBuckets(second);
    await applyBuckets(first, 15);
    await kubectlOk(cp, ['-n', op.namespace, 'rollout', 'status', `deployment/${op.name}`, '--timeout=240s']);
    const buckets = [
      ...(await Promise.all(first.map((n) => readyBucket(n, 180_000, 15)))),
      ...(await Promise.all(second.map((n) => readyBucket(n, 180_000, 10)))),
    ];

    const atProvider = await provider.buckets();
    const ids = buckets.map((b) => b.status?.id);
    expect(new Set(ids).size, 'one provider bucket per StorageBucket').to.equal(buckets.length);
    for (const b of buckets) {
      const matches = atProvider.filter((p) => p.tags?.['kubernetes-name'] === b.metadata.name && p.tags?.['kubernetes-namespace'] === NS);
      expect(
        matches.map((p) => p.id),
        `provider buckets of ${b.metadata.name}`,
      ).to.deep.equal([b.status?.id]);
      expect(matches[0]!.sizeGB, `${b.metadata.name} at the provider`).to.equal(b.spec.sizeGB);
    }
  });

  it('kubectl drain stops at the PodDisruptionBudget and leaves one replica serving', async function () {
    this.timeout(240_000);
    const drain = await cp.kubectl([
      'drain',
      node.name,
      '--pod-selector',
      op.selector,
      '--ignore-daemonsets',
      '--delete-emptydir-data',
      '--timeout=10s',
    ]);
    try {
      expect(drain.code, 'drain cannot finish').to.not.equal(0);
      expect(drain.stdout + drain.stderr).to.match(/disruption budget/);
      const serving = await readyPods();
      expect(serving, 'one replica kept').to.have.length(1);
      // The one left still works.
      await applyBuckets(['during-drain']);
      await readyBucket('during-drain');
    } finally {
      await kubectlOk(cp, ['uncordon', node.name]);
    }
    await kubectlOk(cp, ['-n', op.namespace, 'rollout', 'status', `deployment/${op.name}`, '--timeout=120s']);
    expect(await readyPods()).to.have.length(2);
  });

  it('follows its projected token as the kubelet swaps it in place, without a restart', async function () {
    this.timeout(180_000);
    const leaderName = await leaseHolder();
    const leader = (await readyPods()).find((p) => p.name === leaderName)!;
    const dir = await projectedTokenDir(node.kubeletRoot, leader.uid);
    const before = await unauthorizedCount(cp, op.namespace, leader.name);

    // A token the API server rejects: the next requests answer 401, so the operator is reading the file.
    await swapProjectedToken(dir, 'not-a-token');
    await eventually(async () => (await unauthorizedCount(cp, op.namespace, leader.name)) > before, {
      description: 'the operator to send the swapped-in token',
      timeoutMs: 30_000,
      intervalMs: 250,
    });
    // A new token for this Pod, as the kubelet would request it: the operator carries on with it.
    const fresh = (
      await kubectlOk(cp, [
        '-n',
        op.namespace,
        'create',
        'token',
        'bucketoperator-controller-manager',
        '--bound-object-kind=Pod',
        `--bound-object-name=${leader.name}`,
        `--bound-object-uid=${leader.uid}`,
        '--duration=1h',
      ])
    ).trim();
    await swapProjectedToken(dir, fresh);
    expect(await readProjectedToken(dir)).to.equal(fresh);
    await applyBuckets(['after-rotation']);
    await readyBucket('after-rotation');
    const now = (await operatorPods(cp, op)).find((p) => p.name === leader.name);
    expect(now?.restarts, 'restarts of the replica whose token was swapped').to.equal(0);
  });

  it('migrates storage to v2 with dist/v2-stored/ and keeps every bucket managed', async function () {
    this.timeout(300_000);
    await applyDistFolder(cp, 'v2-stored', 180, dist);
    for (const crd of ['storagebuckets', 'bucketproviderconfigs']) {
      await eventually(
        async () =>
          (await kubectlOk(cp, ['get', 'crd', `${crd}.storage.avalonhosting.example`, '-o', 'jsonpath={.status.storedVersions}'])).trim() ===
          '["v2"]',
        { description: `${crd} stored in v2 only`, timeoutMs: 120_000, intervalMs: 1000 },
      );
    }
    await kubectlOk(cp, ['-n', NS, 'patch', V1, 'before-v2', '--type=merge', '-p', '{"spec":{"sizeGB":30}}']);
    const resized = await readyBucket('before-v2', 90_000, 30);
    expect((await provider.buckets()).find((b) => b.id === resized.status?.id)?.sizeGB).to.equal(30);
  });
});
