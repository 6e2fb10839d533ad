/**
 * A real node beside its own control plane: containerd and runc, the CNI bridge, kubelet,
 * kube-proxy, kube-scheduler and CoreDNS. Pods run from a locally written busybox image; one
 * serves HTTP behind a Service, another reaches it by DNS name, reaches the API server through
 * the `kubernetes` Service, and cannot reach anything off the machine. stop() must leave links,
 * rules, sysctls, mounts and cgroups as they were before the start. Needs root and
 * `npm run build:node`.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { stringify } from 'yaml';
import { writeOciArchive } from '../../scripts/oci/archive';
import { startControlPlane, type ControlPlane } from '../support/control-plane';
import { eventually } from '../support/eventually';
import { controlPlaneOptionsForNode, resolveNodeBinaries, startNode, type RunningNode } from '../support/node';
import { busyboxImageSpec, NONROOT } from '../support/node/images';
import { diffMachine, snapshotMachine, type MachineState } from '../support/node/machine-state';

const IMAGE = 'bucketoperator.local/busybox:node-test';
const BODY = 'served by a Pod on the local node\n';
const NAMESPACE = 'node-test';
/** TEST-NET-3 (RFC 5737): off this machine, reached through the default route, and never anyone's host. */
const OUTSIDE = '203.0.113.1';

const restricted = {
  securityContext: { runAsNonRoot: true, runAsUser: NONROOT, runAsGroup: NONROOT, seccompProfile: { type: 'RuntimeDefault' } },
  containerSecurity: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
};

function manifests(): string {
  const container = (name: string, args: string[]): Record<string, unknown> => ({
    name,
    image: IMAGE,
    imagePullPolicy: 'Never',
    args: ['-c', args.join(' ')],
    securityContext: restricted.containerSecurity,
  });
  const objects = [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace: NAMESPACE },
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: 'web' } },
        template: {
          metadata: { labels: { app: 'web' } },
          spec: {
            securityContext: restricted.securityContext,
            containers: [
              {
                ...container('httpd', ['exec', 'httpd', '-f', '-vv', '-p', '8080', '-h', '/www']),
                ports: [{ containerPort: 8080 }],
                readinessProbe: { httpGet: { path: '/', port: 8080 }, periodSeconds: 1 },
              },
            ],
          },
        },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web', namespace: NAMESPACE },
      spec: { selector: { app: 'web' }, ports: [{ port: 80, targetPort: 8080 }] },
    },
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'client', namespace: NAMESPACE },
      spec: {
        securityContext: restricted.securityContext,
        // kubectl keeps a cache under $HOME; the root filesystem is read-only.
        containers: [
          {
            ...container('client', ['exec', 'sleep', '3600']),
            env: [{ name: 'HOME', value: '/tmp' }],
            volumeMounts: [{ name: 'tmp', mountPath: '/tmp' }],
          },
        ],
        volumes: [{ name: 'tmp', emptyDir: {} }],
        terminationGracePeriodSeconds: 1,
      },
    },
  ];
  return objects.map((o) => stringify(o)).join('---\n');
}

describe('a real node beside the control plane', function () {
  let initial: MachineState;
  let nft: string;
  let cp: ControlPlane;
  let node: RunningNode;
  let scratch: string;

  const kubectl = async (args: string[]): Promise<string> => {
    const res = await cp.kubectl(args);
    if (res.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed (${res.code}): ${res.stderr.trim()}`);
    return res.stdout;
  };
  const exec = (pod: string, command: string[]): Promise<{ stdout: string; stderr: string; code: number }> =>
    cp.kubectl(['-n', NAMESPACE, 'exec', pod, '--', ...command]);

  before(async function () {
    this.timeout(240_000);
    const binaries = await resolveNodeBinaries();
    nft = binaries.nft;
    initial = await snapshotMachine(nft);
    scratch = await mkdtemp(join(tmpdir(), 'bucketoperator-node-test-'));
    cp = await startControlPlane(controlPlaneOptionsForNode());
    node = await startNode(cp);
    const busybox = await readFile(binaries.busybox);
    const applets = execFileSync(binaries.busybox, ['--list'], { encoding: 'utf8' }).split('\n').filter(Boolean);
    const archive = join(scratch, 'test-image.tar');
    const kubectlBinary = await readFile(cp.binaries.kubectl);
    await writeOciArchive(
      busyboxImageSpec(IMAGE, busybox, applets, { body: BODY, programs: [{ path: '/bin/kubectl', content: kubectlBinary }] }),
      archive,
    );
    await node.importImage(archive);
    const applied = await cp.kubectl(['apply', '-f', '-'], { input: manifests() });
    if (applied.code !== 0) throw new Error(`cannot apply the test objects: ${applied.stderr}`);
    await kubectl(['-n', NAMESPACE, 'wait', '--for=condition=Available', '--timeout=60s', 'deployment/web']);
    await kubectl(['-n', NAMESPACE, 'wait', '--for=condition=Ready', '--timeout=60s', 'pod/client']);
  });

  after(async function () {
    this.timeout(120_000);
    // Safety net for a failed run; the last test stops both and checks the machine.
    await node?.stop();
    await cp?.stop();
    if (scratch) await rm(scratch, { recursive: true, force: true });
  });

  it('registers a Ready node that runs Pods from a locally imported image', async function () {
    this.timeout(30_000);
    const status = JSON.parse(await kubectl(['get', 'node', node.name, '-o', 'json'])) as {
      status: { conditions: { type: string; status: string }[]; nodeInfo: { containerRuntimeVersion: string; kubeletVersion: string } };
    };
    expect(status.status.conditions.find((c) => c.type === 'Ready')?.status).to.equal('True');
    expect(status.status.nodeInfo.containerRuntimeVersion).to.match(/^containerd:\/\/2\./);
    expect(status.status.nodeInfo.kubeletVersion).to.equal(
      (await kubectl(['version', '-o', 'json']).then((v) => JSON.parse(v) as { serverVersion: { gitVersion: string } })).serverVersion.gitVersion,
    );
    const pods = JSON.parse(await kubectl(['-n', NAMESPACE, 'get', 'pods', '-o', 'json'])) as {
      items: { spec: { nodeName?: string }; status: { phase: string } }[];
    };
    expect(pods.items.map((p) => [p.spec.nodeName, p.status.phase])).to.deep.equal([
      [node.name, 'Running'],
      [node.name, 'Running'],
    ]);
  });

  it('lets a Pod reach a Service by its DNS name', async function () {
    this.timeout(60_000);
    const url = `http://web.${NAMESPACE}.svc.${node.network.clusterDomain}/`;
    const body = await eventually(
      async () => {
        // busybox 1.35's wget crashes resolving names with -q or -T, so: plain, under timeout.
        const res = await exec('client', ['timeout', '5', 'wget', '-O-', url]);
        return res.code === 0 ? res.stdout : undefined;
      },
      { description: `the client Pod to fetch ${url}`, timeoutMs: 45_000, intervalMs: 500 },
    );
    expect(body).to.equal(BODY);
  });

  it('lets a Pod reach the API server through the kubernetes Service', async function () {
    this.timeout(30_000);
    const env = await exec('client', ['sh', '-c', 'echo "$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT"']);
    expect(env.stdout.trim()).to.equal(`${node.network.kubernetesServiceIp}:443`);
    // By the Service's DNS name, verified with the CA and authenticated with the token the Pod
    // has mounted, as in-cluster clients do.
    const inCluster = (args: string): string[] => [
      'sh',
      '-c',
      `sa=/var/run/secrets/kubernetes.io/serviceaccount; kubectl --server=https://kubernetes.default.svc --certificate-authority=$sa/ca.crt --token="$(cat $sa/token)" --request-timeout=10s ${args}`,
    ];
    const readyz = await exec('client', inCluster('get --raw /readyz'));
    expect(readyz.code, readyz.stderr).to.equal(0);
    expect(readyz.stdout.trim()).to.equal('ok');
    // Authenticated as the ServiceAccount, and RBAC-checked: it may not list Secrets.
    const denied = await exec('client', inCluster(`-n ${NAMESPACE} get secrets`));
    expect(denied.stderr).to.include(`system:serviceaccount:${NAMESPACE}:default`).and.to.include('forbidden');
  });

  it('serves kubectl logs and kubectl exec through kubelet', async function () {
    this.timeout(30_000);
    const logs = await kubectl(['-n', NAMESPACE, 'logs', 'deployment/web']);
    expect(logs).to.include('url:/');
    const hostname = await exec('client', ['hostname']);
    expect(hostname.stdout.trim()).to.equal('client');
    const stdin = await cp.kubectl(['-n', NAMESPACE, 'exec', '-i', 'client', '--', 'cat'], { input: 'through stdin\n' });
    expect(stdin.stdout).to.equal('through stdin\n');
  });

  it('drops a Pod connection to an address outside the machine', async function () {
    this.timeout(30_000);
    const dropsBefore = await node.egressDrops();
    const res = await exec('client', ['nc', '-w', '2', OUTSIDE, '53']);
    expect(res.code, 'the connection must fail').to.not.equal(0);
    expect(await node.egressDrops(), 'the egress guard counts the dropped packets').to.be.greaterThan(dropsBefore);
  });

  it('refuses a second node on the machine while this one runs', async function () {
    this.timeout(30_000);
    const refused = await startNode(cp).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(refused).to.be.instanceOf(Error).with.property('message').that.includes('another local node is running');
  });

  it('leaves links, rules, sysctls, mounts and cgroups as they were after stop()', async function () {
    this.timeout(120_000);
    await node.stop();
    await cp.stop();
    expect(diffMachine(initial, await snapshotMachine(nft))).to.deep.equal([]);
  });
});
