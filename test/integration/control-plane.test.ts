import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ApiException, AppsV1Api, CoreV1Api, KubeConfig, RbacAuthorizationV1Api, type V1Deployment, type V1PodSpec } from '@kubernetes/client-node';
import { expect } from 'chai';
import { resolveBinaries, startControlPlane, type ControlPlane } from '../support/control-plane';
import { freshNamespace, sharedControlPlane } from './setup';
import { eventually } from '../support/eventually';

/** The HTTP status a client call ends with: 200 when it succeeds, the error code otherwise. */
async function statusOf(call: Promise<unknown>): Promise<number> {
  try {
    await call;
    return 200;
  } catch (err) {
    if (err instanceof ApiException) return err.code;
    throw err;
  }
}

function errorBody(err: unknown): string {
  return err instanceof ApiException ? String(err.body) : String(err);
}

const RESTRICTED = {
  'pod-security.kubernetes.io/enforce': 'restricted',
  'pod-security.kubernetes.io/enforce-version': 'latest',
};

function deployment(name: string, podSpec: V1PodSpec): V1Deployment {
  return {
    metadata: { name },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: podSpec },
    },
  };
}

const PAUSE_IMAGE = 'registry.k8s.io/pause:3.10';

const compliantPod: V1PodSpec = {
  securityContext: { runAsNonRoot: true, runAsUser: 65532, seccompProfile: { type: 'RuntimeDefault' } },
  containers: [
    {
      name: 'app',
      image: PAUSE_IMAGE,
      securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
    },
  ],
};

const nonCompliantPod: V1PodSpec = { containers: [{ name: 'app', image: PAUSE_IMAGE }] };

/** Processes whose command line mentions `path`, read from /proc (Linux only). */
function processesMentioning(path: string): { pid: number; argv: string[] }[] {
  const found: { pid: number; argv: string[] }[] = [];
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
      if (argv.some((arg) => arg.includes(path))) found.push({ pid: Number(pid), argv });
    } catch {
      // The process ended while the list was read.
    }
  }
  return found;
}

describe('local control plane (etcd, kube-apiserver, kube-controller-manager)', function () {
  let cp: ControlPlane;
  let core: CoreV1Api;

  before(async function () {
    this.timeout(180_000);
    cp = await sharedControlPlane();
    core = cp.kubeConfig().makeApiClient(CoreV1Api);
  });

  it('serves the API to the admin, through the client and through kubectl', async function () {
    expect(cp.server).to.match(/^https:\/\/127\.0\.0\.1:\d+$/);
    const ns = await freshNamespace(cp, 'admin');
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'hello' }, data: { greeting: 'hi' } } });

    const read = await core.readNamespacedConfigMap({ namespace: ns, name: 'hello' });
    expect(read.data).to.deep.equal({ greeting: 'hi' });

    const viaKubectl = await cp.kubectl(['get', 'configmap', 'hello', '-n', ns, '-o', 'jsonpath={.data.greeting}']);
    expect(viaKubectl, viaKubectl.stderr).to.include({ code: 0, stdout: 'hi' });
  });

  it('authenticates a ServiceAccount token and checks it with RBAC', async function () {
    const ns = await freshNamespace(cp, 'rbac');
    await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: 'reader' } } });
    // Inline: the client-node KubeConfig below reads no token file.
    const kubeconfig = await cp.serviceAccountKubeconfig(ns, 'reader', { inlineToken: true });

    const whoami = await cp.kubectl(['auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}'], { kubeconfig });
    expect(whoami, whoami.stderr).to.include({ code: 0, stdout: `system:serviceaccount:${ns}:reader` });

    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfig);
    const asReader = kc.makeApiClient(CoreV1Api);
    expect(await statusOf(asReader.listNamespacedSecret({ namespace: ns }))).to.equal(403);

    const rbac = cp.kubeConfig().makeApiClient(RbacAuthorizationV1Api);
    await rbac.createNamespacedRole({
      namespace: ns,
      body: { metadata: { name: 'secret-reader' }, rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['list'] }] },
    });
    await rbac.createNamespacedRoleBinding({
      namespace: ns,
      body: {
        metadata: { name: 'reader-reads-secrets' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'secret-reader' },
        subjects: [{ kind: 'ServiceAccount', name: 'reader', namespace: ns }],
      },
    });

    // The authorizer reads RBAC objects from an informer, so the binding applies shortly after.
    await eventually(async () => (await statusOf(asReader.listNamespacedSecret({ namespace: ns }))) === 200, {
      description: `ServiceAccount ${ns}/reader allowed to list secrets`,
      timeoutMs: 30_000,
    });
    expect(await statusOf(asReader.listNamespacedSecret({ namespace: 'default' }))).to.equal(403);
  });

  it('garbage-collects an object whose owner is deleted', async function () {
    const ns = await freshNamespace(cp, 'gc');
    const owner = await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'owner' } } });
    const uid = owner.metadata?.uid;
    expect(uid).to.be.a('string');
    await core.createNamespacedSecret({
      namespace: ns,
      body: {
        metadata: { name: 'owned', ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: uid ?? '' }] },
        stringData: { key: 'value' },
      },
    });

    await core.deleteNamespacedConfigMap({ namespace: ns, name: 'owner' });

    await eventually(async () => (await statusOf(core.readNamespacedSecret({ namespace: ns, name: 'owned' }))) === 404, {
      description: `garbage collection of secret ${ns}/owned`,
      timeoutMs: 60_000,
      intervalMs: 250,
    });
  });

  describe('Deployments under Pod Security "restricted"', function () {
    let ns: string;
    let apps: AppsV1Api;

    before(async function () {
      ns = await freshNamespace(cp, 'psa', { labels: RESTRICTED });
      apps = cp.kubeConfig().makeApiClient(AppsV1Api);
    });

    it('get a Pod from the ReplicaSet when the pod template complies', async function () {
      await apps.createNamespacedDeployment({ namespace: ns, body: deployment('good', compliantPod) });

      const pods = await eventually(
        async () => {
          const list = await core.listNamespacedPod({ namespace: ns, labelSelector: 'app=good' });
          return list.items.length > 0 ? list.items : undefined;
        },
        { description: `a Pod of Deployment ${ns}/good`, timeoutMs: 60_000, intervalMs: 250 },
      );
      expect(pods).to.have.length(1);
      const ownerKinds = pods[0]!.metadata?.ownerReferences?.map((ref) => ref.kind);
      expect(ownerKinds).to.deep.equal(['ReplicaSet']);
      // No kubelet or scheduler runs, so admitted Pods stay Pending.
      expect(pods[0]!.status?.phase).to.equal('Pending');
    });

    it('get no Pod, and a FailedCreate on the ReplicaSet, when the pod template does not comply', async function () {
      await apps.createNamespacedDeployment({ namespace: ns, body: deployment('bad', nonCompliantPod) });

      const failure = await eventually(
        async () => {
          const sets = await apps.listNamespacedReplicaSet({ namespace: ns, labelSelector: 'app=bad' });
          return sets.items.flatMap((rs) => rs.status?.conditions ?? []).find((c) => c.type === 'ReplicaFailure' && c.reason === 'FailedCreate');
        },
        { description: `a FailedCreate condition on the ReplicaSet of ${ns}/bad`, timeoutMs: 60_000, intervalMs: 250 },
      );
      expect(failure.message).to.match(/violates PodSecurity "restricted:latest"/);
      const pods = await core.listNamespacedPod({ namespace: ns, labelSelector: 'app=bad' });
      expect(pods.items).to.have.length(0);
    });

    it('refuse the same non-compliant Pod when created directly', async function () {
      let refusal: unknown;
      try {
        await core.createNamespacedPod({ namespace: ns, body: { metadata: { name: 'direct' }, spec: nonCompliantPod } });
      } catch (err) {
        refusal = err;
      }
      expect(refusal).to.be.instanceOf(ApiException);
      expect((refusal as ApiException<unknown>).code).to.equal(403);
      expect(errorBody(refusal)).to.include('violates PodSecurity');
    });
  });

  // Last, and in a suite of its own: mocha runs a suite's own tests before its nested suites.
  describe('kube-apiserver restart', function () {
    it('serves again on the same address, and the controllers reconnect', async function () {
      this.timeout(180_000);
      const server = cp.server;
      await cp.restartApiServer();
      expect(cp.server).to.equal(server);

      const ns = await freshNamespace(cp, 'restart');
      await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'after-restart' } } });
      const read = await core.readNamespacedConfigMap({ namespace: ns, name: 'after-restart' });
      expect(read.metadata?.name).to.equal('after-restart');
      // The default ServiceAccount of a new namespace comes from kube-controller-manager, which
      // had to re-establish its watches against the restarted apiserver.
      await eventually(() => core.readNamespacedServiceAccount({ namespace: ns, name: 'default' }), {
        description: `the default ServiceAccount of ${ns} after the restart`,
        timeoutMs: 60_000,
        intervalMs: 250,
      });
    });
  });
});

describe('control plane lifecycle', function () {
  this.timeout(180_000);

  it('stops every process and removes its files, and stop() can be called again', async function () {
    const cp = await startControlPlane();
    const workDir = dirname(cp.kubeconfigPath);
    const running = processesMentioning(workDir);
    for (const binary of [cp.binaries.etcd, cp.binaries.kubeApiserver, cp.binaries.kubeControllerManager]) {
      expect(
        running.some((p) => p.argv[0] === binary),
        `a running ${binary}`,
      ).to.equal(true);
    }

    await cp.stop();
    await cp.stop();

    expect(processesMentioning(workDir)).to.deep.equal([]);
    expect(existsSync(workDir)).to.equal(false);
  });

  it('finds the binaries in KUBEBUILDER_ASSETS, and says how to build them when they are missing', async function () {
    const built = await resolveBinaries();
    const assets = dirname(built.kubeApiserver);
    expect(await resolveBinaries({ KUBEBUILDER_ASSETS: assets })).to.deep.equal(built);

    const emptyCache = mkdtempSync(join(tmpdir(), 'bucketoperator-empty-cache-'));
    try {
      let failure: unknown;
      try {
        await resolveBinaries({ BUCKETOPERATOR_CACHE: emptyCache });
      } catch (err) {
        failure = err;
      }
      expect(failure).to.be.instanceOf(Error);
      expect((failure as Error).message).to.include('npm run build:control-plane');
    } finally {
      rmSync(emptyCache, { recursive: true, force: true });
    }
  });

  it('fails to start with the failing component and its last log lines in the error', async function () {
    let failure: unknown;
    try {
      await startControlPlane({ apiServerExtraArgs: ['--no-such-flag'] });
    } catch (err) {
      failure = err;
    }
    expect(failure).to.be.instanceOf(Error);
    const message = (failure as Error).message;
    expect(message).to.include('kube-apiserver exited with code');
    expect(message).to.include('unknown flag: --no-such-flag');
  });
});
