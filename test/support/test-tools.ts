/**
 * Where scripts/install-test-tools.sh puts the tools the tests run for real (lua5.1,
 * promtool, celeval, tmux, actionlint, shellcheck, cert-manager CRDs), computed the same way the script does, so a test can name a missing
 * tool and the command that installs it instead of failing obscurely.
 */
import { createHash } from 'node:crypto';
import { accessSync, constants, existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

const REPO_ROOT = resolve(__dirname, '..', '..');

/** `${BUCKETOPERATOR_CACHE:-$HOME/.cache/bucketoperator}/tools`. */
export function toolsDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.BUCKETOPERATOR_CACHE || join(homedir(), '.cache', 'bucketoperator'), 'tools');
}

function executable(path: string, name: string): string {
  try {
    accessSync(path, constants.X_OK);
  } catch {
    throw new Error(`${name} is not installed at ${path}: run \`bash scripts/install-test-tools.sh\` (npm run test:unit does)`);
  }
  return path;
}

/** The Lua 5.1 interpreter (a wrapper around Debian's lua5.1). */
export function lua51(): string {
  return executable(join(toolsDir(), 'bin', 'lua5.1'), 'lua5.1');
}

/** Debian's promtool. */
export function promtool(): string {
  return executable(join(toolsDir(), 'bin', 'promtool'), 'promtool');
}

/** Debian's tmux (a wrapper that finds its unpacked libraries): the terminal of the plugin's end-to-end test. */
export function tmux(): string {
  return executable(join(toolsDir(), 'bin', 'tmux'), 'tmux');
}

/** test/support/celeval, built for its current sources. */
export function celeval(): string {
  const src = join(REPO_ROOT, 'test', 'support', 'celeval');
  const hash = createHash('sha256');
  for (const f of ['go.mod', 'go.sum', 'main.go']) hash.update(readFileSync(join(src, f)));
  const key = hash.digest('hex').slice(0, 16);
  return executable(join(toolsDir(), 'celeval', key, 'celeval'), 'celeval');
}

/** Debian's shellcheck (a wrapper that finds its unpacked libraries), which actionlint runs on `run:` scripts. */
export function shellcheck(): string {
  return executable(join(toolsDir(), 'bin', 'shellcheck'), 'shellcheck');
}

/** rhysd/actionlint at the version test/support/actionlint/go.mod pins. */
export function actionlint(): string {
  const goMod = readFileSync(join(REPO_ROOT, 'test', 'support', 'actionlint', 'go.mod'), 'utf8');
  const version = /^\s*github\.com\/rhysd\/actionlint (v\S+)/m.exec(goMod)?.[1];
  if (!version) throw new Error('test/support/actionlint/go.mod requires no github.com/rhysd/actionlint version');
  return executable(join(toolsDir(), 'actionlint', version, 'actionlint'), `actionlint ${version}`);
}

/** The directory of cert-manager's CRD files, at the release test/support/cert-manager/version pins. */
export function certManagerCrds(): string {
  const version = readFileSync(join(REPO_ROOT, 'test', 'support', 'cert-manager', 'version'), 'utf8').trim();
  const dir = join(toolsDir(), 'cert-manager-crds', version);
  if (!existsSync(join(dir, '.complete'))) throw new Error(`cert-manager ${version} CRDs are missing from ${dir}: run npm run test:tools`);
  return dir;
}
