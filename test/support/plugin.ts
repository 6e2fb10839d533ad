/**
 * The `kubectl bucket` plugin as the end-to-end test runs it: compiled by the package's own
 * tsconfig.lib.json (what `npm pack` ships as `bin/kubectl-bucket`), with a `kubectl-bucket`
 * link to it in a directory of its own, to put on PATH so kubectl finds the plugin.
 *
 * The build goes to `$BUCKETOPERATOR_CACHE/plugin/<checkout>-<hash of its inputs>/` and is
 * reused while cli/, operator/, the tsconfig files and package.json are unchanged; a cold build
 * is one tsc run (about 20 s of CPU) and removes the checkout's earlier builds. Its node_modules is a link to the checkout's; the pack test proves
 * the installed package resolves with production dependencies alone.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, join, relative } from 'node:path';
import { promisify } from 'node:util';
import { REPO } from './image';

const run = promisify(execFile);

/** Inputs of the build, relative to the repository: a change to any of them rebuilds. */
const INPUTS = ['cli', 'operator', 'infra/labels.ts', 'scripts/chmod-bin.mjs', 'tsconfig.json', 'tsconfig.lib.json', 'package.json'];

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
  // The package's lib build, narrowed to the plugin's entry point (infra/ is not needed here).
  writeFileSync(
    join(work, 'tsconfig.json'),
    JSON.stringify({
      extends: join(REPO, 'tsconfig.lib.json'),
      compilerOptions: { outDir: join(work, 'lib'), rootDir: REPO, declaration: false, typeRoots: [join(REPO, 'node_modules', '@types')] },
      include: [join(REPO, 'cli', 'main.ts')],
    }),
  );
  try {
    await run(join(REPO, 'node_modules', '.bin', 'tsc'), ['-p', join(work, 'tsconfig.json')], { cwd: REPO });
  } catch (err) {
    const e = err as { stdout?: string };
    throw new Error(`cannot compile the plugin: ${e.stdout ?? String(err)}`, { cause: err });
  }
  writeFileSync(join(work, 'package.json'), readFileSync(join(REPO, 'package.json')));
  // The execute bit as `npm run build:lib` sets it, by the same script: kubectl runs only executable plugins.
  await run(process.execPath, [join(REPO, 'scripts', 'chmod-bin.mjs'), work]);
  symlinkSync(join(REPO, 'node_modules'), join(work, 'node_modules'));
  // As npm links a package's bin: a relative link, so the finished directory may be renamed.
  symlinkSync(join('..', 'lib', 'cli', 'main.js'), join(work, 'bin', 'kubectl-bucket'));
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
