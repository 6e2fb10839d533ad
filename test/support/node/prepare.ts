/**
 * What happens before a node changes anything: the checks that nothing foreign is in its way,
 * and the journal of everything it may change, with the values to restore.
 */
import { stat } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { dirname } from 'node:path';
import { GUARD_TABLE } from './egress-guard';
import { linkNames, nftTables, readSysctl } from './host';
import type { HostDir, NodeJournal } from './journal';
import { HOST_DIRS, KUBE_PROXY_TABLES, NODE_CGROUP, TOUCHED_SYSCTLS, type NodeLayout } from './layout';
import type { NodeNetwork } from './network';

/** Ports that were free on 127.0.0.1 a moment ago, all different. */
export async function freePorts(count: number): Promise<number[]> {
  const held = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<{ port: number; close: () => Promise<void> }>((resolve, reject) => {
          const server = createServer();
          server.once('error', reject);
          server.listen(0, '127.0.0.1', () =>
            resolve({ port: (server.address() as AddressInfo).port, close: () => new Promise((r) => server.close(() => r())) }),
          );
        }),
    ),
  );
  // All stay open until every port is known, so none is handed out twice.
  await Promise.all(held.map((h) => h.close()));
  return held.map((h) => h.port);
}

async function modeOf(path: string): Promise<number | undefined> {
  try {
    return (await stat(path)).mode & 0o7777;
  } catch {
    return undefined;
  }
}

/** How `path` is now; when missing, its outermost missing ancestor is what a daemon will create. */
export async function hostDirState(path: string): Promise<HostDir> {
  const mode = await modeOf(path);
  if (mode !== undefined) return { path, existed: true, mode };
  let missing = path;
  for (let parent = dirname(missing); parent !== missing && (await modeOf(parent)) === undefined; parent = dirname(parent)) missing = parent;
  return { path: missing, existed: false };
}

/** Fails when the node cannot run here, or something it would create exists without a journal naming it. */
export async function preflight(nft: string, network: NodeNetwork): Promise<void> {
  if (process.platform !== 'linux') throw new Error('a local node needs Linux');
  if (process.getuid?.() !== 0) throw new Error('a local node needs root (it creates links, nftables rules, cgroups and mounts)');
  if ((await linkNames()).includes(network.bridge)) {
    throw new Error(`link ${network.bridge} exists but no node journal names it: remove it (ip link delete ${network.bridge}) if it is a leftover`);
  }
  const tables = await nftTables(nft);
  for (const t of [GUARD_TABLE, ...KUBE_PROXY_TABLES]) {
    if (tables.some((o) => o.family === t.family && o.name === t.name)) {
      throw new Error(
        `nft table ${t.family} ${t.name} exists but no node journal names it: another kube-proxy or node runs here, or remove it (nft delete table ${t.family} ${t.name})`,
      );
    }
  }
}

/** The journal of a node about to start: what it may change, and how things are now. */
export async function newJournal(layout: NodeLayout, network: NodeNetwork): Promise<NodeJournal> {
  const sysctls: Record<string, string> = {};
  for (const key of TOUCHED_SYSCTLS) {
    const value = await readSysctl(key);
    if (value !== undefined) sysctls[key] = value;
  }
  return {
    version: 1,
    ownerPid: process.pid,
    startedAt: new Date().toISOString(),
    dirs: [layout.runDir, layout.stateDir],
    cgroup: NODE_CGROUP,
    links: [network.bridge],
    guardTable: GUARD_TABLE,
    nftTables: KUBE_PROXY_TABLES,
    sysctls,
    hostDirs: await Promise.all(HOST_DIRS.map(hostDirState)),
  };
}
