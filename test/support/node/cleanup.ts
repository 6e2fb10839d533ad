/**
 * Puts the machine back as a node's journal says it was: observes what is still in place,
 * asks {@link planCleanup} what to do, does it, and looks again until nothing is left (a killed
 * process may leave a mount busy for a moment). Used by stop(), by the next start after a crash,
 * and by `tsx test/support/node/clean.ts`.
 */
import { chmod, lstat, readdir, readFile, readlink, rm, rmdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { nodeCgroupDirs, pidsIn } from './cgroups';
import { describeStep, planCleanup, pointsIntoNodeDirs, type CleanupStep, type Observed } from './cleanup-plan';
import { linkNames, mounts, nftTables, readSysctl, run, writeSysctl } from './host';
import type { NodeJournal } from './journal';
import { cgroupHierarchies, isWithin, mountsUnder } from './mountinfo';

/** Programs clean-up runs. */
export interface CleanupTools {
  readonly nft: string;
  /** For `kube-proxy --cleanup`; without it kube-proxy's tables are simply deleted. */
  readonly kubeProxy?: string;
}

/** Reads what of the journal is still in place. */
export async function observe(journal: NodeJournal, tools: CleanupTools): Promise<Observed> {
  const mountTable = await mounts();
  const hierarchies = cgroupHierarchies(mountTable);
  const cgroupDirs = await nodeCgroupDirs(hierarchies, journal.cgroup);
  const sysctls: Record<string, string> = {};
  for (const key of Object.keys(journal.sysctls)) {
    const value = await readSysctl(key);
    if (value !== undefined) sysctls[key] = value;
  }
  const hostDirs: Record<string, { mode: number; linksIntoNodeDirs: string[] } | undefined> = {};
  for (const dir of journal.hostDirs) {
    try {
      const st = await stat(dir.path);
      const linksIntoNodeDirs: string[] = [];
      for (const name of await readdir(dir.path)) {
        const path = join(dir.path, name);
        if ((await lstat(path)).isSymbolicLink() && pointsIntoNodeDirs(await readlink(path), journal)) linksIntoNodeDirs.push(path);
      }
      hostDirs[dir.path] = { mode: st.mode & 0o7777, linksIntoNodeDirs };
    } catch {
      hostDirs[dir.path] = undefined;
    }
  }
  const dirs: string[] = [];
  for (const dir of journal.dirs) {
    try {
      await lstat(dir);
      dirs.push(dir);
    } catch {
      // already gone
    }
  }
  return {
    pids: await pidsIn(cgroupDirs),
    mounts: mountsUnder(mountTable, journal.dirs).map((m) => m.mountPoint),
    cgroupDirs,
    links: await linkNames(),
    nftTables: await nftTables(tools.nft),
    sysctls,
    hostDirs,
    dirs,
  };
}

function kill(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

async function removeTree(path: string, journal: NodeJournal): Promise<void> {
  // Never through a mount: rm -r would delete the files of whatever is mounted there.
  const below = mountsUnder(await mounts(), [path]);
  if (below.length > 0) throw new Error(`${path} still has mounts below it (${below.map((m) => m.mountPoint).join(', ')})`);
  if (!journal.dirs.some((d) => isWithin(path, d)) && !journal.hostDirs.some((h) => isWithin(path, h.path))) {
    throw new Error(`refusing to remove ${path}: the journal does not name it`);
  }
  await rm(path, { recursive: true, force: true });
}

async function execute(step: CleanupStep, journal: NodeJournal, tools: CleanupTools): Promise<void> {
  switch (step.kind) {
    case 'kill':
      step.pids.forEach(kill);
      return;
    case 'unmount': {
      const res = await run('umount', [step.path], { timeoutMs: 10_000 });
      // A mount something still holds is detached now and freed when the last user goes.
      if (res.code !== 0) await run('umount', ['-l', step.path], { timeoutMs: 10_000 });
      return;
    }
    case 'remove-cgroup':
      await rmdir(step.path);
      return;
    case 'delete-link':
      await run('ip', ['link', 'delete', step.name], { timeoutMs: 10_000 });
      return;
    case 'kube-proxy-cleanup':
      if (tools.kubeProxy) await run(tools.kubeProxy, ['--cleanup'], { timeoutMs: 30_000 });
      return;
    case 'delete-table':
      await run(tools.nft, ['delete', 'table', step.table.family, step.table.name], { timeoutMs: 10_000 });
      return;
    case 'sysctl':
      await writeSysctl(step.key, step.value);
      return;
    case 'remove':
      await removeTree(step.path, journal);
      return;
    case 'chmod':
      await chmod(step.path, step.mode);
      return;
    default: {
      const never: never = step;
      throw new Error(`unknown step ${String(never)}`);
    }
  }
}

/** Options of {@link cleanUp}. */
export interface CleanUpOptions {
  /** Give up after this long, with the steps that still fail. @default 60 s */
  readonly timeoutMs?: number;
  /** Called with each step before it runs. */
  readonly onStep?: (step: CleanupStep) => void;
}

/**
 * Undoes everything the journal lists, in {@link planCleanup}'s order, until an observation
 * finds nothing left.
 * @throws Error listing what could not be undone when the time is up.
 */
export async function cleanUp(journal: NodeJournal, tools: CleanupTools, opts: CleanUpOptions = {}): Promise<void> {
  const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
  let failures: string[] = [];
  for (;;) {
    const steps = planCleanup(journal, await observe(journal, tools));
    if (steps.length === 0) return;
    if (Date.now() > deadline) {
      throw new Error(
        `cannot restore the machine after the node: ${steps.map(describeStep).join('; ')}${failures.length > 0 ? ` (last errors: ${failures.join('; ')})` : ''}`,
      );
    }
    failures = [];
    for (const step of steps) {
      opts.onStep?.(step);
      try {
        await execute(step, journal, tools);
      } catch (err) {
        failures.push(`${describeStep(step)}: ${err instanceof Error ? err.message : String(err)}`);
      }
      // Killed processes must be gone before their mounts and cgroups can go.
      if (step.kind === 'kill') {
        await waitGone(step.pids, Math.min(10_000, Math.max(0, deadline - Date.now())));
      }
    }
    if (failures.length > 0) await sleep(200);
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function waitGone(pids: readonly number[], timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  // A killed child of this process stays a zombie until reaped; it no longer holds anything.
  const zombie = async (pid: number): Promise<boolean> => {
    try {
      return /^State:\s+Z/m.test(await readFile(`/proc/${pid}/status`, 'utf8'));
    } catch {
      return true;
    }
  };
  for (;;) {
    const left: number[] = [];
    for (const pid of pids) if (alive(pid) && !(await zombie(pid))) left.push(pid);
    if (left.length === 0 || Date.now() > until) return;
    await sleep(50);
  }
}
