/** The node's daemon command lines: what each is told, and what it finds on its PATH. */
import { expect } from 'chai';
import type { NodeBinaries } from '../../support/node/binaries';
import { daemonCommands, SYSTEM_PATH } from '../../support/node/daemons';
import { nodeLayout } from '../../support/node/layout';
import { NODE_NETWORK } from '../../support/node/network';

const binaries: NodeBinaries = {
  kubelet: '/c/kubelet',
  kubeProxy: '/c/kube-proxy',
  kubeScheduler: '/c/kube-scheduler',
  containerd: '/c/containerd/containerd',
  shimDir: '/c/containerd',
  ctr: '/c/containerd/ctr',
  coredns: '/c/coredns',
  pause: '/c/pause',
  runc: '/usr/sbin/runc',
  nft: '/usr/sbin/nft',
  cniBinDir: '/usr/lib/cni',
  busybox: '/bin/busybox',
};
const layout = nodeLayout('/cache');
const daemons = daemonCommands({
  binaries,
  layout,
  network: NODE_NETWORK,
  name: 'n1',
  ports: { kubelet: 1, kubeletHealthz: 2, proxyHealthz: 3, proxyMetrics: 4, scheduler: 5 },
});
const byName = (name: string) => daemons.find((d) => d.name === name)!;
const dirs = (path: string): string[] => path.split(':');

describe('node: daemonCommands', () => {
  it('starts containerd first, then kubelet, kube-proxy and kube-scheduler', () =>
    expect(daemons.map((d) => d.name)).to.deep.equal(['containerd', 'kubelet', 'kube-proxy', 'kube-scheduler']));

  it('lets containerd find its shim and the system tools', () => expect(byName('containerd').path).to.equal(`${binaries.shimDir}:${SYSTEM_PATH}`));

  for (const name of ['kubelet', 'kube-proxy', 'kube-scheduler']) {
    it(`keeps iptables (in /usr/sbin and /sbin) off ${name}'s PATH`, () => {
      for (const dir of dirs(byName(name).path)) expect(dir).to.not.match(/sbin$/);
    });
  }

  it("gives kube-proxy nft from a directory of the node's own", () => expect(dirs(byName('kube-proxy').path)[0]).to.equal(layout.toolsDir));

  it('registers kubelet under its name with the bridge address as node IP, state in the node directory', () => {
    expect(byName('kubelet').args).to.include.members([
      '--hostname-override=n1',
      `--node-ip=${NODE_NETWORK.gateway}`,
      `--root-dir=${layout.kubeletRoot}`,
      `--cert-dir=${layout.kubeletRoot}/pki`,
    ]);
  });

  it('runs the scheduler alone (no leader election) on loopback', () =>
    expect(byName('kube-scheduler').args).to.include.members(['--leader-elect=false', '--bind-address=127.0.0.1', '--secure-port=5']));
});
