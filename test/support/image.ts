/**
 * The operator image as the tests and benchmarks use it: scripts/build-image.sh builds the
 * image's /app into a local directory (cheap when nothing changed), the Dockerfile's final
 * stage says how a container starts from it, and the pinned Node (scripts/pinned-node.ts) stands
 * in for the image's /nodejs/bin/node.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { pinnedNode } from '../../scripts/pinned-node';
import { imageConfig, parseDockerfile, type ImageConfig } from './dockerfile';

/** The repository root. */
export const REPO = resolve(__dirname, '..', '..');
/** The image's Dockerfile. */
export const DOCKERFILE = join(REPO, 'operator', 'Dockerfile');
/** The build script that mirrors the Dockerfile. */
export const BUILD_SCRIPT = join(REPO, 'scripts', 'build-image.sh');
/** The lists both follow. */
export const IMAGE_ENV = join(REPO, 'scripts', 'image.env');

const run = promisify(execFile);

/** Reads scripts/image.env (`KEY="value"` lines; `#` comments). */
export function readImageEnv(text = readFileSync(IMAGE_ENV, 'utf8')): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([A-Z_][A-Z0-9_]*)="([^"$`\\]*)"$/.exec(line);
    if (!m?.[1]) throw new Error(`scripts/image.env: expected KEY="value" without expansions, got: ${line}`);
    vars[m[1]] = m[2] ?? '';
  }
  return vars;
}

/** The words of one image.env list; throws when the list is missing. */
export function imageList(vars: Record<string, string>, key: string): string[] {
  const value = vars[key];
  if (value === undefined) throw new Error(`scripts/image.env has no ${key}`);
  return value.split(/\s+/).filter(Boolean);
}

/** How a container from the image starts (final stage of operator/Dockerfile). */
export function operatorImageConfig(): ImageConfig {
  return imageConfig(parseDockerfile(readFileSync(DOCKERFILE, 'utf8')));
}

/**
 * The Node the operator runs on here, in place of the image's /nodejs/bin/node: the binary
 * package-lock.json pins, of the release the image's runtime stage carries, never the Node that
 * runs the tests. Throws (with the fix) when it is missing or is not the locked version.
 */
export function operatorNode(): string {
  return pinnedNode(REPO).path;
}

const BUILT = Symbol.for('bucketoperator.test.imageBuilt');
type Holder = { [BUILT]?: Promise<string> };

/**
 * Builds (or finds up to date) the local image directory and returns its path. Once per
 * process: the script's stamps make a second call a no-op anyway, and the flock inside it lets
 * parallel runs share one build.
 */
export function buildImage(): Promise<string> {
  const holder = globalThis as Holder;
  holder[BUILT] ??= run('bash', [BUILD_SCRIPT], { cwd: REPO, maxBuffer: 16 << 20 }).then(
    ({ stdout }) => {
      const dir = stdout.trim().split('\n').at(-1);
      if (!dir) throw new Error(`${BUILD_SCRIPT} printed no image directory`);
      return dir;
    },
    (err: unknown) => {
      const stderr = (err as { stderr?: string }).stderr ?? '';
      throw new Error(`npm run build:image failed: ${stderr.trim().split('\n').slice(-5).join(' | ')}`, { cause: err });
    },
  );
  return holder[BUILT];
}
