/**
 * The egress guard: an nftables table that keeps every packet of the node's Pods and Services
 * on this machine. The CNI bridge plugin turns on `net.ipv4.ip_forward`, and with a default
 * route on the uplink a Pod's packet to any outside address would otherwise be routed out.
 *
 * The table hooks forward and postrouting at priority -300, before anything kube-proxy or
 * another firewall adds (NAT runs at -100 and 100, filter at 0), and drops:
 * - forwarded packets that came in on the bridge or a veth and do not go back out the bridge;
 * - packets from or to the Pod and Service ranges that leave by any interface but the bridge
 *   or loopback (this also catches host-originated traffic to a Service address that no rule
 *   translated, which the default route would send out).
 * An input chain keeps the node-facing TCP ports (the API server, which listens on all
 * addresses so Pods can reach it on the bridge) closed to every interface but loopback and the
 * bridge. Drops are counted in named counters, so a test can prove a drop happened.
 */
import type { NodeNetwork } from './network';

/** The table the guard owns; nothing else is ever written into it. */
export const GUARD_TABLE = { family: 'inet', name: 'bucketoperator_node_guard' } as const;

/** Named counters of the guard table. */
export const GUARD_COUNTERS = {
  /** Packets of Pods or Services that would have left the machine. */
  egress: 'egress_dropped',
  /** Packets from another host towards a node-facing port. */
  inbound: 'inbound_dropped',
} as const;

/** What the guard protects. */
export interface GuardOptions {
  readonly network: NodeNetwork;
  /** TCP ports on this machine that only loopback and the bridge may reach. */
  readonly localOnlyTcpPorts: readonly number[];
}

const PRIORITY = -300;

function quoted(name: string): string {
  if (!/^[A-Za-z0-9_.*-]+$/.test(name)) throw new Error(`interface name "${name}" cannot go into an nft rule`);
  return `"${name}"`;
}

/**
 * The nft script that installs (or atomically replaces) the guard table: `nft -f -` applies it
 * as one transaction, so there is no moment with a half-written guard.
 */
export function guardRuleset(opts: GuardOptions): string {
  const { bridge, podCidr, serviceCidr } = opts.network;
  const br = quoted(bridge);
  const local = `{ ${br}, "lo" }`;
  const ranges = `{ ${podCidr}, ${serviceCidr} }`;
  const egress = `counter name "${GUARD_COUNTERS.egress}" drop`;
  const { family, name } = GUARD_TABLE;
  const ports = [...new Set(opts.localOnlyTcpPorts)].sort((a, b) => a - b);
  for (const p of ports) if (!Number.isInteger(p) || p < 1 || p > 65535) throw new Error(`${p} is not a TCP port`);
  const lines = [
    // Declaring the table first makes the delete valid when it does not exist yet.
    `table ${family} ${name}`,
    `delete table ${family} ${name}`,
    `table ${family} ${name} {`,
    `  counter ${GUARD_COUNTERS.egress} {}`,
    `  counter ${GUARD_COUNTERS.inbound} {}`,
    `  chain forward {`,
    `    type filter hook forward priority ${PRIORITY}; policy accept;`,
    `    iifname ${br} oifname != ${br} ${egress}`,
    `    iifname "veth*" oifname != ${br} ${egress}`,
    `    ip saddr ${ranges} oifname != ${br} ${egress}`,
    `    ip daddr ${ranges} oifname != ${br} ${egress}`,
    `  }`,
    `  chain postrouting {`,
    `    type filter hook postrouting priority ${PRIORITY}; policy accept;`,
    `    iifname ${br} oifname != ${br} ${egress}`,
    `    iifname "veth*" oifname != ${br} ${egress}`,
    `    ip saddr ${ranges} oifname != ${local} ${egress}`,
    `    ip daddr ${ranges} oifname != ${local} ${egress}`,
    `  }`,
    `  chain input {`,
    `    type filter hook input priority ${PRIORITY}; policy accept;`,
    ...(ports.length > 0 ? [`    iifname != ${local} tcp dport { ${ports.join(', ')} } counter name "${GUARD_COUNTERS.inbound}" drop`] : []),
    `  }`,
    `}`,
  ];
  return `${lines.join('\n')}\n`;
}

/**
 * The packet count of a named counter from `nft -j list counter <family> <table> <name>`.
 * @throws Error when the output holds no such counter.
 */
export function counterPackets(nftJson: string, counter: string): number {
  const doc = JSON.parse(nftJson) as { nftables?: { counter?: { name?: string; packets?: number } }[] };
  const found = doc.nftables?.find((e) => e.counter?.name === counter)?.counter;
  if (found?.packets === undefined) throw new Error(`nft output has no counter "${counter}"`);
  return found.packets;
}
