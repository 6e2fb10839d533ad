/** Reading /proc/self/mountinfo: what lies below the node's directories, and the cgroup hierarchies. */
import { expect } from 'chai';
import { cgroupHierarchies, isWithin, mountsUnder, parseMountinfo } from '../../support/node/mountinfo';

const MOUNTINFO = [
  '22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw',
  '30 22 0:26 / /sys/fs/cgroup ro shared:9 - tmpfs tmpfs ro,mode=755',
  '31 30 0:27 / /sys/fs/cgroup/cpuset rw shared:10 - cgroup cgroup rw,cpuset',
  '32 30 0:28 / /sys/fs/cgroup/memory rw shared:11 - cgroup cgroup rw,memory',
  '33 30 0:29 / /sys/fs/cgroup/unified rw shared:12 - cgroup2 cgroup2 rw',
  '40 22 254:0 /cache/node/run/kubelet /cache/node/run/kubelet rw shared:1 - ext4 /dev/vda rw',
  '41 40 0:50 / /cache/node/run/kubelet/pods/uid/volumes/kubernetes.io~projected/kube-api-access rw - tmpfs tmpfs rw',
  '42 22 0:51 / /run/node/containerd/io.containerd.runtime.v2.task/k8s.io/abc/rootfs rw - overlay overlay rw,lowerdir=/x',
  '43 22 0:4 net:[4026532] /run/node/netns/cni-1 rw - nsfs nsfs rw',
  '44 22 0:52 / /run/node/netns/cni-1 rw - nsfs nsfs rw',
  '45 22 0:53 / /run/node-other rw - tmpfs tmpfs rw',
  '46 22 0:54 / /mnt/with\\040space rw - tmpfs tmpfs rw',
  'garbage',
].join('\n');

describe('node: parseMountinfo', () => {
  const entries = parseMountinfo(MOUNTINFO);
  it('reads id, mount point, type and super options of every well-formed line', () => {
    expect(entries).to.have.length(12);
    expect(entries[2]).to.deep.equal({ id: 31, mountPoint: '/sys/fs/cgroup/cpuset', fsType: 'cgroup', superOptions: 'rw,cpuset' });
  });
  it('unescapes octal escapes in paths', () => expect(entries.at(-1)?.mountPoint).to.equal('/mnt/with space'));

  it('lists the mounts below the node directories innermost first, the upper of stacked mounts first', () => {
    expect(mountsUnder(entries, ['/cache/node/run', '/run/node']).map((m) => `${m.id} ${m.mountPoint}`)).to.deep.equal([
      '41 /cache/node/run/kubelet/pods/uid/volumes/kubernetes.io~projected/kube-api-access',
      '42 /run/node/containerd/io.containerd.runtime.v2.task/k8s.io/abc/rootfs',
      '44 /run/node/netns/cni-1',
      '43 /run/node/netns/cni-1',
      '40 /cache/node/run/kubelet',
    ]);
  });

  it('finds the cgroup hierarchies, marking cpuset and the unified one', () => {
    expect(cgroupHierarchies(entries)).to.deep.equal([
      { mountPoint: '/sys/fs/cgroup/cpuset', version: 1, cpuset: true },
      { mountPoint: '/sys/fs/cgroup/memory', version: 1, cpuset: false },
      { mountPoint: '/sys/fs/cgroup/unified', version: 2, cpuset: false },
    ]);
  });
});

describe('node: isWithin', () => {
  const cases: Record<string, { path: string; dir: string; want: boolean }> = {
    'the directory itself': { path: '/run/node', dir: '/run/node', want: true },
    'a path below it': { path: '/run/node/a/b', dir: '/run/node/', want: true },
    'a sibling sharing the prefix': { path: '/run/node-other', dir: '/run/node', want: false },
    'a parent': { path: '/run', dir: '/run/node', want: false },
  };
  for (const [name, { path, dir, want }] of Object.entries(cases)) it(name, () => expect(isWithin(path, dir)).to.equal(want));
});
