/** The order in which a node's changes are undone, decided from its journal and what is left. */
import { expect } from 'chai';
import { describeStep, planCleanup, pointsIntoNodeDirs, type CleanupStep, type Observed } from '../../support/node/cleanup-plan';
import type { NodeJournal } from '../../support/node/journal';

const journal: NodeJournal = {
  version: 1,
  ownerPid: 4242,
  startedAt: '2026-12-04T00:00:00Z',
  dirs: ['/cache/node/run', '/run/node'],
  cgroup: 'bucketoperator-node',
  links: ['bucketop0'],
  guardTable: { family: 'inet', name: 'guard' },
  nftTables: [
    { family: 'ip', name: 'kube-proxy' },
    { family: 'ip6', name: 'kube-proxy' },
  ],
  sysctls: { 'net.ipv4.ip_forward': '0', 'kernel.panic': '1', 'net.ipv4.tcp_rmem': '4096 131072 6291456' },
  hostDirs: [
    { path: '/var/log/containers', existed: false },
    { path: '/var/lib/cni/results', existed: true, mode: 0o755 },
  ],
};

const clean: Observed = {
  pids: [],
  mounts: [],
  cgroupDirs: [],
  links: ['lo', 'eth0'],
  nftTables: [],
  sysctls: { 'net.ipv4.ip_forward': '0', 'kernel.panic': '1', 'net.ipv4.tcp_rmem': '4096\t131072\t6291456' },
  hostDirs: { '/var/log/containers': undefined, '/var/lib/cni/results': { mode: 0o755, linksIntoNodeDirs: [] } },
  dirs: [],
};

const crashed: Observed = {
  pids: [31, 7, 19],
  mounts: ['/run/node/containerd/io.containerd.runtime.v2.task/k8s.io/abc/rootfs', '/run/node/netns/cni-1', '/cache/node/run/kubelet'],
  cgroupDirs: [
    '/sys/fs/cgroup/memory/bucketoperator-node',
    '/sys/fs/cgroup/memory/bucketoperator-node/kubepods',
    '/sys/fs/cgroup/memory/bucketoperator-node/kubepods/besteffort',
    '/sys/fs/cgroup/memory/bucketoperator-node/system',
    '/sys/fs/cgroup/pids/bucketoperator-node',
  ],
  links: ['lo', 'eth0', 'bucketop0'],
  nftTables: [
    { family: 'ip', name: 'filter' },
    { family: 'ip', name: 'kube-proxy' },
    { family: 'inet', name: 'guard' },
  ],
  sysctls: { 'net.ipv4.ip_forward': '1', 'kernel.panic': '10', 'net.ipv4.tcp_rmem': '4096 131072 6291456' },
  hostDirs: {
    '/var/log/containers': { mode: 0o750, linksIntoNodeDirs: [] },
    '/var/lib/cni/results': { mode: 0o700, linksIntoNodeDirs: ['/var/lib/cni/results/x'] },
  },
  dirs: ['/cache/node/run', '/run/node'],
};

const cases: Record<string, { observed: Observed; want: CleanupStep[] }> = {
  'nothing left: nothing to do (sysctl values compare without regard to tabs)': { observed: clean, want: [] },
  'a crashed run: processes, mounts, cgroups, link, kube-proxy, sysctls, then the guard, host dirs and own dirs': {
    observed: crashed,
    want: [
      { kind: 'kill', pids: [7, 19, 31] },
      { kind: 'unmount', path: '/run/node/containerd/io.containerd.runtime.v2.task/k8s.io/abc/rootfs' },
      { kind: 'unmount', path: '/run/node/netns/cni-1' },
      { kind: 'unmount', path: '/cache/node/run/kubelet' },
      { kind: 'remove-cgroup', path: '/sys/fs/cgroup/memory/bucketoperator-node/kubepods/besteffort' },
      { kind: 'remove-cgroup', path: '/sys/fs/cgroup/memory/bucketoperator-node/system' },
      { kind: 'remove-cgroup', path: '/sys/fs/cgroup/memory/bucketoperator-node/kubepods' },
      { kind: 'remove-cgroup', path: '/sys/fs/cgroup/pids/bucketoperator-node' },
      { kind: 'remove-cgroup', path: '/sys/fs/cgroup/memory/bucketoperator-node' },
      { kind: 'delete-link', name: 'bucketop0' },
      { kind: 'kube-proxy-cleanup' },
      { kind: 'delete-table', table: { family: 'ip', name: 'kube-proxy' } },
      { kind: 'sysctl', key: 'net.ipv4.ip_forward', value: '0' },
      { kind: 'sysctl', key: 'kernel.panic', value: '1' },
      { kind: 'delete-table', table: { family: 'inet', name: 'guard' } },
      { kind: 'remove', path: '/var/log/containers' },
      { kind: 'remove', path: '/var/lib/cni/results/x' },
      { kind: 'chmod', path: '/var/lib/cni/results', mode: 0o755 },
      { kind: 'remove', path: '/cache/node/run' },
      { kind: 'remove', path: '/run/node' },
    ],
  },
  'only the guard left: it goes, nothing else is touched': {
    observed: { ...clean, nftTables: [{ family: 'inet', name: 'guard' }] },
    want: [{ kind: 'delete-table', table: { family: 'inet', name: 'guard' } }],
  },
  "another program's tables and a sysctl the kernel no longer has are left alone": {
    observed: { ...clean, nftTables: [{ family: 'ip', name: 'filter' }], sysctls: { 'net.ipv4.ip_forward': '0' } },
    want: [],
  },
};

describe('node: planCleanup', () => {
  for (const [name, { observed, want }] of Object.entries(cases)) {
    it(name, () => expect(planCleanup(journal, observed)).to.deep.equal(want));
  }

  it('restores ip_forward before it removes the guard', () => {
    const kinds = planCleanup(journal, crashed).map((s) => (s.kind === 'delete-table' ? `delete ${s.table.name}` : s.kind));
    expect(kinds.lastIndexOf('sysctl')).to.be.lessThan(kinds.indexOf('delete guard'));
  });

  it('describes every step in one line', () => {
    for (const step of planCleanup(journal, crashed)) expect(describeStep(step)).to.be.a('string').and.not.include('\n');
  });
});

describe('node: pointsIntoNodeDirs', () => {
  const cases: Record<string, { target: string; want: boolean }> = {
    'a container log of the node': { target: '/cache/node/run/pod-logs/ns_pod_uid/c/0.log', want: true },
    'a directory of the node itself': { target: '/run/node', want: true },
    'a sibling with the same prefix': { target: '/run/node-other/x', want: false },
    'anything else': { target: '/var/log/pods/x', want: false },
  };
  for (const [name, { target, want }] of Object.entries(cases)) {
    it(name, () => expect(pointsIntoNodeDirs(target, journal)).to.equal(want));
  }
});
