/**
 * The few ways the node reads and changes the machine: commands with a deadline, sysctls
 * through /proc/sys, links, nftables tables and the mount table.
 */
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import type { NftTable } from './journal';
import { parseMountinfo, type MountEntry } from './mountinfo';

/** The outcome of a command; a non-zero exit is reported, not thrown. */
export interface CommandResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a command with a deadline (SIGKILL when it passes) and optional stdin. */
export function run(command: string, args: readonly string[], opts: { timeoutMs?: number; input?: string } = {}): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      command,
      args,
      { timeout: opts.timeoutMs ?? 30_000, killSignal: 'SIGKILL', maxBuffer: 64 << 20 },
      (err, stdout, stderr) => {
        const code = err === null ? 0 : typeof err.code === 'number' ? err.code : -1;
        if (err !== null && typeof err.code !== 'number' && !err.killed) {
          reject(new Error(`cannot run ${command}: ${err.message}`, { cause: err }));
          return;
        }
        resolve({ code, stdout, stderr: err?.killed ? `${stderr}\n${command} was killed after ${opts.timeoutMs ?? 30_000} ms` : stderr });
      },
    );
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(opts.input ?? '');
  });
}

/** Runs a command and throws, with its stderr, unless it exits 0. */
export async function mustRun(command: string, args: readonly string[], opts: { timeoutMs?: number; input?: string } = {}): Promise<string> {
  const res = await run(command, args, opts);
  if (res.code !== 0) throw new Error(`${command} ${args.join(' ')} exited with ${res.code}: ${res.stderr.trim()}`);
  return res.stdout;
}

function sysctlPath(key: string): string {
  if (!/^[a-z0-9_.-]+$/i.test(key)) throw new Error(`"${key}" is not a sysctl name`);
  return `/proc/sys/${key.replace(/\./g, '/')}`;
}

/** A sysctl's value as /proc/sys shows it (trimmed), or undefined when the kernel has no such key. */
export async function readSysctl(key: string): Promise<string | undefined> {
  try {
    return (await readFile(sysctlPath(key), 'utf8')).trim();
  } catch {
    return undefined;
  }
}

/** Writes a sysctl. */
export async function writeSysctl(key: string, value: string): Promise<void> {
  await writeFile(sysctlPath(key), `${value}\n`);
}

/** Names of the network links of this network namespace. */
export async function linkNames(): Promise<string[]> {
  const links = JSON.parse(await mustRun('ip', ['-j', 'link', 'show'])) as { ifname: string }[];
  return links.map((l) => l.ifname);
}

/** The nftables tables that exist, via `nft -j list tables`. */
export async function nftTables(nft: string): Promise<NftTable[]> {
  const doc = JSON.parse(await mustRun(nft, ['-j', 'list', 'tables'])) as { nftables?: { table?: { family: string; name: string } }[] };
  return (doc.nftables ?? []).flatMap((e) => (e.table ? [{ family: e.table.family, name: e.table.name }] : []));
}

/** This process's mount table. */
export async function mounts(): Promise<MountEntry[]> {
  return parseMountinfo(await readFile('/proc/self/mountinfo', 'utf8'));
}
