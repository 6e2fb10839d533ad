/**
 * What it takes to put the machine back, decided from the journal and what is observed now,
 * with no I/O. The order matters and is fixed here:
 * 1. kill every process in the node's cgroups (daemons, shims, containers), so nothing holds a
 *    mount, a network namespace or a cgroup any more;
 * 2. unmount everything below the node's directories, innermost first (a Pod's network
 *    namespace goes with its mount, and its veth with it);
 * 3. remove the node's cgroups, innermost first;
 * 4. delete the node's links, then kube-proxy's rules and tables;
 * 5. restore the sysctls (ip_forward off again), and only then drop the egress guard;
 * 6. restore host directories and remove the node's own.
 */
import { isWithin } from './mountinfo';
import type { NftTable, NodeJournal } from './journal';

/** The state of the machine as far as the journal is concerned. */
export interface Observed {
  /** Processes in any of the node's cgroups. */
  readonly pids: readonly number[];
  /** Mount points below the node's directories, in unmount order. */
  readonly mounts: readonly string[];
  /** Existing directories of the node's cgroup tree, in every hierarchy. */
  readonly cgroupDirs: readonly string[];
  /** Links that exist now. */
  readonly links: readonly string[];
  /** nftables tables that exist now. */
  readonly nftTables: readonly NftTable[];
  /** Current values of the journal's sysctls. */
  readonly sysctls: Readonly<Record<string, string>>;
  /** Host directories of the journal as they are now. */
  readonly hostDirs: Readonly<Record<string, { readonly mode: number; readonly linksIntoNodeDirs: readonly string[] } | undefined>>;
  /** Which of the journal's own directories exist. */
  readonly dirs: readonly string[];
}

/** One action of a clean-up. */
export type CleanupStep =
  | { readonly kind: 'kill'; readonly pids: readonly number[] }
  | { readonly kind: 'unmount'; readonly path: string }
  | { readonly kind: 'remove-cgroup'; readonly path: string }
  | { readonly kind: 'delete-link'; readonly name: string }
  | { readonly kind: 'kube-proxy-cleanup' }
  | { readonly kind: 'delete-table'; readonly table: NftTable }
  | { readonly kind: 'sysctl'; readonly key: string; readonly value: string }
  | { readonly kind: 'remove'; readonly path: string }
  | { readonly kind: 'chmod'; readonly path: string; readonly mode: number };

const sameTable = (a: NftTable, b: NftTable): boolean => a.family === b.family && a.name === b.name;

// Sysctl values as /proc/sys shows them: tabs between numbers, as `sysctl -w` also accepts.
const normalise = (value: string): string => value.trim().split(/\s+/).join(' ');

/** The steps that undo everything the journal lists and the observation shows still in place. */
export function planCleanup(journal: NodeJournal, observed: Observed): CleanupStep[] {
  const steps: CleanupStep[] = [];
  if (observed.pids.length > 0) steps.push({ kind: 'kill', pids: [...observed.pids].sort((a, b) => a - b) });
  for (const path of observed.mounts) steps.push({ kind: 'unmount', path });
  const depth = (p: string): number => p.split('/').length;
  const cgroups = [...observed.cgroupDirs].sort((a, b) => depth(b) - depth(a) || (a < b ? 1 : -1));
  for (const path of cgroups) steps.push({ kind: 'remove-cgroup', path });
  for (const name of journal.links) if (observed.links.includes(name)) steps.push({ kind: 'delete-link', name });

  const leftTables = journal.nftTables.filter((t) => observed.nftTables.some((o) => sameTable(o, t)));
  if (leftTables.length > 0) steps.push({ kind: 'kube-proxy-cleanup' });
  for (const table of leftTables) steps.push({ kind: 'delete-table', table });

  for (const [key, value] of Object.entries(journal.sysctls)) {
    const now = observed.sysctls[key];
    if (now !== undefined && normalise(now) !== normalise(value)) steps.push({ kind: 'sysctl', key, value });
  }
  if (observed.nftTables.some((t) => sameTable(t, journal.guardTable))) steps.push({ kind: 'delete-table', table: journal.guardTable });

  for (const dir of journal.hostDirs) {
    const now = observed.hostDirs[dir.path];
    if (now === undefined) continue;
    if (!dir.existed) {
      steps.push({ kind: 'remove', path: dir.path });
      continue;
    }
    for (const link of now.linksIntoNodeDirs) steps.push({ kind: 'remove', path: link });
    if (dir.mode !== undefined && now.mode !== dir.mode) steps.push({ kind: 'chmod', path: dir.path, mode: dir.mode });
  }
  for (const dir of journal.dirs) if (observed.dirs.includes(dir)) steps.push({ kind: 'remove', path: dir });
  return steps;
}

/** True when a symlink target points into one of the node's directories. */
export function pointsIntoNodeDirs(target: string, journal: Pick<NodeJournal, 'dirs'>): boolean {
  return journal.dirs.some((d) => isWithin(target, d));
}

/** A one-line description of a step, for logs and errors. */
export function describeStep(step: CleanupStep): string {
  switch (step.kind) {
    case 'kill':
      return `kill ${step.pids.length} process(es) of the node`;
    case 'unmount':
      return `unmount ${step.path}`;
    case 'remove-cgroup':
      return `remove cgroup ${step.path}`;
    case 'delete-link':
      return `delete link ${step.name}`;
    case 'kube-proxy-cleanup':
      return 'kube-proxy --cleanup';
    case 'delete-table':
      return `delete nft table ${step.table.family} ${step.table.name}`;
    case 'sysctl':
      return `sysctl ${step.key}=${step.value}`;
    case 'remove':
      return `remove ${step.path}`;
    case 'chmod':
      return `chmod ${step.mode.toString(8)} ${step.path}`;
    default: {
      const never: never = step;
      return String(never);
    }
  }
}
