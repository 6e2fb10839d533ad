/**
 * Where the node's programs are: the ones build.sh caches by version, and the ones Debian's
 * packages install (scripts/install-node-packages.sh).
 */
import { constants } from 'node:fs';
import { access, readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { pinnedVersions } from '../control-plane/binaries';

/** Absolute paths of the programs a node runs. */
export interface NodeBinaries {
  readonly kubelet: string;
  readonly kubeProxy: string;
  readonly kubeScheduler: string;
  readonly containerd: string;
  /** Directory of containerd-shim-runc-v2, which containerd finds on PATH. */
  readonly shimDir: string;
  readonly ctr: string;
  readonly coredns: string;
  readonly pause: string;
  readonly runc: string;
  readonly nft: string;
  readonly cniBinDir: string;
  /** Debian's static busybox, for test images. */
  readonly busybox: string;
}

/** The versions pinned in node/versions.env, plus the control plane's Kubernetes version. */
export interface NodeVersions {
  readonly kubernetes: string;
  readonly containerd: string;
  readonly coredns: string;
  readonly pauseTag: string;
}

/** Reads test/support/node/versions.env and the control plane's Kubernetes version. */
export async function nodeVersions(): Promise<NodeVersions> {
  const text = await readFile(join(__dirname, 'versions.env'), 'utf8');
  const values = new Map<string, string>();
  for (const line of text.split('\n')) {
    const match = /^\s*([A-Z0-9_]+)=(\S+)\s*$/.exec(line);
    if (match) values.set(match[1]!, match[2]!);
  }
  const get = (key: string): string => {
    const v = values.get(key);
    if (!v) throw new Error(`test/support/node/versions.env must set ${key}`);
    return v;
  };
  const { kubernetes } = await pinnedVersions();
  return { kubernetes, containerd: get('CONTAINERD_VERSION'), coredns: get('COREDNS_VERSION'), pauseTag: get('PAUSE_TAG') };
}

/** The cache root build scripts share: `${BUCKETOPERATOR_CACHE:-$HOME/.cache/bucketoperator}`. */
export function cacheRoot(env: NodeJS.ProcessEnv = process.env): string {
  return env.BUCKETOPERATOR_CACHE || join(homedir(), '.cache', 'bucketoperator');
}

/** The cache directories build.sh fills, each finished when it holds `.complete`. */
export function nodeCacheDirs(versions: NodeVersions, root: string): { kubernetes: string; containerd: string; coredns: string; pause: string } {
  return {
    kubernetes: join(root, 'k8s', versions.kubernetes, 'node'),
    containerd: join(root, 'containerd', versions.containerd),
    coredns: join(root, 'coredns', versions.coredns),
    pause: join(root, 'pause', versions.kubernetes),
  };
}

async function usable(path: string, mode = constants.X_OK): Promise<boolean> {
  try {
    await access(path, mode);
    return true;
  } catch {
    return false;
  }
}

/**
 * Finds every program of the node.
 * @throws Error naming what is missing and `npm run build:node`, which builds and installs it.
 */
export async function resolveNodeBinaries(env: NodeJS.ProcessEnv = process.env): Promise<NodeBinaries> {
  const versions = await nodeVersions();
  const dirs = nodeCacheDirs(versions, cacheRoot(env));
  const found: NodeBinaries = {
    kubelet: join(dirs.kubernetes, 'kubelet'),
    kubeProxy: join(dirs.kubernetes, 'kube-proxy'),
    kubeScheduler: join(dirs.kubernetes, 'kube-scheduler'),
    containerd: join(dirs.containerd, 'containerd'),
    shimDir: dirs.containerd,
    ctr: join(dirs.containerd, 'ctr'),
    coredns: join(dirs.coredns, 'coredns'),
    pause: join(dirs.pause, 'pause'),
    runc: '/usr/sbin/runc',
    nft: '/usr/sbin/nft',
    cniBinDir: '/usr/lib/cni',
    busybox: '/bin/busybox',
  };
  const markers = Object.values(dirs).map((d) => join(d, '.complete'));
  const programs = [
    ...Object.entries(found)
      .filter(([k]) => k !== 'shimDir' && k !== 'cniBinDir')
      .map(([, p]) => p),
    join(dirs.containerd, 'containerd-shim-runc-v2'),
  ];
  const checks = await Promise.all([
    ...markers.map(async (p) => ((await usable(p, constants.F_OK)) ? undefined : p)),
    ...programs.map(async (p) => ((await usable(p)) ? undefined : p)),
    (async () => ((await usable(join(found.cniBinDir, 'bridge'))) ? undefined : join(found.cniBinDir, 'bridge')))(),
  ]);
  const missing = checks.filter((p): p is string => p !== undefined);
  if (missing.length > 0) {
    throw new Error(
      `node binaries missing (${missing.join(', ')}): run \`npm run build:node\` (builds with Go >= 1.26 and installs Debian packages as root)`,
    );
  }
  return found;
}
