/**
 * A snapshot of the machine state a node touches (links, nftables and iptables rules, sysctls,
 * mounts, top-level cgroups), to prove that a stopped node left the machine as it was.
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { linkNames, mounts, run } from './host';
import { cgroupHierarchies } from './mountinfo';

/** What a snapshot holds; every list sorted. */
export interface MachineState {
  readonly links: readonly string[];
  /** `nft list ruleset`, counters zeroed (they move with traffic). */
  readonly nftRuleset: string;
  /** `iptables-save` and `ip6tables-save` without comments and counters; empty without iptables. */
  readonly iptables: string;
  readonly sysctls: Readonly<Record<string, string>>;
  /** `<mount point> <fs type>` per mount. */
  readonly mounts: readonly string[];
  /** Directories directly below each cgroup hierarchy's root. */
  readonly cgroups: readonly string[];
}

/**
 * Sysctls the kernel changes by itself (counters, random values, rates it tunes), and so never
 * evidence of what a node did.
 */
const VOLATILE_SYSCTLS = [
  /^fs\.(dentry-state|file-nr|inode-nr|inode-state|aio-nr)$/,
  /^fs\.quota\./,
  /^kernel\.random\./,
  /^kernel\.(ns_last_pid|perf_event_max_sample_rate)$/,
  /^kernel\.pty\.nr$/,
  /^net\.netfilter\.nf_conntrack_count$/,
];

/** Parses `sysctl -a` output (`key = value` lines). */
export function parseSysctls(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const at = line.indexOf(' = ');
    if (at <= 0) continue;
    const key = line.slice(0, at);
    if (!VOLATILE_SYSCTLS.some((re) => re.test(key))) out[key] = line.slice(at + 3).trim();
  }
  return out;
}

/** The ruleset with packet and byte counts set to zero. */
export function withoutCounters(ruleset: string): string {
  return ruleset.replace(/packets \d+ bytes \d+/g, 'packets 0 bytes 0').replace(/\[\d+:\d+\]/g, '[0:0]');
}

async function iptablesRules(): Promise<string> {
  const parts: string[] = [];
  for (const cmd of ['iptables-save', 'ip6tables-save']) {
    const res = await run(cmd, [], { timeoutMs: 10_000 }).catch(() => undefined);
    if (res?.code === 0)
      parts.push(
        withoutCounters(
          res.stdout
            .split('\n')
            .filter((l) => !l.startsWith('#'))
            .join('\n'),
        ),
      );
  }
  return parts.join('\n');
}

/** Takes a snapshot (needs root for nft and iptables). */
export async function snapshotMachine(nft: string): Promise<MachineState> {
  const mountTable = await mounts();
  const cgroups: string[] = [];
  for (const h of cgroupHierarchies(mountTable)) {
    for (const e of await readdir(h.mountPoint, { withFileTypes: true })) if (e.isDirectory()) cgroups.push(join(h.mountPoint, e.name));
  }
  const sysctl = await run('sysctl', ['-a'], { timeoutMs: 20_000 });
  return {
    links: (await linkNames()).sort(),
    nftRuleset: withoutCounters((await run(nft, ['list', 'ruleset'], { timeoutMs: 10_000 })).stdout),
    iptables: await iptablesRules(),
    sysctls: parseSysctls(sysctl.stdout),
    mounts: mountTable.map((m) => `${m.mountPoint} ${m.fsType}`).sort(),
    cgroups: cgroups.sort(),
  };
}

/** Human-readable differences between two snapshots; empty when they match. */
export function diffMachine(before: MachineState, after: MachineState): string[] {
  const diffs: string[] = [];
  const lists = (what: string, a: readonly string[], b: readonly string[]): void => {
    for (const x of b) if (!a.includes(x)) diffs.push(`${what} added: ${x}`);
    for (const x of a) if (!b.includes(x)) diffs.push(`${what} removed: ${x}`);
  };
  lists('link', before.links, after.links);
  lists('mount', before.mounts, after.mounts);
  lists('cgroup', before.cgroups, after.cgroups);
  if (before.nftRuleset !== after.nftRuleset) diffs.push(`nft ruleset changed:\n--- before\n${before.nftRuleset}\n--- after\n${after.nftRuleset}`);
  if (before.iptables !== after.iptables) diffs.push(`iptables rules changed:\n--- before\n${before.iptables}\n--- after\n${after.iptables}`);
  for (const [key, value] of Object.entries(before.sysctls)) {
    const now = after.sysctls[key];
    if (now === undefined) diffs.push(`sysctl ${key} gone (was ${value})`);
    else if (now !== value) diffs.push(`sysctl ${key} = ${now} (was ${value})`);
  }
  return diffs;
}
