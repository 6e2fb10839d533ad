/**
 * The node's private cgroup: one directory of the same name under the root of every mounted
 * hierarchy. kubelet puts Pods below it (`cgroupRoot`), and the node's daemons join its
 * `system` child before they start, so every process the node ever ran (shims included, which
 * leave their parent's process group) is found by reading the tree, and clean-up ends with a
 * few `rmdir`s.
 */
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { CgroupHierarchy } from './mountinfo';

/** The child of the node's cgroup the daemons run in. */
export const SYSTEM_CGROUP = 'system';

// A new v1 cpuset group has no CPUs and no memory nodes, and no process may join it until
// they are copied from the parent.
async function copyCpuset(parent: string, child: string): Promise<void> {
  for (const file of ['cpuset.cpus', 'cpuset.mems']) {
    const value = (await readFile(join(parent, file), 'utf8')).trim();
    await writeFile(join(child, file), value);
  }
}

// On the unified hierarchy, controllers are offered to children only when the parent enables
// them; processes then live in leaves (here: `system`).
async function enableControllers(dir: string): Promise<void> {
  const available = (await readFile(join(dir, 'cgroup.controllers'), 'utf8')).trim();
  if (available === '') return;
  await writeFile(
    join(dir, 'cgroup.subtree_control'),
    available
      .split(/\s+/)
      .map((c) => `+${c}`)
      .join(' '),
  );
}

/**
 * Creates `<hierarchy>/<name>` and `<hierarchy>/<name>/system` in every hierarchy (an existing
 * directory is kept) and returns the `cgroup.procs` files of `system`, which a daemon writes its
 * pid into before it execs.
 */
export async function createNodeCgroup(hierarchies: readonly CgroupHierarchy[], name: string): Promise<string[]> {
  const procsFiles: string[] = [];
  for (const h of hierarchies) {
    const root = join(h.mountPoint, name);
    const system = join(root, SYSTEM_CGROUP);
    await mkdir(root, { recursive: true });
    if (h.cpuset) await copyCpuset(h.mountPoint, root);
    if (h.version === 2) await enableControllers(root);
    await mkdir(system, { recursive: true });
    if (h.cpuset) await copyCpuset(root, system);
    procsFiles.push(join(system, 'cgroup.procs'));
  }
  return procsFiles;
}

/** Every directory of the node's cgroup tree in every hierarchy, parents before children. */
export async function nodeCgroupDirs(hierarchies: readonly CgroupHierarchy[], name: string): Promise<string[]> {
  const found: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    let entries;
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch {
      return; // gone, or never created in this hierarchy
    }
    found.push(dir);
    for (const e of entries) if (e.isDirectory()) await walk(join(dir, e.name));
  };
  for (const h of hierarchies) await walk(join(h.mountPoint, name));
  return found;
}

/** The processes in any of the given cgroup directories. */
export async function pidsIn(dirs: readonly string[]): Promise<number[]> {
  const pids = new Set<number>();
  for (const dir of dirs) {
    try {
      for (const line of (await readFile(join(dir, 'cgroup.procs'), 'utf8')).split('\n')) {
        if (/^\d+$/.test(line)) pids.add(Number(line));
      }
    } catch {
      // removed meanwhile
    }
  }
  return [...pids];
}

/**
 * The shell wrapper a daemon starts through: it moves itself into the given cgroups (each a
 * `cgroup.procs` file) and then execs the daemon, so the daemon and all it forks are inside
 * from its first instruction on. Use as `bash -c JOIN_AND_EXEC join <n> <files...> <cmd> <args...>`.
 */
export const JOIN_AND_EXEC = 'n="$1"; shift; for ((i = 0; i < n; i++)); do echo $$ > "$1" || exit 125; shift; done; exec "$@"';

/** The command and arguments that run `command args` inside the cgroups of `procsFiles`. */
export function inCgroups(procsFiles: readonly string[], command: string, args: readonly string[]): { command: string; args: string[] } {
  return { command: 'bash', args: ['-c', JOIN_AND_EXEC, 'join-cgroup', String(procsFiles.length), ...procsFiles, command, ...args] };
}
