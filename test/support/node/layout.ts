/**
 * Where a node keeps its files, and what outside them it may touch: the inputs of its journal.
 */
import { join } from 'node:path';

/** The node's cgroup under every hierarchy root (kubelet's `cgroupRoot` is `/<this>`). */
export const NODE_CGROUP = 'bucketoperator-node';

/**
 * Runtime state: containerd's sockets, task bundles and network namespaces, the shims' sockets
 * and runc's state. Short on purpose: a unix socket path holds at most 108 bytes, and shim
 * sockets are `<dir>/s/<64 hex digits>`.
 */
export const NODE_STATE_DIR = '/run/bucketoperator-node';

/**
 * Every sysctl the node or its daemons may write on the host, with its writer. The journal keeps
 * their values from before the start; clean-up writes back any that changed.
 */
export const TOUCHED_SYSCTLS: readonly string[] = [
  // The node itself (and the CNI bridge plugin's isGateway).
  'net.ipv4.ip_forward',
  'net.ipv6.conf.all.forwarding',
  // kubelet's kernel tunables (protectKernelDefaults: false), set at every start.
  'vm.overcommit_memory',
  'vm.panic_on_oom',
  'kernel.panic',
  'kernel.panic_on_oops',
  'kernel.keys.root_maxkeys',
  'kernel.keys.root_maxbytes',
  // kube-proxy, in modes or with settings this node does not use; listed in case a default changes.
  'net.ipv4.conf.all.route_localnet',
  'net.bridge.bridge-nf-call-iptables',
  'net.bridge.bridge-nf-call-ip6tables',
  'net.netfilter.nf_conntrack_max',
  'net.netfilter.nf_conntrack_tcp_timeout_established',
  'net.netfilter.nf_conntrack_tcp_timeout_close_wait',
  'net.netfilter.nf_conntrack_tcp_be_liberal',
  'net.netfilter.nf_conntrack_udp_timeout',
  'net.netfilter.nf_conntrack_udp_timeout_stream',
];

/** Host directories the daemons write to whatever they are configured with (constants in their code). */
export const HOST_DIRS: readonly string[] = [
  // kubelet links every container's log here and sets 0750 on it.
  '/var/log/containers',
  // kubelet's device plugin socket, whatever its --root-dir.
  '/var/lib/kubelet/device-plugins',
  // libcni's result cache (containerd offers no setting for it); a Pod killed without a CNI DEL
  // leaves its entry.
  '/var/lib/cni/results',
];

/** kube-proxy's tables in nftables mode. */
export const KUBE_PROXY_TABLES = [
  { family: 'ip', name: 'kube-proxy' },
  { family: 'ip6', name: 'kube-proxy' },
] as const;

/** The files of one node. */
export interface NodeLayout {
  /** `<cache>/node`: the lock, the journal and cached image archives; kept. */
  readonly home: string;
  readonly lockFile: string;
  readonly journalFile: string;
  /** Image archives written for a binary version, reused by later runs. */
  readonly imagesDir: string;
  /** Everything of one run that is not runtime state; removed by clean-up. */
  readonly runDir: string;
  readonly stateDir: string;
  readonly pidDir: string;
  /** Programs a daemon may find on its PATH (a link to nft for kube-proxy). */
  readonly toolsDir: string;
  readonly pkiDir: string;
  readonly configDir: string;
  readonly containerdRoot: string;
  readonly containerdState: string;
  readonly containerdAddress: string;
  readonly shimSocketDir: string;
  readonly runcRoot: string;
  readonly kubeletRoot: string;
  readonly podLogsDir: string;
  readonly volumePluginDir: string;
  readonly cniConfDir: string;
  readonly cniIpamDir: string;
}

/** The layout under a cache root (`${BUCKETOPERATOR_CACHE:-~/.cache/bucketoperator}`). */
export function nodeLayout(cacheRoot: string, stateDir: string = NODE_STATE_DIR): NodeLayout {
  const home = join(cacheRoot, 'node');
  const runDir = join(home, 'run');
  return {
    home,
    lockFile: join(home, 'node.lock'),
    journalFile: join(home, 'journal.json'),
    imagesDir: join(home, 'images'),
    runDir,
    stateDir,
    pidDir: join(runDir, 'pids'),
    toolsDir: join(runDir, 'bin'),
    pkiDir: join(runDir, 'pki'),
    configDir: join(runDir, 'config'),
    containerdRoot: join(runDir, 'containerd'),
    containerdState: join(stateDir, 'containerd'),
    containerdAddress: join(stateDir, 'containerd.sock'),
    shimSocketDir: join(stateDir, 's'),
    runcRoot: join(stateDir, 'runc'),
    kubeletRoot: join(runDir, 'kubelet'),
    podLogsDir: join(runDir, 'pod-logs'),
    volumePluginDir: join(runDir, 'volume-plugins'),
    cniConfDir: join(runDir, 'cni', 'net.d'),
    cniIpamDir: join(runDir, 'cni', 'ipam'),
  };
}
