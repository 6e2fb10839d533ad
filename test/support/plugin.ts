/**
 * The `kubectl bucket` plugin as the end-to-end test runs it: built by the package's own
 * scripts/bundle-plugin.ts (what `npm pack` ships as the `kubectl-bucket` bin, lib/cli/main.js,
 * and the bundles beside it), with a `kubectl-bucket` link to it in a directory of its own, to
 * put on PATH so kubectl finds the plugin.
 *
 * The build goes to `$BUCKETOPERATOR_CACHE/plugin/<checkout>-<hash of its inputs>/` and is
 * reused while cli/, operator/, the bundle scripts and package.json are unchanged; a cold build
 * takes a few seconds and removes the checkout's earlier builds. No node_modules is beside it:
 * the bundles inline what they need, as in the installed package.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, join, relative } from 'node:path';
import { promisify } from 'node:util';
import { bundlePlugin, PLUGIN_BIN } from '../../scripts/bundle-plugin';
import { REPO } from './image';

const run = promisify(execFile);

/** Inputs of the build, relative to the repository: a change to any of them rebuilds. */
const INPUTS = [
  'cli',
  'operator',
  'infra/labels.ts',
  'scripts/bundle-plugin.ts',
  'scripts/bundle.ts',
  'scripts/chmod-bin.mjs',
  'tsconfig.json',
  'package.json',
];

function files(path: string): string[] {
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path)
    .sort()
    .flatMap((f) => files(join(path, f)));
}

function inputHash(): string {
  const h = createHash('sha256');
  for (const f of INPUTS.flatMap((i) => files(join(REPO, i)))) {
    h.update(relative(REPO, f)).update('\0').update(readFileSync(f)).update('\0');
  }
  return h.digest('hex').slice(0, 16);
}

/** Builds (or reuses) the plugin; returns the directory holding the `kubectl-bucket` executable. */
export async function buildPlugin(env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const root = join(env['BUCKETOPERATOR_CACHE'] || join(homedir(), '.cache', 'bucketoperator'), 'plugin');
  // One prefix per checkout, as scripts/build-image.sh keys its directory: worktrees build different sources.
  const checkout = `${basename(REPO)}-${createHash('sha256').update(REPO).digest('hex').slice(0, 12)}`;
  const dir = join(root, `${checkout}-${inputHash()}`);
  const bin = join(dir, 'bin');
  if (existsSync(join(bin, 'kubectl-bucket'))) return bin;
  mkdirSync(root, { recursive: true });
  const work = `${dir}.${process.pid}.tmp`;
  rmSync(work, { recursive: true, force: true });
  mkdirSync(join(work, 'bin'), { recursive: true });
  try {
    await bundlePlugin(REPO, join(work, 'lib'));
  } catch (err) {
    rmSync(work, { recursive: true, force: true });
    throw new Error(`cannot build the plugin: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
  // version() reads the package.json above lib/.
  writeFileSync(join(work, 'package.json'), readFileSync(join(REPO, 'package.json')));
  // The execute bit as `npm run build:lib` sets it, by the same script: kubectl runs only executable plugins.
  await run(process.execPath, [join(REPO, 'scripts', 'chmod-bin.mjs'), work]);
  // As npm links a package's bin: a relative link, so the finished directory may be renamed.
  symlinkSync(join('..', 'lib', PLUGIN_BIN), join(work, 'bin', 'kubectl-bucket'));
  try {
    renameSync(work, dir);
  } catch (err) {
    // Another run finished the same build first: use theirs.
    rmSync(work, { recursive: true, force: true });
    if (!existsSync(join(bin, 'kubectl-bucket'))) throw err;
  }
  for (const old of readdirSync(root)) {
    if (old.startsWith(`${checkout}-`) && !old.endsWith('.tmp') && join(root, old) !== dir) rmSync(join(root, old), { recursive: true, force: true });
  }
  return bin;
}
