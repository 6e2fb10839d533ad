/**
 * The package as a user gets it: the tarball `npm pack` makes of this checkout (its prepack
 * builds lib/), installed into an app outside the repository with the versions the repository's
 * lockfile pins, so the npm cache serves them. Shared by the tests that run the packed library.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { REPO } from './image';

const run = promisify(execFile);

/** The version of a package the repository's lockfile installs, so the npm cache has it. */
export function lockedVersion(name: string): string {
  const lock = JSON.parse(readFileSync(join(REPO, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version: string }> };
  const entry = lock.packages[`node_modules/${name}`];
  if (!entry) throw new Error(`package-lock.json has no node_modules/${name}`);
  return entry.version;
}

/** Runs `cmd` in `cwd` and returns its stdout; a failure throws with the command's output. */
export async function sh(cmd: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  try {
    const { stdout } = await run(cmd, args, { cwd, maxBuffer: 16 * 1024 * 1024, env: { ...env, NO_UPDATE_NOTIFIER: '1' } });
    return stdout;
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string };
    throw new Error(`${cmd} ${args.join(' ')} failed in ${cwd}:\n${e.stdout ?? ''}${e.stderr ?? ''}`, { cause: err });
  }
}

const TARBALL = Symbol.for('bucketoperator.test.packedTarball');
type Holder = { [TARBALL]?: Promise<string> };

/**
 * The tarball of this checkout, packed once per process (about 20 s, most of it the lib build)
 * into a temporary directory that is removed when the process exits.
 */
export function packedTarball(): Promise<string> {
  const holder = globalThis as Holder;
  holder[TARBALL] ??= (async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bucketoperator-pack-'));
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    await sh('npm', ['pack', '--pack-destination', dir, '--silent'], REPO);
    const tgz = readdirSync(dir).filter((f) => f.endsWith('.tgz'));
    if (tgz.length !== 1) throw new Error(`npm pack wrote ${tgz.length} tarballs into ${dir}, expected 1`);
    return join(dir, tgz[0] ?? '');
  })();
  return holder[TARBALL];
}

/**
 * `npm install` in `dir` as a user runs it, taking packages from the npm cache when it has them;
 * `env` is the environment npm runs in.
 */
export async function npmInstall(dir: string, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  await sh('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], dir, env);
}
