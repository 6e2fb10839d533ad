/**
 * The command lines of the node's daemons, with the PATH each runs with; no I/O.
 */
import { join } from 'node:path';
import type { NodeBinaries } from './binaries';
import type { NodeLayout } from './layout';
import type { NodeNetwork } from './network';

/** The loopback and node ports the daemons listen on. */
export interface NodePorts {
  /** kubelet's API on the node IP. */
  readonly kubelet: number;
  readonly kubeletHealthz: number;
  readonly proxyHealthz: number;
  readonly proxyMetrics: number;
  readonly scheduler: number;
}

/** One daemon as it is started. */
export interface DaemonCommand {
  readonly name: 'containerd' | 'kubelet' | 'kube-proxy' | 'kube-scheduler';
  readonly command: string;
  readonly args: readonly string[];
  /** The daemon's PATH. */
  readonly path: string;
}

/** The machine's usual PATH, for containerd (it finds the shim there, and runs CNI plugins). */
export const SYSTEM_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/**
 * PATH without /usr/sbin and /sbin, so no iptables. kubelet and kube-proxy use iptables when they
 * find it (Debian's CNI plugins depend on it): kubelet adds KUBE-FIREWALL and canary chains to
 * the filter, nat and mangle tables, which outlive it. Neither needs them here (kube-proxy runs
 * in nftables mode and nothing sets route_localnet), so the ruleset stays untouched.
 */
export const NO_IPTABLES_PATH = '/usr/local/bin:/usr/bin:/bin';

/** The node's daemons in start order. */
export function daemonCommands(d: {
  binaries: NodeBinaries;
  layout: NodeLayout;
  network: NodeNetwork;
  name: string;
  ports: NodePorts;
}): DaemonCommand[] {
  const cfg = (file: string): string => join(d.layout.configDir, file);
  const schedulerKubeconfig = cfg('kube-scheduler.kubeconfig');
  return [
    {
      name: 'containerd',
      command: d.binaries.containerd,
      args: [`--config=${cfg('containerd.toml')}`],
      path: `${d.binaries.shimDir}:${SYSTEM_PATH}`,
    },
    {
      name: 'kubelet',
      command: d.binaries.kubelet,
      args: [
        `--config=${cfg('kubelet.yaml')}`,
        `--kubeconfig=${cfg('kubelet.kubeconfig')}`,
        `--root-dir=${d.layout.kubeletRoot}`,
        // Its default, /var/lib/kubelet/pki, would be created even with a serving certificate given.
        `--cert-dir=${join(d.layout.kubeletRoot, 'pki')}`,
        `--hostname-override=${d.name}`,
        `--node-ip=${d.network.gateway}`,
        '--v=1',
      ],
      path: NO_IPTABLES_PATH,
    },
    // nft for nftables mode, from a directory holding nothing else.
    {
      name: 'kube-proxy',
      command: d.binaries.kubeProxy,
      args: [`--config=${cfg('kube-proxy.yaml')}`, '--v=1'],
      path: `${d.layout.toolsDir}:${NO_IPTABLES_PATH}`,
    },
    {
      name: 'kube-scheduler',
      command: d.binaries.kubeScheduler,
      args: [
        `--kubeconfig=${schedulerKubeconfig}`,
        `--authentication-kubeconfig=${schedulerKubeconfig}`,
        `--authorization-kubeconfig=${schedulerKubeconfig}`,
        '--leader-elect=false',
        '--bind-address=127.0.0.1',
        `--secure-port=${d.ports.scheduler}`,
        `--cert-dir=${join(d.layout.runDir, 'kube-scheduler')}`,
      ],
      path: NO_IPTABLES_PATH,
    },
  ];
}
