/**
 * The operator and the mock provider as Pods on the real node: their OCI images built by
 * `npm run build:oci` (the archives the node imports), the provider deployed behind a Service
 * as a cloud endpoint would be, and dist/ folders applied unchanged, each step waited for with
 * `kubectl rollout status` as the README tells users to.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { REPO_ROOT } from '../../infra/generate';
import { CREDENTIALS_SECRET_LABEL, CREDENTIALS_SECRET_TYPE } from '../../operator/api/v1/well-known';
import type { ControlPlane } from './control-plane';
import { deploymentIn } from './dist';
import { eventually } from './eventually';
import { kubectlOk } from './kube';
import type { RunningNode } from './node';
import { mustRun } from './node/host';
import { installDist } from './previous-release';

/** The image archives `npm run build:oci -- --image all` wrote. */
export interface ImageArchives {
  readonly provider: string;
  readonly operator: string;
}

/** dist/ as this checkout renders it. */
export const DIST = join(REPO_ROOT, 'dist');

/** `npm run build:oci` with `args`: the archive paths it printed (stdout, one a line); progress goes to stderr. */
function buildOci(args: readonly string[]): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const child = spawn('npm', ['run', '--silent', 'build:oci', '--', ...args], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0 && stdout.trim()) resolve(stdout.trim().split('\n'));
      else reject(new Error(`npm run build:oci -- ${args.join(' ')} failed (exit ${code}):\n${stderr.slice(-4000)}`));
    });
  });
}

/**
 * The provider's and the operator's image archives. The operator is this checkout's, or with
 * `release` an earlier release's build (its /app and the name its dist/ runs) on this
 * checkout's base image.
 */
export async function buildImages(release?: { readonly app: string; readonly dist: string }): Promise<ImageArchives> {
  if (!release) {
    const [provider, operator] = await buildOci(['--image', 'all']);
    return { provider: provider!, operator: operator! };
  }
  const [provider] = await buildOci(['--image', 'provider']);
  const [operator] = await buildOci(['--app', release.app, '--dist', release.dist]);
  return { provider: provider!, operator: operator! };
}

/** The operator as a dist/ folder deploys it. */
export interface OperatorDeployment {
  readonly namespace: string;
  readonly name: string;
  /** The labels its Pods are selected by. */
  readonly selector: string;
}

/** The operator's Deployment in a dist/ (or one of its dist/v2* folders). */
export function operatorDeployment(folder = '', dist = DIST): OperatorDeployment {
  const d = deploymentIn(join(dist, folder)) as {
    metadata: { name: string; namespace?: string };
    spec?: { selector?: { matchLabels?: Record<string, string> } };
  };
  const labels = d.spec?.selector?.matchLabels ?? {};
  return {
    namespace: d.metadata.namespace ?? 'default',
    name: d.metadata.name,
    selector: Object.entries(labels)
      .map(([k, v]) => `${k}=${v}`)
      .join(','),
  };
}

/**
 * `kubectl apply -f dist/<folder>/` and `kubectl rollout status` of the operator, as the README's
 * steps say. The CRDs go first and are waited for, as `kubectl apply -f` of a folder may create
 * custom resources before their CRD is established.
 */
export async function applyDistFolder(cp: ControlPlane, folder = '', rolloutTimeoutSeconds = 180, dist = DIST): Promise<void> {
  await installDist(cp, join(dist, folder));
  const op = operatorDeployment(folder, dist);
  await kubectlOk(cp, ['-n', op.namespace, 'rollout', 'status', `deployment/${op.name}`, `--timeout=${rolloutTimeoutSeconds}s`]);
}

/** A bucket as the mock provider's admin view lists it. */
export interface ClusterProviderBucket {
  readonly id: string;
  readonly name?: string;
  readonly sizeGB: number;
  readonly account?: string;
  readonly tags?: Record<string, string>;
}

/** The mock provider running as a Pod behind a Service. */
export interface ClusterProvider {
  /** What a BucketProviderConfig names: the Service's DNS name, resolved by cluster DNS. */
  readonly endpoint: string;
  /** The account's API key (what the tenant's credential Secret holds). */
  readonly apiKey: string;
  /** Every bucket of every account (the admin view), through the Service's ClusterIP from the host. */
  buckets(): Promise<ClusterProviderBucket[]>;
  /** Request counts by `METHOD /route STATUS`. */
  stats(): Promise<Record<string, number>>;
}

/** Options of {@link deployProvider}. */
export interface DeployProviderOptions {
  readonly namespace?: string;
  readonly account?: string;
  /** Provisioning -> Active. @default 2000 */
  readonly activationDelayMs?: number;
}

/** The tag of the provider image `npm run build:oci` writes (package.json's version). */
function providerImage(): string {
  const version = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  return `bucketoperator-provider:${version}`;
}

/** Deploys the mock provider (image imported beforehand) behind a ClusterIP Service and waits for it. */
export async function deployProvider(cp: ControlPlane, opts: DeployProviderOptions = {}): Promise<ClusterProvider> {
  const ns = opts.namespace ?? 'bucket-provider';
  const account = opts.account ?? 'team-a';
  const apiKey = `key-${randomBytes(12).toString('hex')}`;
  const adminToken = `adm-${randomBytes(12).toString('hex')}`;
  const labels = { 'app.kubernetes.io/name': 'bucket-provider' };
  const objects = [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } },
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'provider', namespace: ns },
      stringData: { keys: `${account}:${apiKey}\n`, admin: adminToken },
    },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'provider', namespace: ns },
      spec: {
        replicas: 1,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            securityContext: { runAsNonRoot: true, runAsUser: 65532, seccompProfile: { type: 'RuntimeDefault' } },
            containers: [
              {
                name: 'provider',
                image: providerImage(),
                imagePullPolicy: 'Never',
                args: [
                  '--host',
                  '0.0.0.0',
                  '--port',
                  '8090',
                  '--api-keys-file',
                  '/keys/keys',
                  '--activation-delay-ms',
                  String(opts.activationDelayMs ?? 2000),
                ],
                env: [{ name: 'PROVIDER_ADMIN_TOKEN', valueFrom: { secretKeyRef: { name: 'provider', key: 'admin' } } }],
                ports: [{ name: 'http', containerPort: 8090 }],
                readinessProbe: { httpGet: { path: '/healthz', port: 'http' }, periodSeconds: 1 },
                securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
                volumeMounts: [{ name: 'keys', mountPath: '/keys', readOnly: true }],
              },
            ],
            volumes: [{ name: 'keys', secret: { secretName: 'provider', items: [{ key: 'keys', path: 'keys' }] } }],
          },
        },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'provider', namespace: ns },
      spec: { selector: labels, ports: [{ port: 80, targetPort: 'http' }] },
    },
  ];
  await kubectlOk(cp, ['apply', '-f', '-'], objects.map((o) => stringify(o)).join('---\n'));
  await kubectlOk(cp, ['-n', ns, 'rollout', 'status', 'deployment/provider', '--timeout=90s']);
  const clusterIp = (await kubectlOk(cp, ['-n', ns, 'get', 'service', 'provider', '-o', 'jsonpath={.spec.clusterIP}'])).trim();
  const hostUrl = `http://${clusterIp}`;
  const admin = async (path: string): Promise<unknown> => {
    const res = await fetch(`${hostUrl}${path}`, { headers: { authorization: `Bearer ${adminToken}` }, signal: AbortSignal.timeout(10_000) });
    if (!res.ok) throw new Error(`provider GET ${path}: ${res.status} ${await res.text()}`);
    return res.json();
  };
  // kube-proxy programs the Service a moment after its endpoints are ready.
  await eventually(async () => (await fetch(`${hostUrl}/healthz`, { signal: AbortSignal.timeout(2000) }).catch(() => undefined))?.ok, {
    description: `the provider Service at ${hostUrl} to answer from the host`,
    timeoutMs: 30_000,
    intervalMs: 250,
  });
  return {
    endpoint: `http://provider.${ns}.svc`,
    apiKey,
    async buckets() {
      const out: ClusterProviderBucket[] = [];
      let cont: string | undefined;
      do {
        const page = (await admin(`/admin/buckets?limit=1000${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`)) as {
          items: ClusterProviderBucket[];
          continue?: string;
        };
        out.push(...page.items);
        cont = page.continue;
      } while (cont);
      return out;
    },
    async stats() {
      return ((await admin('/admin/stats')) as { requests: Record<string, number> }).requests;
    },
  };
}

/**
 * A tenant namespace with its labelled credential Secret `<config>-key` and a
 * BucketProviderConfig `config` for the provider.
 */
export async function tenantNamespace(cp: ControlPlane, ns: string, provider: ClusterProvider, config = 'default'): Promise<void> {
  const secret = `${config}-key`;
  const objects = [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } },
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: secret, namespace: ns, labels: { [CREDENTIALS_SECRET_LABEL]: CREDENTIALS_SECRET_TYPE } },
      stringData: { apiKey: provider.apiKey },
    },
    {
      apiVersion: 'storage.avalonhosting.example/v1',
      kind: 'BucketProviderConfig',
      metadata: { name: config, namespace: ns },
      spec: { endpoint: provider.endpoint, insecure: true, secretRef: { name: secret, key: 'apiKey' } },
    },
  ];
  await kubectlOk(cp, ['apply', '-f', '-'], objects.map((o) => stringify(o)).join('---\n'));
}

/** A Pod of the operator as the API server reports it. */
export interface OperatorPod {
  readonly name: string;
  readonly uid: string;
  readonly ready: boolean;
  readonly phase: string;
  readonly deleting: boolean;
  readonly restarts: number;
  /** containerd's id of its one container (without the `containerd://` prefix). */
  readonly containerId?: string;
}

/** The operator's Pods, by its Deployment's selector. */
export async function operatorPods(cp: ControlPlane, op: OperatorDeployment): Promise<OperatorPod[]> {
  const list = JSON.parse(await kubectlOk(cp, ['-n', op.namespace, 'get', 'pods', '-l', op.selector, '-o', 'json'])) as {
    items: Array<{
      metadata: { name: string; uid: string; deletionTimestamp?: string };
      status?: {
        phase?: string;
        conditions?: Array<{ type: string; status: string }>;
        containerStatuses?: Array<{ restartCount?: number; containerID?: string }>;
      };
    }>;
  };
  return list.items.map((p) => ({
    name: p.metadata.name,
    uid: p.metadata.uid,
    phase: p.status?.phase ?? '',
    ready: p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false,
    deleting: p.metadata.deletionTimestamp !== undefined,
    restarts: (p.status?.containerStatuses ?? []).reduce((n, c) => n + (c.restartCount ?? 0), 0),
    containerId: p.status?.containerStatuses?.[0]?.containerID?.replace(/^containerd:\/\//, ''),
  }));
}

/** The host PID of a container's main process, from containerd's task list. */
export async function containerPid(node: RunningNode, containerId: string): Promise<number> {
  const out = await mustRun(node.binaries.ctr, ['--address', node.containerdAddress, '-n', 'k8s.io', 'tasks', 'ls']);
  const line = out.split('\n').find((l) => l.startsWith(`${containerId} `));
  const pid = Number(line?.trim().split(/\s+/)[1]);
  if (!Number.isInteger(pid) || pid <= 0) throw new Error(`no running task for container ${containerId} in:\n${out}`);
  return pid;
}
