/**
 * The release tools (cosign and crane) that scripts/release/build-tools.sh builds and caches by
 * the versions scripts/release/tools.env pins, and one way to run them.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** Paths and versions of the built tools. */
export interface ReleaseTools {
  readonly cosign: string;
  readonly crane: string;
  readonly versions: { readonly cosign: string; readonly crane: string };
}

/** `KEY=value` lines (comments and blank lines skipped), as bash's `source` reads tools.env. */
export function parseEnvFile(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line);
    if (!m?.[1]) throw new Error(`tools.env: expected KEY=value, got "${line}"`);
    out[m[1]] = (m[2] ?? '').replace(/^"(.*)"$/, '$1');
  }
  return out;
}

/** The pinned versions, from scripts/release/tools.env. */
export function pinnedToolVersions(repo: string): { cosign: string; crane: string } {
  const env = parseEnvFile(readFileSync(join(repo, 'scripts', 'release', 'tools.env'), 'utf8'));
  const cosign = env['COSIGN_VERSION'];
  const crane = env['CRANE_VERSION'];
  if (!cosign || !crane) throw new Error('scripts/release/tools.env must pin COSIGN_VERSION and CRANE_VERSION');
  return { cosign, crane };
}

/**
 * The built tools under `$BUCKETOPERATOR_CACHE/release-tools` (default
 * ~/.cache/bucketoperator). Throws with the command that builds them when one is missing.
 */
export function releaseTools(repo: string, env: NodeJS.ProcessEnv = process.env): ReleaseTools {
  const versions = pinnedToolVersions(repo);
  const root = join(env['BUCKETOPERATOR_CACHE'] ?? join(homedir(), '.cache', 'bucketoperator'), 'release-tools');
  const path = (name: 'cosign' | 'crane') => {
    const dir = join(root, name, versions[name]);
    if (!existsSync(join(dir, '.complete'))) throw new Error(`${name} ${versions[name]} is not built in ${dir}: run npm run build:release-tools`);
    return join(dir, name);
  };
  return { cosign: path('cosign'), crane: path('crane'), versions };
}

/** How a tool run ended when it failed: the command and the last lines it wrote to stderr. */
export class ToolError extends Error {
  constructor(
    message: string,
    readonly stderr: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'ToolError';
  }
}

/** Options of {@link runTool}. */
export interface RunOptions {
  readonly env?: NodeJS.ProcessEnv;
  readonly cwd?: string;
  /** @default 120000 */
  readonly timeoutMs?: number;
}

/** The last non-empty lines of a tool's stderr, for an error message. */
export function tail(text: string, lines = 3): string {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '')
    .slice(-lines)
    .join(' | ');
}

/** Runs a tool; resolves with its output, rejects with a {@link ToolError} naming the subcommand and its stderr. */
export async function runTool(file: string, args: readonly string[], opts: RunOptions = {}): Promise<{ stdout: string; stderr: string }> {
  const { stdout, stderr } = await execTool(file, args, opts, 64 << 20);
  return { stdout: stdout.toString('utf8'), stderr };
}

/** Runs a tool for its raw stdout (a blob, a manifest): bytes exactly as written. */
export async function runToolBytes(file: string, args: readonly string[], opts: RunOptions = {}): Promise<Buffer> {
  return (await execTool(file, args, opts, 256 << 20)).stdout;
}

/** The one execFile behind both: stdout as bytes, a failure as a {@link ToolError}. */
function execTool(file: string, args: readonly string[], opts: RunOptions, maxBuffer: number): Promise<{ stdout: Buffer; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(
      file,
      [...args],
      { env: opts.env ?? process.env, cwd: opts.cwd, timeout: opts.timeoutMs ?? 120_000, maxBuffer, encoding: 'buffer' },
      (err, stdout, stderr) => {
        const errText = stderr.toString('utf8');
        if (err) {
          const name = `${file.split('/').at(-1) ?? file} ${args[0] ?? ''}`.trim();
          reject(new ToolError(`${name} failed: ${tail(errText) || err.message}`, errText, { cause: err }));
        } else resolve({ stdout, stderr: errText });
      },
    );
  });
}
