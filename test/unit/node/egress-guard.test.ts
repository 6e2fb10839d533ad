/** The egress guard's nft script: which packets it drops, where it hooks, and its counters. */
import { expect } from 'chai';
import { counterPackets, GUARD_COUNTERS, GUARD_TABLE, guardRuleset } from '../../support/node/egress-guard';
import { NODE_NETWORK } from '../../support/node/network';

const script = guardRuleset({ network: NODE_NETWORK, localOnlyTcpPorts: [10250, 6443, 6443] });
const lines = script.split('\n').map((l) => l.trim());
const chain = (name: string): string[] => {
  const start = lines.indexOf(`chain ${name} {`);
  return lines.slice(start + 1, lines.indexOf('}', start));
};

describe('node: guardRuleset', () => {
  it('replaces the whole table in one transaction, even when it does not exist yet', () => {
    expect(lines.slice(0, 3)).to.deep.equal([
      `table ${GUARD_TABLE.family} ${GUARD_TABLE.name}`,
      `delete table ${GUARD_TABLE.family} ${GUARD_TABLE.name}`,
      `table ${GUARD_TABLE.family} ${GUARD_TABLE.name} {`,
    ]);
  });

  const hooks: Record<string, string> = { forward: 'forward', postrouting: 'postrouting', input: 'input' };
  for (const [name, hook] of Object.entries(hooks)) {
    it(`hooks ${hook} at priority -300, before NAT and every filter, accepting what it does not drop`, () => {
      expect(chain(name)[0]).to.equal(`type filter hook ${hook} priority -300; policy accept;`);
    });
  }

  const drops: Record<string, { chain: string; rule: string }> = {
    'forwarded packets from the bridge that do not go back to it': { chain: 'forward', rule: 'iifname "bucketop0" oifname != "bucketop0"' },
    'forwarded packets from a veth that do not go to the bridge': { chain: 'forward', rule: 'iifname "veth*" oifname != "bucketop0"' },
    'forwarded packets from Pod or Service addresses off the bridge': {
      chain: 'forward',
      rule: 'ip saddr { 100.64.0.0/24, 100.65.0.0/16 } oifname != "bucketop0"',
    },
    'forwarded packets to Pod or Service addresses off the bridge': {
      chain: 'forward',
      rule: 'ip daddr { 100.64.0.0/24, 100.65.0.0/16 } oifname != "bucketop0"',
    },
    'any packet from Pod or Service addresses leaving by the uplink': {
      chain: 'postrouting',
      rule: 'ip saddr { 100.64.0.0/24, 100.65.0.0/16 } oifname != { "bucketop0", "lo" }',
    },
    'a host packet to an untranslated Service address, which the default route would send out': {
      chain: 'postrouting',
      rule: 'ip daddr { 100.64.0.0/24, 100.65.0.0/16 } oifname != { "bucketop0", "lo" }',
    },
  };
  for (const [name, { chain: c, rule }] of Object.entries(drops)) {
    it(`drops and counts ${name}`, () => expect(chain(c)).to.include(`${rule} counter name "${GUARD_COUNTERS.egress}" drop`));
  }

  it('closes the node-facing ports to every interface but loopback and the bridge, each port once', () => {
    expect(chain('input')).to.deep.equal([
      'type filter hook input priority -300; policy accept;',
      `iifname != { "bucketop0", "lo" } tcp dport { 6443, 10250 } counter name "${GUARD_COUNTERS.inbound}" drop`,
    ]);
  });

  it('refuses names and ports that cannot go into a rule', () => {
    expect(() => guardRuleset({ network: { ...NODE_NETWORK, bridge: 'br0"; flush ruleset' }, localOnlyTcpPorts: [] })).to.throw(
      'cannot go into an nft rule',
    );
    expect(() => guardRuleset({ network: NODE_NETWORK, localOnlyTcpPorts: [70000] })).to.throw('not a TCP port');
  });
});

describe('node: counterPackets', () => {
  const json = JSON.stringify({
    nftables: [
      { metainfo: { version: '1.0.6' } },
      { counter: { family: 'inet', name: 'egress_dropped', table: 'bucketoperator_node_guard', handle: 1, packets: 3, bytes: 180 } },
    ],
  });
  it('reads the packet count of the named counter', () => expect(counterPackets(json, 'egress_dropped')).to.equal(3));
  it('throws when the counter is missing', () => expect(() => counterPackets(json, 'inbound_dropped')).to.throw('no counter "inbound_dropped"'));
});
