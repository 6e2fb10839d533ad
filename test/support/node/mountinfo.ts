/**
 * /proc/self/mountinfo, parsed: which mounts lie under the node's directories (to unmount them,
 * innermost first) and where the cgroup hierarchies are.
 */

/** One line of mountinfo. */
export interface MountEntry {
  /** Unique mount id; a later mount on the same point has a higher one. */
  readonly id: number;
  readonly mountPoint: string;
  readonly fsType: string;
  /** Super-block options, e.g. the controllers of a cgroup v1 hierarchy (`rw,memory`). */
  readonly superOptions: string;
}

// Spaces, tabs, newlines and backslashes in paths are written as \040, \011, \012, \134.
function unescape(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, oct: string) => String.fromCharCode(parseInt(oct, 8)));
}

/** Parses mountinfo text (see proc(5)); malformed lines are skipped. */
export function parseMountinfo(text: string): MountEntry[] {
  const entries: MountEntry[] = [];
  for (const line of text.split('\n')) {
    const fields = line.split(' ');
    const sep = fields.indexOf('-');
    if (fields.length < 10 || sep < 6) continue;
    entries.push({
      id: Number(fields[0]),
      mountPoint: unescape(fields[4]!),
      fsType: fields[sep + 1]!,
      superOptions: fields[sep + 3] ?? '',
    });
  }
  return entries;
}

/** True when `path` is `dir` or inside it. */
export function isWithin(path: string, dir: string): boolean {
  const d = dir.endsWith('/') ? dir.slice(0, -1) : dir;
  return path === d || path.startsWith(`${d}/`);
}

/**
 * The mounts at or below any of `dirs`, in the order they can be unmounted: deeper paths first,
 * and of two mounts on one point the upper (later) one first.
 */
export function mountsUnder(entries: readonly MountEntry[], dirs: readonly string[]): MountEntry[] {
  const depth = (p: string): number => p.split('/').length;
  return entries.filter((e) => dirs.some((d) => isWithin(e.mountPoint, d))).sort((a, b) => depth(b.mountPoint) - depth(a.mountPoint) || b.id - a.id);
}

/** A mounted cgroup hierarchy. */
export interface CgroupHierarchy {
  readonly mountPoint: string;
  /** 1 for a v1 hierarchy (one or more controllers, or a named one), 2 for the unified one. */
  readonly version: 1 | 2;
  /** True for the v1 cpuset hierarchy, whose new groups start with no CPUs and no memory nodes. */
  readonly cpuset: boolean;
}

/** The cgroup hierarchies among the mounts, each mount point once. */
export function cgroupHierarchies(entries: readonly MountEntry[]): CgroupHierarchy[] {
  const seen = new Map<string, CgroupHierarchy>();
  for (const e of entries) {
    if (e.fsType !== 'cgroup' && e.fsType !== 'cgroup2') continue;
    if (seen.has(e.mountPoint)) continue;
    const version = e.fsType === 'cgroup2' ? 2 : 1;
    seen.set(e.mountPoint, { mountPoint: e.mountPoint, version, cpuset: version === 1 && e.superOptions.split(',').includes('cpuset') });
  }
  return [...seen.values()];
}
