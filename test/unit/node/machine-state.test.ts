/** Comparing two snapshots of the machine: what a stopped node must have left as it was. */
import { expect } from 'chai';
import { diffMachine, parseSysctls, withoutCounters, type MachineState } from '../../support/node/machine-state';

const state: MachineState = {
  links: ['eth0', 'lo'],
  nftRuleset: '',
  iptables: '',
  sysctls: { 'net.ipv4.ip_forward': '0', 'kernel.panic': '1' },
  mounts: ['/ ext4'],
  cgroups: ['/sys/fs/cgroup/memory/user'],
};

describe('node: diffMachine', () => {
  const cases: Record<string, { after: MachineState; want: string[] }> = {
    'the same state: no difference': { after: state, want: [] },
    'a leftover link, mount and cgroup': {
      after: {
        ...state,
        links: ['bucketop0', 'eth0', 'lo'],
        mounts: ['/ ext4', '/run/node/netns/cni-1 nsfs'],
        cgroups: [...state.cgroups, '/sys/fs/cgroup/memory/bucketoperator-node'],
      },
      want: ['link added: bucketop0', 'mount added: /run/node/netns/cni-1 nsfs', 'cgroup added: /sys/fs/cgroup/memory/bucketoperator-node'],
    },
    'a sysctl left changed, one gone, and one new that is not compared': {
      after: { ...state, sysctls: { 'net.ipv4.ip_forward': '1', 'net.new': 'x' } },
      want: ['sysctl net.ipv4.ip_forward = 1 (was 0)', 'sysctl kernel.panic gone (was 1)'],
    },
    'a removed link': { after: { ...state, links: ['lo'] }, want: ['link removed: eth0'] },
  };
  for (const [name, { after, want }] of Object.entries(cases)) it(name, () => expect(diffMachine(state, after)).to.deep.equal(want));

  it('shows a changed ruleset whole', () => {
    const [diff] = diffMachine(state, { ...state, nftRuleset: 'table inet guard {\n}\n' });
    expect(diff).to.include('nft ruleset changed').and.to.include('table inet guard');
  });
});

describe('node: parseSysctls', () => {
  it('reads key = value lines and leaves out what the kernel changes by itself', () => {
    const text = [
      'net.ipv4.ip_forward = 0',
      'fs.file-nr = 1 0 9',
      'kernel.random.uuid = abc',
      'net.ipv4.tcp_rmem = 4096\t131072\t6291456',
      'not a line',
    ].join('\n');
    expect(parseSysctls(text)).to.deep.equal({ 'net.ipv4.ip_forward': '0', 'net.ipv4.tcp_rmem': '4096\t131072\t6291456' });
  });
});

describe('node: withoutCounters', () => {
  it('zeroes nft and iptables-save counters, which move with traffic', () => {
    expect(withoutCounters('counter packets 12 bytes 3400 drop\n:INPUT ACCEPT [5:300]')).to.equal(
      'counter packets 0 bytes 0 drop\n:INPUT ACCEPT [0:0]',
    );
  });
});
