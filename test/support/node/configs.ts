/**
 * The configuration files of the node's daemons, rendered from plain inputs with no I/O:
 * containerd's config.toml, kubelet's KubeletConfiguration and kube-proxy's
 * KubeProxyConfiguration. Each setting that departs from a default says why; most of them keep
 * the daemon's files, sockets and kernel settings inside what the node records and cleans up.
 */
import type { NodeNetwork } from './network';

/** Paths containerd is configured with. */
export interface ContainerdPaths {
  /** Persistent state: content store, snapshots, metadata. */
  readonly root: string;
  /** Runtime state: sockets, task bundles, network namespaces (kept short: socket paths are limited to 108 bytes). */
  readonly state: string;
  /** The gRPC socket kubelet and ctr talk to. */
  readonly address: string;
  /** Shim sockets (containerd's default is /run/containerd/s). */
  readonly shimSocketDir: string;
  /** runc's state (the shim's default is /run/containerd/runc). */
  readonly runcRoot: string;
  readonly runcBinary: string;
  readonly cniBinDir: string;
  readonly cniConfDir: string;
}

/** Plugins whose defaults write outside the node's directories or that the node never uses. */
export const CONTAINERD_DISABLED_PLUGINS = [
  // Creates /opt/containerd.
  'io.containerd.internal.v1.opt',
  // Listens on /var/run/nri/nri.sock.
  'io.containerd.nri.v1.nri',
  'io.containerd.image-verifier.v1.bindir',
  'io.containerd.tracing.processor.v1.otlp',
  'io.containerd.internal.v1.tracing',
  'io.containerd.snapshotter.v1.blockfile',
  'io.containerd.snapshotter.v1.erofs',
  'io.containerd.differ.v1.erofs',
  'io.containerd.mount-handler.v1.erofs',
] as const;

function tomlString(value: string): string {
  return `'${value.replace(/'/g, '')}'`;
}

/**
 * containerd's config.toml (version 3, which containerd 2.x reads and migrates). The settings
 * kubelet depends on: the CRI plugin with runc through the v2 shim and cgroupfs,
 * `restrict_oom_score_adj` (root here lacks CAP_SYS_RESOURCE, so runc cannot lower a
 * process's oom_score_adj and every sandbox would fail), the locally built sandbox image, and
 * Debian's CNI plugins in /usr/lib/cni.
 */
export function containerdConfig(paths: ContainerdPaths, sandboxImage: string): string {
  const s = tomlString;
  return `version = 3
root = ${s(paths.root)}
state = ${s(paths.state)}
# The machine's own containerd configuration is not this node's.
imports = []
disabled_plugins = [${CONTAINERD_DISABLED_PLUGINS.map(s).join(', ')}]

[grpc]
  address = ${s(paths.address)}

[ttrpc]
  address = ${s(`${paths.address}.ttrpc`)}

[plugins.'io.containerd.cri.v1.images']
  snapshotter = 'overlayfs'
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = ${s(sandboxImage)}

[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = true
  disable_apparmor = true
  # Network namespaces under the state directory, not /var/run/netns.
  netns_mounts_under_state_dir = true
  cdi_spec_dirs = []
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = 'runc'
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = 'io.containerd.runc.v2'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = ${s(paths.runcBinary)}
        Root = ${s(paths.runcRoot)}
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = [${s(paths.cniBinDir)}]
    conf_dir = ${s(paths.cniConfDir)}
    max_conf_num = 1

[plugins.'io.containerd.grpc.v1.cri']
  # exec, attach and port-forward streams, proxied by kubelet: loopback only.
  stream_server_address = '127.0.0.1'
  stream_server_port = '0'

[plugins.'io.containerd.shim.v1.manager']
  socket_dir = ${s(paths.shimSocketDir)}
`;
}

/** What kubelet is configured with. */
export interface KubeletInputs {
  readonly network: NodeNetwork;
  readonly containerdAddress: string;
  /** The node's private cgroup (created beforehand in every hierarchy), e.g. `/bucketoperator-node`. */
  readonly cgroupRoot: string;
  readonly podLogsDir: string;
  readonly volumePluginDir: string;
  readonly clientCaFile: string;
  readonly tlsCertFile: string;
  readonly tlsPrivateKeyFile: string;
  /** kubelet's API port on the node IP (the API server connects to it for logs and exec). */
  readonly port: number;
  /** Loopback port of /healthz. */
  readonly healthzPort: number;
}

/** kubelet's KubeletConfiguration (kubelet.config.k8s.io/v1beta1), as a plain object for YAML. */
export function kubeletConfig(k: KubeletInputs): Record<string, unknown> {
  return {
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    address: k.network.gateway,
    port: k.port,
    readOnlyPort: 0,
    healthzBindAddress: '127.0.0.1',
    healthzPort: k.healthzPort,
    tlsCertFile: k.tlsCertFile,
    tlsPrivateKeyFile: k.tlsPrivateKeyFile,
    rotateCertificates: false,
    serverTLSBootstrap: false,
    // The API server authenticates with a client certificate of the cluster CA; everything is
    // authorized through SubjectAccessReviews, as on a real node.
    authentication: { anonymous: { enabled: false }, webhook: { enabled: true }, x509: { clientCAFile: k.clientCaFile } },
    authorization: { mode: 'Webhook' },
    containerRuntimeEndpoint: `unix://${k.containerdAddress}`,
    // These machines run cgroup v1, which kubelet 1.35+ refuses unless told otherwise.
    failCgroupV1: false,
    cgroupDriver: 'cgroupfs',
    cgroupRoot: k.cgroupRoot,
    cgroupsPerQOS: true,
    enforceNodeAllocatable: ['pods'],
    clusterDNS: [k.network.dnsServiceIp],
    clusterDomain: k.network.clusterDomain,
    // No host resolver for Pods: a `dnsPolicy: Default` Pod gets no nameserver rather than one
    // off this machine.
    resolvConf: '',
    podLogsDir: k.podLogsDir,
    volumePluginDir: k.volumePluginDir,
    // Root here cannot lower oom_score_adj (no CAP_SYS_RESOURCE).
    oomScoreAdj: 0,
    failSwapOn: false,
    // The disk is shared with other work: only a nearly full one should evict test Pods, and
    // images imported by hand cannot be pulled again once garbage-collected.
    evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '1%', 'imagefs.available': '1%' },
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    // Graceful node shutdown needs systemd-logind; the node's stop() ends Pods itself.
    shutdownGracePeriod: '0s',
    shutdownGracePeriodCriticalPods: '0s',
    serializeImagePulls: false,
    // Status every few seconds: a test waits for Ready, not the default 10 s heartbeat.
    nodeStatusUpdateFrequency: '4s',
    syncFrequency: '10s',
    fileCheckFrequency: '20s',
    registerNode: true,
  };
}

/** What kube-proxy is configured with. */
export interface KubeProxyInputs {
  readonly network: NodeNetwork;
  readonly nodeName: string;
  readonly kubeconfig: string;
  readonly healthzPort: number;
  readonly metricsPort: number;
}

/**
 * kube-proxy's KubeProxyConfiguration (kubeproxy.config.k8s.io/v1alpha1) in nftables mode. It
 * changes no sysctl: conntrack settings are zero ("leave as is"), NodePorts answer only on the
 * bridge address (no `route_localnet`), and oom_score_adj stays (root cannot lower it here).
 * `masqueradeAll` makes a Pod reaching another Pod on the same bridge through a Service get the
 * reply through the node, where conntrack undoes the translation.
 */
export function kubeProxyConfig(k: KubeProxyInputs): Record<string, unknown> {
  return {
    apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
    kind: 'KubeProxyConfiguration',
    mode: 'nftables',
    clientConnection: { kubeconfig: k.kubeconfig },
    hostnameOverride: k.nodeName,
    healthzBindAddress: `127.0.0.1:${k.healthzPort}`,
    metricsBindAddress: `127.0.0.1:${k.metricsPort}`,
    clusterCIDR: k.network.podCidr,
    detectLocalMode: 'ClusterCIDR',
    nodePortAddresses: [`${k.network.gateway}/32`],
    oomScoreAdj: 0,
    nftables: { masqueradeAll: true, syncPeriod: '30s', minSyncPeriod: '0s' },
    iptables: { localhostNodePorts: false },
    conntrack: {
      maxPerCore: 0,
      min: 0,
      tcpEstablishedTimeout: '0s',
      tcpCloseWaitTimeout: '0s',
      udpTimeout: '0s',
      udpStreamTimeout: '0s',
    },
  };
}
