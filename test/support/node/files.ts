/**
 * Writes what the node's daemons read: certificates issued by the cluster CA, their
 * kubeconfigs, and the configuration files of containerd, the CNI bridge, kubelet and kube-proxy.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { writeKubeconfig, type ControlPlane } from '../control-plane';
import type { NodeBinaries } from './binaries';
import { containerdConfig, kubeletConfig, kubeProxyConfig } from './configs';
import type { NodePorts } from './daemons';
import { NODE_CGROUP, type NodeLayout } from './layout';
import { cniConfList, CNI_NETWORK_NAME, type NodeNetwork } from './network';

/** What the files are made from. */
export interface NodeFileInputs {
  readonly cp: ControlPlane;
  readonly name: string;
  readonly network: NodeNetwork;
  readonly layout: NodeLayout;
  readonly binaries: NodeBinaries;
  readonly ports: NodePorts;
  /** The sandbox (pause) image containerd runs for every Pod. */
  readonly sandboxImage: string;
}

/** Writes every certificate, kubeconfig and configuration file into the node's directories. */
export async function writeNodeFiles(i: NodeFileInputs): Promise<void> {
  const { cp, name, network, layout } = i;
  const cfg = (file: string): string => join(layout.configDir, file);
  const [kubeletClient, kubeletServing, proxyClient, schedulerClient] = await Promise.all([
    // The Node authorizer and NodeRestriction know a kubelet by this identity.
    cp.issueCertificate(layout.pkiDir, {
      name: 'kubelet-client',
      commonName: `system:node:${name}`,
      organizations: ['system:nodes'],
      usage: 'client',
    }),
    // Checked by the API server (--kubelet-certificate-authority) when it connects for logs and exec.
    cp.issueCertificate(layout.pkiDir, {
      name: 'kubelet-serving',
      commonName: `system:node:${name}`,
      usage: 'server',
      ipSans: [network.gateway],
      dnsSans: [name],
    }),
    // Bound to system:node-proxier and system:kube-scheduler by the bootstrap RBAC policy.
    cp.issueCertificate(layout.pkiDir, { name: 'kube-proxy', commonName: 'system:kube-proxy', usage: 'client' }),
    cp.issueCertificate(layout.pkiDir, { name: 'kube-scheduler', commonName: 'system:kube-scheduler', usage: 'client' }),
  ]);
  const kubeconfig = (file: string, user: string, c: { certFile: string; keyFile: string }): Promise<void> =>
    writeKubeconfig(cfg(file), { server: cp.server, caFile: cp.caCertFile, user, credentials: c });
  const containerd = containerdConfig(
    {
      root: layout.containerdRoot,
      state: layout.containerdState,
      address: layout.containerdAddress,
      shimSocketDir: layout.shimSocketDir,
      runcRoot: layout.runcRoot,
      runcBinary: i.binaries.runc,
      cniBinDir: i.binaries.cniBinDir,
      cniConfDir: layout.cniConfDir,
    },
    i.sandboxImage,
  );
  const kubelet = kubeletConfig({
    network,
    containerdAddress: layout.containerdAddress,
    cgroupRoot: `/${NODE_CGROUP}`,
    podLogsDir: layout.podLogsDir,
    volumePluginDir: layout.volumePluginDir,
    clientCaFile: cp.caCertFile,
    tlsCertFile: kubeletServing.certFile,
    tlsPrivateKeyFile: kubeletServing.keyFile,
    port: i.ports.kubelet,
    healthzPort: i.ports.kubeletHealthz,
  });
  const kubeProxy = kubeProxyConfig({
    network,
    nodeName: name,
    kubeconfig: cfg('kube-proxy.kubeconfig'),
    healthzPort: i.ports.proxyHealthz,
    metricsPort: i.ports.proxyMetrics,
  });
  await Promise.all([
    kubeconfig('kubelet.kubeconfig', `system:node:${name}`, kubeletClient),
    kubeconfig('kube-proxy.kubeconfig', 'system:kube-proxy', proxyClient),
    kubeconfig('kube-scheduler.kubeconfig', 'system:kube-scheduler', schedulerClient),
    writeFile(cfg('containerd.toml'), containerd),
    writeFile(join(layout.cniConfDir, `10-${CNI_NETWORK_NAME}.conflist`), JSON.stringify(cniConfList(network, layout.cniIpamDir), null, 2)),
    writeFile(cfg('kubelet.yaml'), stringify(kubelet)),
    writeFile(cfg('kube-proxy.yaml'), stringify(kubeProxy)),
  ]);
}
