/**
 * A real, local Kubernetes control plane for tests: etcd, kube-apiserver and
 * kube-controller-manager built by build.sh, started on free ports with a throw-away PKI.
 * Like controller-runtime's envtest, plus the controller manager, so garbage collection,
 * namespace deletion, ServiceAccount tokens and Deployments -> ReplicaSets -> Pods
 * (checked by Pod Security admission) behave as in a cluster. There is no kubelet or
 * scheduler: Pods stay Pending, unless the control plane is started for a node
 * (`StartControlPlaneOptions.node`) and test/support/node starts one beside it.
 */
import { spawn } from 'node:child_process';
import { constants, rmSync } from 'node:fs';
import { access, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { loadKubeconfig } from '../../../operator/runtime/kubeconfig';
import type { RestConfig } from '../../../operator/runtime/rest-config';
import { resolveBinaries, type ControlPlaneBinaries } from './binaries';
import { createPki, FRONT_PROXY_CLIENT_CN, issueCertificate, type CertificateRequest, type Pki } from './certs';
import { writeKubeconfig } from './kubeconfig';
import { Component, startWatchdog } from './process';
import { eventually } from '../eventually';

export { cacheDirFor, matrixVersions, minorOf, parseMatrix, pinnedVersions, resolveBinaries } from './binaries';
export type { ControlPlaneBinaries, ControlPlaneVersions, MatrixVersion } from './binaries';
export type { CertificateRequest } from './certs';
export { writeKubeconfig } from './kubeconfig';

/**
 * Settings that let a node (test/support/node) join, so that its Pods reach the API server
 * through the `kubernetes` Service as in a real cluster.
 */
export interface NodeFacingOptions {
  /**
   * The address Pods reach the API server at (the node's bridge gateway). It is advertised, so
   * the endpoint reconciler publishes it behind the `kubernetes` Service, and the API server
   * listens on all addresses, since the bridge does not exist yet when it starts (the node's
   * egress guard closes the port to every other interface).
   */
  readonly advertiseAddress: string;
  /** The Service ClusterIP range (`--service-cluster-ip-range`). */
  readonly serviceClusterIpRange: string;
  /** The `kubernetes` Service's ClusterIP (the first address of the range), for the serving certificate. */
  readonly kubernetesServiceIp: string;
}

/** Options of {@link startControlPlane}. */
export interface StartControlPlaneOptions {
  /** Appended to the kube-apiserver command line; a repeated flag overrides the default. */
  apiServerExtraArgs?: string[];
  /**
   * Where component logs go. Kept after stop() when given.
   * @default a `logs` directory inside the control plane's temporary directory, removed by stop()
   */
  logDir?: string;
  /**
   * Serve a node: advertise an address Pods reach, publish it as the `kubernetes` Service's
   * endpoint, authorize kubelets with the Node authorizer and NodeRestriction, give the API
   * server a client certificate for kubelets (logs, exec), and run the controllers Services
   * need (EndpointSlices). Without it the control plane serves only 127.0.0.1 and Pods stay
   * Pending.
   * @default undefined
   */
  node?: NodeFacingOptions;
  /**
   * Run this Kubernetes version (one of matrix.env, built with `npm run build:control-plane --
   * --k8s <version>`) instead of the pinned one; for the support matrix's smoke suite.
   * @default the version pinned in versions.env (or KUBEBUILDER_ASSETS)
   */
  kubernetesVersion?: string;
}

/** The outcome of a kubectl run; a non-zero `code` is reported, not thrown. */
export interface KubectlResult {
  stdout: string;
  stderr: string;
  code: number;
}

/** Options of {@link ControlPlane.kubectl}. */
export interface KubectlOptions {
  /** Written to kubectl's stdin (for `apply -f -`). */
  input?: string;
  /** @default the admin kubeconfig */
  kubeconfig?: string;
}

/** A running local control plane. */
export interface ControlPlane {
  /** Admin kubeconfig file (client certificate CN=admin, O=system:masters). */
  readonly kubeconfigPath: string;
  /** The apiserver URL, `https://127.0.0.1:<port>`. */
  readonly server: string;
  /** etcd's client URL, `http://127.0.0.1:<port>`, to read what is stored (its v3 JSON gateway). */
  readonly etcdUrl: string;
  /** The programs this control plane runs, kubectl included. */
  readonly binaries: ControlPlaneBinaries;
  /** Directory with `etcd.log`, `kube-apiserver.log` and `kube-controller-manager.log`. */
  readonly logDir: string;
  /** The CA every component trusts (PEM file). */
  readonly caCertFile: string;
  /** The node-facing settings it was started with, if any. */
  readonly nodeFacing: NodeFacingOptions | undefined;
  /** Issues a certificate signed by the cluster CA into `dir` (for node components). */
  issueCertificate(dir: string, request: CertificateRequest): Promise<{ certFile: string; keyFile: string }>;
  /** A fresh admin KubeConfig for @kubernetes/client-node. */
  kubeConfig(): KubeConfig;
  /** The admin kubeconfig as the operator's runtime loads it (for `KubeClient`, `startOperator`). */
  restConfig(): RestConfig;
  /** Runs the built kubectl against this control plane (as admin unless `opts.kubeconfig`). */
  kubectl(args: string[], opts?: KubectlOptions): Promise<KubectlResult>;
  /**
   * Writes a kubeconfig that authenticates as ServiceAccount `namespace/name` with a token
   * from the TokenRequest API, so requests made with it are checked by RBAC. The
   * ServiceAccount must exist. Returns the file path. The token is in a file of its own
   * (`tokenFile`), as a Pod has it mounted, unless `inlineToken`: @kubernetes/client-node's
   * KubeConfig reads only an inline `token` (it looks for `token-file`, a key kubectl and
   * client-go do not know).
   */
  serviceAccountKubeconfig(namespace: string, name: string, opts?: { expirationSeconds?: number; inlineToken?: boolean }): Promise<string>;
  /** Stops kube-apiserver alone and starts it again on the same port; resolves once it is ready. */
  restartApiServer(): Promise<void>;
  /** Stops every process and removes the temporary files; safe to call more than once. */
  stop(): Promise<void>;
}

const SERVICE_ACCOUNT_ISSUER = 'https://kubernetes.default.svc.cluster.local';

/**
 * The controllers a BucketOperator test needs, and nothing that would wait for nodes:
 * garbage collection of owned objects, namespace deletion, the per-namespace `default`
 * ServiceAccount and `kube-root-ca.crt` ConfigMap, legacy token Secrets,
 * Deployment -> ReplicaSet -> Pod, and StorageVersionMigrations.
 */
const CONTROLLERS = [
  // Canonical names; kube-controller-manager also accepts the old aliases (garbagecollector, ...).
  'garbage-collector-controller',
  'namespace-controller',
  'serviceaccount-controller',
  'serviceaccount-token-controller',
  'root-ca-certificate-publisher-controller',
  'deployment-controller',
  'replicaset-controller',
  // StorageVersionMigrations (issue 19's storage flip); needs the garbage collector's monitors.
  // The matrix's 1.35 and 1.36 skip it: its feature gate is off by default there.
  'storage-version-migrator-controller',
];

/**
 * Added with a node: Services get EndpointSlices (what kube-proxy and CoreDNS read) and
 * Endpoints, the node lifecycle controller lifts the `not-ready` taint kubelet registers the
 * Node with once it is Ready (nothing is scheduled before), and the disruption controller
 * keeps PodDisruptionBudgets' status, without which every eviction (`kubectl drain`) is refused.
 */
const NODE_CONTROLLERS = ['endpointslice-controller', 'endpoints-controller', 'node-lifecycle-controller', 'disruption-controller'];

/** kube-apiserver flags added when a node joins; each overrides an earlier one of the same name. */
function nodeFacingApiServerArgs(node: NodeFacingOptions, pki: Pki): string[] {
  if (!pki.kubeletClientCert || !pki.kubeletClientKey) throw new Error('a node-facing control plane needs the kubelet client certificate');
  return [
    '--bind-address=0.0.0.0',
    `--advertise-address=${node.advertiseAddress}`,
    `--service-cluster-ip-range=${node.serviceClusterIpRange}`,
    // The default lease reconciler publishes the advertised address as the endpoint of the
    // `kubernetes` Service.
    '--endpoint-reconciler-type=lease',
    '--enable-admission-plugins=NodeRestriction',
    `--kubelet-client-certificate=${pki.kubeletClientCert}`,
    `--kubelet-client-key=${pki.kubeletClientKey}`,
    `--kubelet-certificate-authority=${pki.caCert}`,
    '--kubelet-preferred-address-types=InternalIP',
  ];
}

const START_TIMEOUT_MS = 90_000;

async function freePorts(count: number): Promise<number[]> {
  // All listeners stay open until every port is known, so the same port is never handed out twice.
  const servers = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<Server>((resolve, reject) => {
          const server = createServer();
          server.once('error', reject);
          server.listen(0, '127.0.0.1', () => resolve(server));
        }),
    ),
  );
  const ports = servers.map((s) => (s.address() as AddressInfo).port);
  await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  return ports;
}

interface ClientTls {
  ca: Buffer;
  cert: Buffer;
  key: Buffer;
}

function httpGet(url: string, tls?: ClientTls): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const onResponse = (res: IncomingMessage): void => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    };
    const req = tls ? httpsRequest(url, { ...tls, timeout: 5000 }, onResponse) : httpRequest(url, { timeout: 5000 }, onResponse);
    req.on('timeout', () => req.destroy(new Error(`GET ${url} timed out`)));
    req.on('error', reject);
    req.end();
  });
}

async function workDirBase(): Promise<string> {
  // etcd on tmpfs makes every write a memory copy; fsync on a shared disk is the slowest
  // part of a control plane under test.
  try {
    await access('/dev/shm', constants.W_OK);
    return '/dev/shm';
  } catch {
    return tmpdir();
  }
}

class LocalControlPlane implements ControlPlane {
  readonly kubeconfigPath: string;
  readonly server: string;
  readonly etcdUrl: string;
  readonly caCertFile: string;
  private readonly pidDir: string;
  private readonly etcd: Component;
  private readonly apiserver: Component;
  private readonly controllerManager: Component;
  private readonly onExit = (): void => this.killNow();
  private disarmWatchdog: () => void = () => undefined;
  private stopping: Promise<void> | undefined;
  private tokenFiles = 0;

  constructor(
    readonly binaries: ControlPlaneBinaries,
    readonly logDir: string,
    private readonly workDir: string,
    private readonly pki: Pki,
    private readonly ports: { etcdClient: number; etcdPeer: number; apiserver: number; controllerManager: number },
    apiServerExtraArgs: string[],
    readonly nodeFacing: NodeFacingOptions | undefined,
  ) {
    this.server = `https://127.0.0.1:${ports.apiserver}`;
    this.caCertFile = pki.caCert;
    this.etcdUrl = `http://127.0.0.1:${ports.etcdClient}`;
    this.kubeconfigPath = join(workDir, 'admin.kubeconfig');
    this.pidDir = join(workDir, 'pids');
    const etcdClientUrl = `http://127.0.0.1:${ports.etcdClient}`;
    const etcdPeerUrl = `http://127.0.0.1:${ports.etcdPeer}`;
    const component = (name: string, command: string, args: string[]): Component =>
      new Component({ name, command, args, logFile: join(logDir, `${name}.log`), pidDir: this.pidDir });

    this.etcd = component('etcd', binaries.etcd, [
      '--name=default',
      `--data-dir=${join(workDir, 'etcd')}`,
      `--listen-client-urls=${etcdClientUrl}`,
      `--advertise-client-urls=${etcdClientUrl}`,
      `--listen-peer-urls=${etcdPeerUrl}`,
      `--initial-advertise-peer-urls=${etcdPeerUrl}`,
      `--initial-cluster=default=${etcdPeerUrl}`,
      // The data is thrown away after the run; fsync would only slow every write down.
      '--unsafe-no-fsync',
    ]);
    this.apiserver = component('kube-apiserver', binaries.kubeApiserver, [
      `--etcd-servers=${etcdClientUrl}`,
      '--bind-address=127.0.0.1',
      '--advertise-address=127.0.0.1',
      `--secure-port=${ports.apiserver}`,
      `--cert-dir=${join(workDir, 'kube-apiserver')}`,
      `--tls-cert-file=${pki.servingCert}`,
      `--tls-private-key-file=${pki.servingKey}`,
      `--client-ca-file=${pki.caCert}`,
      '--service-cluster-ip-range=10.0.0.0/24',
      // A list flag: repeating it would append, so the node-facing mode is chosen here.
      `--authorization-mode=${nodeFacing ? 'Node,RBAC' : 'RBAC'}`,
      `--service-account-issuer=${SERVICE_ACCOUNT_ISSUER}`,
      `--service-account-key-file=${pki.serviceAccountPublicKey}`,
      `--service-account-signing-key-file=${pki.serviceAccountKey}`,
      // The aggregation layer as kubeadm configures it; delegated authentication in
      // kube-controller-manager reads these settings back from the cluster.
      `--requestheader-client-ca-file=${pki.frontProxyCaCert}`,
      `--requestheader-allowed-names=${FRONT_PROXY_CLIENT_CN}`,
      '--requestheader-username-headers=X-Remote-User',
      '--requestheader-group-headers=X-Remote-Group',
      '--requestheader-extra-headers-prefix=X-Remote-Extra-',
      `--proxy-client-cert-file=${pki.frontProxyClientCert}`,
      `--proxy-client-key-file=${pki.frontProxyClientKey}`,
      // Without it, kube-apiserver on SIGTERM waited more than 10 s for open watches
      // (kube-controller-manager's) to end; with it they are closed after 2 s, so
      // restartApiServer() and stop() take seconds.
      '--shutdown-watch-termination-grace-period=2s',
      // As in real clusters, so a privileged Pod is refused by Pod Security admission and not
      // earlier by the apiserver's own validation.
      '--allow-privileged=true',
      // The default (lease) endpoint reconciler refuses the loopback advertise address and
      // kube-apiserver exits ("may not be in the loopback range"); nothing here needs the
      // endpoints of the `kubernetes` Service.
      '--endpoint-reconciler-type=none',
      ...(nodeFacing ? nodeFacingApiServerArgs(nodeFacing, pki) : []),
      ...apiServerExtraArgs,
    ]);
    const kcmKubeconfig = join(workDir, 'kube-controller-manager.kubeconfig');
    this.controllerManager = component('kube-controller-manager', binaries.kubeControllerManager, [
      `--kubeconfig=${kcmKubeconfig}`,
      `--authentication-kubeconfig=${kcmKubeconfig}`,
      `--authorization-kubeconfig=${kcmKubeconfig}`,
      `--controllers=${[...CONTROLLERS, ...(nodeFacing ? NODE_CONTROLLERS : [])].join(',')}`,
      '--leader-elect=false',
      // Each controller acts as its own ServiceAccount (as kubeadm sets it up), so a missing
      // RBAC rule shows up here as it would in a cluster.
      '--use-service-account-credentials=true',
      `--service-account-private-key-file=${pki.serviceAccountKey}`,
      `--root-ca-file=${pki.caCert}`,
      '--bind-address=127.0.0.1',
      `--secure-port=${ports.controllerManager}`,
      `--cert-dir=${join(workDir, 'kube-controller-manager')}`,
    ]);
  }

  /** Creates the files, starts etcd, kube-apiserver and kube-controller-manager and waits. */
  async start(): Promise<void> {
    await mkdir(this.pidDir, { recursive: true });
    await mkdir(join(this.workDir, 'kubeconfigs'), { recursive: true });
    await writeKubeconfig(this.kubeconfigPath, {
      server: this.server,
      caFile: this.pki.caCert,
      user: 'admin',
      credentials: { certFile: this.pki.adminCert, keyFile: this.pki.adminKey },
    });
    await writeKubeconfig(join(this.workDir, 'kube-controller-manager.kubeconfig'), {
      server: this.server,
      caFile: this.pki.caCert,
      user: 'system:kube-controller-manager',
      credentials: { certFile: this.pki.controllerManagerCert, keyFile: this.pki.controllerManagerKey },
    });
    this.disarmWatchdog = startWatchdog(this.pidDir, this.workDir);
    process.on('exit', this.onExit);

    const deadline = Date.now() + START_TIMEOUT_MS;
    const remaining = (): number => Math.max(1000, deadline - Date.now());
    try {
      this.etcd.start();
      await eventually(
        async () => {
          const res = await httpGet(`http://127.0.0.1:${this.ports.etcdClient}/health`);
          return res.status === 200 && res.body.includes('"health":"true"') ? true : undefined;
        },
        { description: 'etcd /health', timeoutMs: remaining(), abortIf: () => this.died(this.etcd) },
      );
      this.apiserver.start();
      await this.waitApiserverReady(remaining());
      this.controllerManager.start();
      // The default ServiceAccount is made by kube-controller-manager through the apiserver,
      // so its existence proves all three components work together.
      const core = this.kubeConfig().makeApiClient(CoreV1Api);
      await eventually(() => core.readNamespacedServiceAccount({ namespace: 'default', name: 'default' }), {
        description: 'the default ServiceAccount in the default namespace',
        timeoutMs: remaining(),
        intervalMs: 200,
        abortIf: () => this.died(this.etcd, this.apiserver, this.controllerManager),
      });
    } catch (err) {
      const started = [this.etcd, this.apiserver, this.controllerManager].filter((c) => c.running || c.exited !== undefined);
      // A component that died explains the failure; the others' logs would only bury it.
      const dead = started.filter((c) => !c.running);
      const logs = (dead.length > 0 ? dead : started)
        .map((c) => `==== ${c.spec.name} (${c.exited ?? 'running'}), last lines of ${c.spec.logFile}:\n${c.logTail()}`)
        .join('\n');
      await this.stop();
      const reason = err instanceof Error ? err.message : String(err);
      throw new Error(`cannot start the control plane: ${reason}\n${logs}`, { cause: err });
    }
  }

  kubeConfig(): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromFile(this.kubeconfigPath);
    return kc;
  }

  restConfig(): RestConfig {
    return loadKubeconfig(this.kubeconfigPath);
  }

  async issueCertificate(dir: string, request: CertificateRequest): Promise<{ certFile: string; keyFile: string }> {
    const { cert, key } = await issueCertificate(dir, request, { cert: this.pki.caCert, key: this.pki.caKey });
    return { certFile: cert, keyFile: key };
  }

  kubectl(args: string[], opts: KubectlOptions = {}): Promise<KubectlResult> {
    return new Promise((resolve, reject) => {
      const child = spawn(this.binaries.kubectl, [`--kubeconfig=${opts.kubeconfig ?? this.kubeconfigPath}`, ...args], {
        stdio: ['pipe', 'pipe', 'pipe'],
        // A kubectl stuck on a dead apiserver must not outlive the test run.
        timeout: 120_000,
      });
      const stdout: Buffer[] = [];
      const stderr: Buffer[] = [];
      child.stdout.on('data', (c: Buffer) => stdout.push(c));
      child.stderr.on('data', (c: Buffer) => stderr.push(c));
      child.on('error', reject);
      child.on('close', (code, signal) =>
        resolve({
          stdout: Buffer.concat(stdout).toString('utf8'),
          stderr: Buffer.concat(stderr).toString('utf8') + (signal ? `\nkubectl was killed by ${signal}` : ''),
          code: code ?? -1,
        }),
      );
      // kubectl may exit before reading its input (a bad flag); that is reported by its exit code.
      child.stdin.on('error', () => undefined);
      child.stdin.end(opts.input ?? '');
    });
  }

  async serviceAccountKubeconfig(namespace: string, name: string, opts: { expirationSeconds?: number; inlineToken?: boolean } = {}): Promise<string> {
    const core = this.kubeConfig().makeApiClient(CoreV1Api);
    const request = await core.createNamespacedServiceAccountToken({
      namespace,
      name,
      body: {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenRequest',
        // No audiences: the apiserver's own (its issuer) is used, which is what it accepts.
        spec: { audiences: [], expirationSeconds: opts.expirationSeconds ?? 3600 },
      },
    });
    const token = request.status?.token;
    if (!token) throw new Error(`TokenRequest for ServiceAccount ${namespace}/${name} returned no token`);
    this.tokenFiles += 1;
    const path = join(this.workDir, 'kubeconfigs', `sa-${namespace}-${name}-${this.tokenFiles}.kubeconfig`);
    // The token in a file of its own, as a Pod has it mounted: the operator then authenticates
    // the way its Deployment does (a token file, looked at again as the kubelet rotates it).
    const tokenFile = `${path}.token`;
    if (!opts.inlineToken) await writeFile(tokenFile, token, { mode: 0o600 });
    await writeKubeconfig(path, {
      server: this.server,
      caFile: this.pki.caCert,
      user: `system:serviceaccount:${namespace}:${name}`,
      credentials: opts.inlineToken ? { token } : { tokenFile },
      namespace,
    });
    return path;
  }

  async restartApiServer(): Promise<void> {
    await this.apiserver.stop();
    this.apiserver.start();
    await this.waitApiserverReady(START_TIMEOUT_MS);
  }

  stop(): Promise<void> {
    this.stopping ??= this.stopAll();
    return this.stopping;
  }

  private async stopAll(): Promise<void> {
    // Clients first, so nothing logs connection errors against a server that is going away.
    await this.controllerManager.stop();
    await this.apiserver.stop();
    await this.etcd.stop();
    this.disarmWatchdog();
    process.off('exit', this.onExit);
    await rm(this.workDir, { recursive: true, force: true });
  }

  private killNow(): void {
    for (const c of [this.controllerManager, this.apiserver, this.etcd]) c.killNow();
    this.disarmWatchdog();
    // rmSync: an 'exit' handler cannot wait for promises.
    rmSync(this.workDir, { recursive: true, force: true });
  }

  private async waitApiserverReady(timeoutMs: number): Promise<void> {
    const tls: ClientTls = {
      ca: await readFile(this.pki.caCert),
      cert: await readFile(this.pki.adminCert),
      key: await readFile(this.pki.adminKey),
    };
    await eventually(
      async () => {
        const res = await httpGet(`${this.server}/readyz`, tls);
        if (res.status === 200) return true;
        const failing = res.body.split('\n').filter((line) => line.startsWith('[-]'));
        throw new Error(`/readyz answered ${res.status}: ${failing.join('; ')}`);
      },
      {
        description: 'kube-apiserver /readyz',
        timeoutMs,
        intervalMs: 200,
        abortIf: () => this.died(this.etcd, this.apiserver),
      },
    );
  }

  private died(...components: Component[]): string | undefined {
    const dead = components.find((c) => !c.running);
    return dead ? `${dead.spec.name} ${dead.exited ?? 'is not running'}` : undefined;
  }
}

/**
 * Starts etcd, kube-apiserver and kube-controller-manager on free ports of 127.0.0.1 and
 * resolves once the API is ready and the controller manager has created the default
 * ServiceAccount. kube-apiserver runs with RBAC, Pod Security admission (on by default),
 * `--service-cluster-ip-range=10.0.0.0/24` and a fresh CA; the admin user is a client
 * certificate in system:masters.
 *
 * The processes run in their own process groups, are stopped by {@link ControlPlane.stop},
 * by a process 'exit' handler, and by a watchdog when Node dies without running handlers.
 *
 * @throws Error with the last log lines of each started component when startup fails.
 */
export async function startControlPlane(opts: StartControlPlaneOptions = {}): Promise<ControlPlane> {
  const binaries = await resolveBinaries(process.env, opts.kubernetesVersion);
  const workDir = await mkdtemp(join(await workDirBase(), 'bucketoperator-cp-'));
  try {
    const logDir = opts.logDir ?? join(workDir, 'logs');
    await mkdir(logDir, { recursive: true });
    const [pki, [etcdClient, etcdPeer, apiserver, controllerManager]] = await Promise.all([
      createPki(
        join(workDir, 'pki'),
        opts.node ? { servingIps: [opts.node.advertiseAddress, opts.node.kubernetesServiceIp], kubeletClient: true } : {},
      ),
      freePorts(4) as Promise<[number, number, number, number]>,
    ]);
    const cp = new LocalControlPlane(
      binaries,
      logDir,
      workDir,
      pki,
      { etcdClient, etcdPeer, apiserver, controllerManager },
      opts.apiServerExtraArgs ?? [],
      opts.node,
    );
    await cp.start();
    return cp;
  } catch (err) {
    await rm(workDir, { recursive: true, force: true });
    throw err;
  }
}
