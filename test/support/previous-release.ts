/**
 * An earlier release of the operator as its users run it, for the upgrade test: its source tree
 * taken from git at the release's commit, its image directory built by that tree's own
 * scripts/build-image.sh, its dist/ manifests, and its operator started the way its own
 * Deployment starts it, under the ServiceAccount token a test gives it.
 *
 * The tree is `git archive <commit>`; its build runs on this checkout's node_modules (linked in)
 * when this checkout's lockfile holds every package the release's lockfile locks, at the same
 * version and integrity, and otherwise on a `npm ci` of the release's own lockfile. Everything is
 * cached under `$BUCKETOPERATOR_CACHE/releases/<version>/<commit>/` (default cache root
 * `~/.cache/bucketoperator`): a warm run only checks that the directory is complete.
 *
 * The release's JavaScript is what ran then; the Node that runs it is the one this checkout pins
 * (scripts/pinned-node.ts), as for the current operator, so the tests need no second runtime.
 */
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, readFileSync, renameSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import type { ControlPlane } from './control-plane';
import { localInvocation, type DeploymentLike } from './deployment-invocation';
import { deploymentIn } from './dist';
import { imageConfig, parseDockerfile } from './dockerfile';
import { operatorNode, REPO } from './image';
import { localFlags, startLoggedProcess, type OperatorProcess, type OperatorProcessOptions } from './operator-process';
import { freePort } from './ports';

const run = promisify(execFile);

/** A released version and the commit it was made from. */
export interface ReleaseRef {
  readonly version: string;
  /** The full commit id (40 hex digits). */
  readonly commit: string;
}

/** The release before this one: what users run today. */
export const PREVIOUS_RELEASE: ReleaseRef = { version: '0.1.0', commit: '4482d8e2c22cc9f88e427a35785c6ef1f981c903' };

/** A release made ready to install and run. */
export interface PreparedRelease extends ReleaseRef {
  /** Its source tree. */
  readonly tree: string;
  /** Its dist/, as it shipped. */
  readonly dist: string;
  /** Its operator image's /app, built by its own scripts/build-image.sh. */
  readonly imageDir: string;
}

/** What a package-lock.json records of one package. */
interface LockEntry {
  readonly version?: string;
  readonly integrity?: string;
  readonly link?: boolean;
}

/** The part of a package-lock.json (lockfileVersion 2 or 3) compared here. */
export interface Lockfile {
  readonly packages?: Readonly<Record<string, LockEntry>>;
}

/**
 * The packages `release` locks that `checkout` does not lock at the same version and integrity
 * (the root entry and links aside): when none, the checkout's node_modules can build the release.
 */
export function missingFromCheckout(release: Lockfile, checkout: Lockfile): string[] {
  const have = checkout.packages ?? {};
  return Object.entries(release.packages ?? {})
    .filter(([path, entry]) => path !== '' && !entry.link)
    .filter(([path, entry]) => {
      const mine = have[path];
      return mine?.version !== entry.version || (entry.integrity !== undefined && mine?.integrity !== entry.integrity);
    })
    .map(([path, entry]) => `${path.replace(/^node_modules\//, '')}@${entry.version ?? '?'}`)
    .sort();
}

/** The cache root of every build of the tests (scripts/build-image.sh uses the same). */
function cacheRoot(): string {
  return process.env['BUCKETOPERATOR_CACHE'] || join(homedir(), '.cache', 'bucketoperator');
}

/**
 * What of a release's tree the tests use: its manifests, and what its scripts/build-image.sh
 * builds the image from. Also what test/fixtures/releases/<version>.tar.gz holds.
 */
export const RELEASE_PATHS = ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json', 'operator', 'scripts', 'dist'] as const;

/** The release's files as shipped, for clones without its commit. */
export function releaseFixture(ref: ReleaseRef): string {
  return join(REPO, 'test', 'fixtures', 'releases', `${ref.version}.tar.gz`);
}

/** Marks a complete cache entry; written last. */
const READY_MARKER = '.ready';

const PREPARED = Symbol.for('bucketoperator.test.releasesPrepared');
type Holder = { [PREPARED]?: Map<string, Promise<PreparedRelease>> };

/**
 * The release's tree, dist/ and image directory, made on the first call and cached by commit.
 * Throws, saying to fetch it, when the commit is not in this clone (a shallow clone).
 */
export function prepareRelease(ref: ReleaseRef = PREVIOUS_RELEASE): Promise<PreparedRelease> {
  const holder = globalThis as Holder;
  holder[PREPARED] ??= new Map();
  let prepared = holder[PREPARED].get(ref.commit);
  if (!prepared) {
    prepared = prepare(ref);
    holder[PREPARED].set(ref.commit, prepared);
  }
  return prepared;
}

async function prepare(ref: ReleaseRef): Promise<PreparedRelease> {
  const root = join(cacheRoot(), 'releases', ref.version, ref.commit);
  const done = (dir: string): PreparedRelease => ({ ...ref, tree: join(dir, 'tree'), dist: join(dir, 'tree', 'dist'), imageDir: join(dir, 'image') });
  if (existsSync(join(root, READY_MARKER))) return done(root);

  // A shallow clone lacks the commit: then the release's files as they shipped, kept in
  // test/fixtures/releases/ (a unit test holds them to the commit wherever history is there).
  const inClone = await run('git', ['-C', REPO, 'cat-file', '-e', `${ref.commit}^{commit}`]).then(
    () => true,
    () => false,
  );
  const fixture = releaseFixture(ref);
  if (!inClone && !existsSync(fixture)) {
    throw new Error(
      `release ${ref.version} (commit ${ref.commit}) is not in this clone and ${fixture} is missing: run \`git fetch origin ${ref.commit}\` (or \`git fetch --unshallow\`)`,
    );
  }

  // Built beside the cache entry and moved into place whole, so a run that dies half-way leaves
  // nothing that looks complete, and two runs at once each build and the first to finish wins.
  const work = `${root}.work-${process.pid}-${randomBytes(3).toString('hex')}`;
  const tree = join(work, 'tree');
  mkdirSync(tree, { recursive: true });
  try {
    await sh(
      inClone
        ? `git -C '${REPO}' archive --format=tar '${ref.commit}' -- ${RELEASE_PATHS.join(' ')} | tar -x -C '${tree}'`
        : `tar -xzf '${fixture}' -C '${tree}'`,
      REPO,
    );
    const lock = (dir: string) => JSON.parse(readFileSync(join(dir, 'package-lock.json'), 'utf8')) as Lockfile;
    const missing = missingFromCheckout(lock(tree), lock(REPO));
    if (missing.length === 0) {
      symlinkSync(join(REPO, 'node_modules'), join(tree, 'node_modules'));
    } else {
      console.log(
        `      (release ${ref.version}: this checkout lacks ${missing.slice(0, 5).join(', ')}${missing.length > 5 ? ', ...' : ''}; npm ci in its tree)`,
      );
      await run('npm', ['ci', '--ignore-scripts', '--no-audit', '--no-fund', '--prefer-offline'], { cwd: tree, maxBuffer: 16 << 20 });
    }
    // The release's script on the pinned Node, whatever Node is first on PATH: it runs `node`
    // and the tools' `#!/usr/bin/env node` shebangs.
    const path = `${dirname(operatorNode())}:${process.env['PATH'] ?? ''}`;
    await run('bash', [join(tree, 'scripts', 'build-image.sh')], {
      cwd: tree,
      env: { ...process.env, PATH: path, BUCKETOPERATOR_IMAGE_DIR: join(work, 'image') },
      maxBuffer: 16 << 20,
    }).catch((err: unknown) => {
      const stderr = (err as { stderr?: string }).stderr ?? '';
      throw new Error(`release ${ref.version}: its scripts/build-image.sh failed: ${stderr.trim().split('\n').slice(-5).join(' | ')}`, {
        cause: err,
      });
    });
    // The image directory holds all the operator needs; a link into a checkout would dangle.
    const modules = join(tree, 'node_modules');
    if (lstatSync(modules).isSymbolicLink()) unlinkSync(modules);
    else rmSync(modules, { recursive: true, force: true });
    writeFileSync(join(work, READY_MARKER), `${ref.version} ${ref.commit}\n`);
    mkdirSync(dirname(root), { recursive: true });
    if (!existsSync(join(root, READY_MARKER))) {
      rmSync(root, { recursive: true, force: true });
      renameSync(work, root);
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return done(root);
}

async function sh(script: string, cwd: string): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const child = spawn('bash', ['-o', 'pipefail', '-c', script], { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${script}: exit ${code}: ${stderr.trim()}`))));
  });
}

/**
 * Installs a release's dist/ as that release's README told users to: the CRDs, until they are
 * established, then the whole folder.
 */
export async function installDist(cp: ControlPlane, dist: string): Promise<void> {
  const kubectl = async (args: string[]) => {
    const res = await cp.kubectl(args);
    if (res.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${res.stderr.trim()}`);
  };
  await kubectl(['apply', '-f', join(dist, '00-crds.yaml')]);
  await kubectl([
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    'crd/storagebuckets.storage.avalonhosting.example',
    'crd/bucketproviderconfigs.storage.avalonhosting.example',
  ]);
  await kubectl(['apply', '-f', dist]);
}

/**
 * Starts the release's operator image as `deployment` starts it (by default the release's own
 * Deployment; pass the one a cluster holds to run the image it names under that Deployment's
 * args and env), with the same local changes and test defaults as the current operator's
 * (startOperatorProcess), and waits until it answers /readyz.
 */
export async function startReleaseOperator(
  release: PreparedRelease,
  opts: OperatorProcessOptions,
  deployment: DeploymentLike = deploymentIn(release.dist),
): Promise<OperatorProcess> {
  const metricsPort = await freePort();
  const healthPort = await freePort();
  const inv = localInvocation(deployment, imageConfig(parseDockerfile(readFileSync(join(release.tree, 'operator', 'Dockerfile'), 'utf8'))), {
    imageDir: release.imageDir,
    nodeBinary: operatorNode(),
    flags: localFlags(opts, metricsPort, healthPort),
    fieldRefs: { 'metadata.name': opts.podName ?? `bucketoperator-${release.version}-${randomBytes(4).toString('hex')}` },
  });
  return startLoggedProcess({
    file: inv.file,
    argv: [...(opts.nodeArgs ?? []), ...inv.nodeArgs, inv.script, ...inv.args],
    cwd: release.imageDir,
    env: { ...inv.env },
    logFile: opts.logFile,
    metricsPort,
    healthPort,
    what: `the operator ${release.version}`,
  });
}
