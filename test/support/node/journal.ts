/**
 * The node's journal: everything a node may change on the machine, written BEFORE the first
 * change, so that whoever finds it (stop(), or the next start after a crash) can put the machine
 * back without knowing how far the run got. Every entry is safe to undo when the change never
 * happened: removing what does not exist is a no-op, and a sysctl is restored to the value it
 * had before the node started.
 */
import { readFile, rename, rm, writeFile } from 'node:fs/promises';

/** An nftables table. */
export interface NftTable {
  readonly family: string;
  readonly name: string;
}

/** A directory of the machine that the node's daemons may create or write into. */
export interface HostDir {
  readonly path: string;
  /** Whether it existed before the node started; one that did not is removed whole. */
  readonly existed: boolean;
  /** Its permission bits before the node started (kubelet changes them), when it existed. */
  readonly mode?: number;
}

/** What a node may have changed, recorded before it changes anything. */
export interface NodeJournal {
  readonly version: 1;
  /** The process that started the node, for messages. */
  readonly ownerPid: number;
  readonly startedAt: string;
  /** Directories that are the node's alone: everything mounted below is unmounted, then they are removed. */
  readonly dirs: readonly string[];
  /** The node's cgroup, the same relative path under every hierarchy, e.g. `bucketoperator-node`. */
  readonly cgroup: string;
  /** Network links the node creates. */
  readonly links: readonly string[];
  /** The egress guard's table; removed last, once nothing forwards any more. */
  readonly guardTable: NftTable;
  /** Other nftables tables the node's daemons create (kube-proxy's), absent before the start. */
  readonly nftTables: readonly NftTable[];
  /** Original values of every sysctl the node or its daemons may write, by dotted name. */
  readonly sysctls: Readonly<Record<string, string>>;
  readonly hostDirs: readonly HostDir[];
}

/** Reads the journal, or undefined when there is none. */
export async function readJournal(path: string): Promise<NodeJournal | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  const parsed = JSON.parse(text) as Partial<NodeJournal>;
  if (parsed.version !== 1) throw new Error(`${path} is not a node journal this code understands (version ${String(parsed.version)})`);
  return parsed as NodeJournal;
}

/** Writes the journal whole or not at all, so a crash never leaves half of one. */
export async function writeJournal(path: string, journal: NodeJournal): Promise<void> {
  const partial = `${path}.partial`;
  await writeFile(partial, `${JSON.stringify(journal, null, 2)}\n`);
  await rename(partial, path);
}

/** Removes the journal once everything it lists is undone. */
export async function removeJournal(path: string): Promise<void> {
  await rm(path, { force: true });
}
