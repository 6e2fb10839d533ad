/** The node's configuration files: the settings its daemons need on these machines, and where they keep state. */
import { expect } from 'chai';
import { CONTAINERD_DISABLED_PLUGINS, containerdConfig, kubeletConfig, kubeProxyConfig, type ContainerdPaths } from '../../support/node/configs';
import { COREDNS, coreDnsManifests, corefile } from '../../support/node/coredns';
import { nodeLayout } from '../../support/node/layout';
import { cniConfList, NODE_NETWORK } from '../../support/node/network';

const layout = nodeLayout('/root/.cache/bucketoperator');
const paths: ContainerdPaths = {
  root: layout.containerdRoot,
  state: layout.containerdState,
  address: layout.containerdAddress,
  shimSocketDir: layout.shimSocketDir,
  runcRoot: layout.runcRoot,
  runcBinary: '/usr/sbin/runc',
  cniBinDir: '/usr/lib/cni',
  cniConfDir: layout.cniConfDir,
};

describe('node: containerdConfig', () => {
  const toml = containerdConfig(paths, 'bucketoperator.local/pause:3.10.2');
  const settings: Record<string, string> = {
    'runc may not lower oom_score_adj (root lacks CAP_SYS_RESOURCE here)': 'restrict_oom_score_adj = true',
    'the sandbox image is the local pause': "sandbox = 'bucketoperator.local/pause:3.10.2'",
    "Debian's CNI plugins": "bin_dirs = ['/usr/lib/cni']",
    'network namespaces under the state directory': 'netns_mounts_under_state_dir = true',
    'shim sockets under the state directory': `socket_dir = '${layout.shimSocketDir}'`,
    "runc's state under the state directory": `Root = '${layout.runcRoot}'`,
    'cgroupfs, as kubelet': 'SystemdCgroup = false',
    'no configuration of the machine': 'imports = []',
    'exec and attach streams on loopback only': "stream_server_address = '127.0.0.1'",
  };
  for (const [name, line] of Object.entries(settings)) it(name, () => expect(toml.split('\n').map((l) => l.trim())).to.include(line));

  it('disables the plugins that write outside the node directories', () => {
    for (const plugin of ['io.containerd.internal.v1.opt', 'io.containerd.nri.v1.nri']) expect(CONTAINERD_DISABLED_PLUGINS).to.include(plugin);
    expect(toml).to.include(`'io.containerd.nri.v1.nri'`);
  });

  it('keeps every shim socket path within the 108 bytes a unix socket allows', () => {
    expect(`${layout.shimSocketDir}/${'f'.repeat(64)}`.length).to.be.lessThan(108);
    expect(`${layout.containerdAddress}.ttrpc`.length).to.be.lessThan(108);
  });
});

describe('node: kubeletConfig', () => {
  const config = kubeletConfig({
    network: NODE_NETWORK,
    containerdAddress: layout.containerdAddress,
    cgroupRoot: '/bucketoperator-node',
    podLogsDir: layout.podLogsDir,
    volumePluginDir: layout.volumePluginDir,
    clientCaFile: '/pki/ca.crt',
    tlsCertFile: '/pki/kubelet.crt',
    tlsPrivateKeyFile: '/pki/kubelet.key',
    port: 40000,
    healthzPort: 40001,
  });
  const want: Record<string, [string, unknown]> = {
    'runs on cgroup v1': ['failCgroupV1', false],
    'uses cgroupfs': ['cgroupDriver', 'cgroupfs'],
    "puts Pods under the node's private cgroup": ['cgroupRoot', '/bucketoperator-node'],
    'listens on the bridge address only': ['address', NODE_NETWORK.gateway],
    'serves no unauthenticated port': ['readOnlyPort', 0],
    'hands Pods the cluster DNS Service': ['clusterDNS', [NODE_NETWORK.dnsServiceIp]],
    "gives Pods no resolver of the machine's": ['resolvConf', ''],
    'talks to the node containerd': ['containerRuntimeEndpoint', `unix://${layout.containerdAddress}`],
    'keeps logs in the node directory': ['podLogsDir', layout.podLogsDir],
    'keeps volume plugins in the node directory': ['volumePluginDir', layout.volumePluginDir],
    'does not lower its own oom_score_adj': ['oomScoreAdj', 0],
    'authorizes every request through the API server': ['authorization', { mode: 'Webhook' }],
  };
  for (const [name, [key, value]] of Object.entries(want)) it(name, () => expect(config[key]).to.deep.equal(value));
  it('trusts the cluster CA for client certificates and nobody anonymous', () =>
    expect(config.authentication).to.deep.equal({
      anonymous: { enabled: false },
      webhook: { enabled: true },
      x509: { clientCAFile: '/pki/ca.crt' },
    }));
});

describe('node: kubeProxyConfig', () => {
  const config = kubeProxyConfig({ network: NODE_NETWORK, nodeName: 'n', kubeconfig: '/k', healthzPort: 1, metricsPort: 2 });
  it('runs in nftables mode', () => expect(config.mode).to.equal('nftables'));
  it('answers NodePorts on the bridge address only, and never on localhost', () => {
    expect(config.nodePortAddresses).to.deep.equal([`${NODE_NETWORK.gateway}/32`]);
    expect(config.iptables).to.deep.equal({ localhostNodePorts: false });
  });
  it('changes no conntrack sysctl', () =>
    expect(config.conntrack).to.deep.equal({
      maxPerCore: 0,
      min: 0,
      tcpEstablishedTimeout: '0s',
      tcpCloseWaitTimeout: '0s',
      udpTimeout: '0s',
      udpStreamTimeout: '0s',
    }));
  it('masquerades Service traffic, so hairpin and same-bridge replies come back through the node', () =>
    expect(config.nftables).to.include({ masqueradeAll: true }));
  it('listens for health and metrics on loopback', () => {
    expect(config.healthzBindAddress).to.equal('127.0.0.1:1');
    expect(config.metricsBindAddress).to.equal('127.0.0.1:2');
  });
});

describe('node: cniConfList', () => {
  const conf = cniConfList(NODE_NETWORK, '/ipam') as { plugins: Record<string, unknown>[] };
  const bridge = conf.plugins[0]!;
  it('puts Pods on the node bridge with its address as gateway', () => {
    expect(bridge).to.include({ type: 'bridge', bridge: NODE_NETWORK.bridge, isGateway: true, hairpinMode: true });
    expect(bridge.ipam).to.deep.include({ ranges: [[{ subnet: NODE_NETWORK.podCidr, gateway: NODE_NETWORK.gateway }]], dataDir: '/ipam' });
  });
  it('masquerades nothing: no traffic is meant to leave', () => expect(bridge.ipMasq).to.equal(false));
});

describe('node: CoreDNS', () => {
  const objects = coreDnsManifests({ network: NODE_NETWORK, image: 'bucketoperator.local/coredns:v1' });
  const byKind = (kind: string): Record<string, unknown> => objects.find((o) => o.kind === kind)!;
  it('answers for the cluster domain and forwards nothing off the machine', () => {
    const text = corefile(NODE_NETWORK);
    expect(text).to.include(`kubernetes ${NODE_NETWORK.clusterDomain} in-addr.arpa ip6.arpa`);
    expect(text).to.not.match(/forward|proxy/);
  });
  it('serves at the ClusterIP kubelet gives Pods as their resolver', () =>
    expect(byKind('Service'))
      .to.deep.include({ metadata: { name: COREDNS.service, namespace: COREDNS.namespace, labels: { 'k8s-app': 'kube-dns' } } })
      .and.to.have.nested.property('spec.clusterIP', NODE_NETWORK.dnsServiceIp));
  it('runs the local image without pulling it', () => {
    const container = (byKind('Deployment') as { spec: { template: { spec: { containers: { image: string; imagePullPolicy: string }[] } } } }).spec
      .template.spec.containers[0]!;
    expect(container).to.include({ image: 'bucketoperator.local/coredns:v1', imagePullPolicy: 'Never' });
  });
  it('may only read what its kubernetes plugin watches', () => {
    const rules = (byKind('ClusterRole') as { rules: { verbs: string[] }[] }).rules;
    for (const r of rules) expect(r.verbs).to.deep.equal(['list', 'watch']);
  });
});
