import { constants } from 'node:fs';
import { access, readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** Absolute paths of the four programs a local control plane runs. */
export interface ControlPlaneBinaries {
  etcd: string;
  kubeApiserver: string;
  kubeControllerManager: string;
  kubectl: string;
}

/** The versions pinned in versions.env, which build.sh builds and the cache is keyed by. */
export interface ControlPlaneVersions {
  kubernetes: string;
  etcd: string;
}

const FILE_NAMES: Record<keyof ControlPlaneBinaries, string> = {
  etcd: 'etcd',
  kubeApiserver: 'kube-apiserver',
  kubeControllerManager: 'kube-controller-manager',
  kubectl: 'kubectl',
};

/** Reads the versions pinned in test/support/control-plane/versions.env. */
export async function pinnedVersions(): Promise<ControlPlaneVersions> {
  const text = await readFile(join(__dirname, 'versions.env'), 'utf8');
  const values = new Map<string, string>();
  for (const line of text.split('\n')) {
    const match = /^\s*([A-Z0-9_]+)=(\S+)\s*$/.exec(line);
    if (match) values.set(match[1]!, match[2]!);
  }
  const kubernetes = values.get('K8S_VERSION');
  const etcd = values.get('ETCD_VERSION');
  if (!kubernetes || !etcd) throw new Error('versions.env must set K8S_VERSION and ETCD_VERSION');
  return { kubernetes, etcd };
}

/** One line of matrix.env: a Kubernetes version of the support matrix and the etcd it runs with. */
export interface MatrixVersion extends ControlPlaneVersions {
  /** `1.36` for `v1.36.3`. */
  minor: string;
}

/** The `minor` of a Kubernetes version such as `v1.36.3`. */
export function minorOf(kubernetesVersion: string): string {
  const m = /^v?(\d+\.\d+)\.\d+$/.exec(kubernetesVersion);
  if (!m?.[1]) throw new Error(`'${kubernetesVersion}' is not a Kubernetes version such as v1.36.3`);
  return m[1];
}

/** Parses matrix.env's text: `<kubernetes version> <etcd version>` lines, oldest first. */
export function parseMatrix(text: string): MatrixVersion[] {
  const out: MatrixVersion[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '' || line.trimStart().startsWith('#')) continue;
    const [kubernetes, etcd, ...rest] = line.trim().split(/\s+/);
    if (!kubernetes || !etcd || rest.length > 0 || !/^v\d+\.\d+\.\d+$/.test(etcd)) {
      throw new Error(`matrix.env: '${line}' is not '<kubernetes version> <etcd version>'`);
    }
    out.push({ kubernetes, etcd, minor: minorOf(kubernetes) });
  }
  return out;
}

/** Reads the support matrix in test/support/control-plane/matrix.env, oldest minor first. */
export async function matrixVersions(): Promise<MatrixVersion[]> {
  return parseMatrix(await readFile(join(__dirname, 'matrix.env'), 'utf8'));
}

/**
 * The directory build.sh caches binaries in for a Kubernetes version:
 * `${BUCKETOPERATOR_CACHE:-$HOME/.cache/bucketoperator}/k8s/<version>`.
 */
export function cacheDirFor(kubernetesVersion: string, env: NodeJS.ProcessEnv = process.env): string {
  const root = env.BUCKETOPERATOR_CACHE || join(homedir(), '.cache', 'bucketoperator');
  return join(root, 'k8s', kubernetesVersion);
}

async function isExecutable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

async function completeIn(dir: string): Promise<ControlPlaneBinaries | undefined> {
  const entries = Object.entries(FILE_NAMES) as [keyof ControlPlaneBinaries, string][];
  const found = await Promise.all(entries.map(([, file]) => isExecutable(join(dir, file))));
  if (found.includes(false)) return undefined;
  return Object.fromEntries(entries.map(([key, file]) => [key, join(dir, file)])) as unknown as ControlPlaneBinaries;
}

/**
 * Finds etcd, kube-apiserver, kube-controller-manager and kubectl: in `KUBEBUILDER_ASSETS`
 * when that directory holds all four, otherwise in the build.sh cache for the pinned version.
 * Mixing the two sources is avoided on purpose: envtest bundles lack kube-controller-manager,
 * and a controller manager from another release than the apiserver hides version-skew bugs.
 *
 * With `kubernetesVersion` (a version of matrix.env, for the support matrix), only the cache of
 * that version is looked at: binaries in `KUBEBUILDER_ASSETS` name no version.
 *
 * @throws Error telling to run `npm run build:control-plane` when the binaries are missing.
 */
export async function resolveBinaries(env: NodeJS.ProcessEnv = process.env, kubernetesVersion?: string): Promise<ControlPlaneBinaries> {
  const assets = kubernetesVersion === undefined ? env.KUBEBUILDER_ASSETS : undefined;
  if (assets) {
    const fromAssets = await completeIn(assets);
    if (fromAssets) return fromAssets;
  }
  const kubernetes = kubernetesVersion ?? (await pinnedVersions()).kubernetes;
  const cacheDir = cacheDirFor(kubernetes, env);
  // build.sh writes the marker last, so binaries without it come from an interrupted build.
  const cached = (await exists(join(cacheDir, '.complete'))) ? await completeIn(cacheDir) : undefined;
  if (cached) return cached;
  const where = assets ? `KUBEBUILDER_ASSETS=${assets} (incomplete) nor ${cacheDir}` : cacheDir;
  const command = kubernetesVersion === undefined ? 'npm run build:control-plane' : `npm run build:control-plane -- --k8s ${kubernetesVersion}`;
  throw new Error(`control-plane binaries for Kubernetes ${kubernetes} not found in ${where}: run \`${command}\` (needs Go >= 1.26)`);
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path, constants.F_OK);
    return true;
  } catch {
    return false;
  }
}
