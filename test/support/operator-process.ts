/**
 * The operator as a real child process, started the way its Deployment starts it: the compiled
 * build of the image (scripts/build-image.sh) on the image's Node release (the pinned binary,
 * whatever Node runs the tests), the image's ENTRYPOINT, and the container args and env of the
 * Deployment in dist/, changed only where a local run must (see deployment-invocation.ts).
 * Tests can kill it at any moment (SIGKILL: a crash) and read exactly what it logged.
 *
 * BUCKETOPERATOR_FROM_SOURCE=1 runs operator/main.ts through tsx instead, with the same flags and
 * env, for a quick inner loop after an edit; `npm test` clears it (package.json).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { freePort } from './ports';

import { distDeployment } from './dist';
import { localInvocation, type Invocation } from './deployment-invocation';
import { buildImage, operatorImageConfig, operatorNode, REPO } from './image';
import { eventually } from './eventually';

/** Options of {@link startOperatorProcess}. */
export interface OperatorProcessOptions {
  readonly kubeconfig: string;
  /** Where stdout and stderr are appended (kept across restarts for log greps). */
  readonly logFile: string;
  /**
   * Flag values by name (no dashes): flags the Deployment passes, or local-only ones (see
   * LOCAL_ONLY_FLAGS). Any other name is refused.
   */
  readonly flags?: Readonly<Record<string, string>>;
  /** @default '500ms' */
  readonly pollInterval?: string;
  /** @default '60s' */
  readonly driftInterval?: string;
  /**
   * The Pod name (POD_NAME, the Lease identity). Pass the same name across restarts to model a
   * container restart inside one Pod; a new name is a new Pod.
   * @default a fresh name per call
   */
  readonly podName?: string;
  /** Node options before the script (profiling in bench/; the Deployment passes none). */
  readonly nodeArgs?: readonly string[];
  /**
   * Another Node binary than the image's (bench/ compares releases with it; tests never set it).
   * @default the pinned Node the image runs
   */
  readonly nodeBinary?: string;
}

/** A running operator process. */
export interface OperatorProcess {
  readonly pid: number;
  readonly metricsUrl: string;
  readonly healthUrl: string;
  /** Sends `signal` and waits for the exit. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Everything logged so far by any process sharing the log file. */
  logs(): string;
}

/** True when the operator should run from source through tsx (the inner loop only). */
export function fromSource(): boolean {
  return process.env['BUCKETOPERATOR_FROM_SOURCE'] === '1';
}

/**
 * The command line and environment of the operator for these options: the image build, or the
 * sources when {@link fromSource}. Also what the image tests use to run the build by hand.
 */
export async function operatorInvocation(
  flags: Readonly<Record<string, string>>,
  podName: string,
  nodeBinary: string = operatorNode(),
): Promise<{ file: string; argv: string[]; env: Record<string, string>; cwd: string }> {
  const source = fromSource();
  if (source) noteFromSource();
  const imageDir = source ? REPO : await buildImage();
  const inv: Invocation = localInvocation(distDeployment(), operatorImageConfig(), {
    imageDir,
    nodeBinary,
    flags,
    fieldRefs: { 'metadata.name': podName },
  });
  const script = source ? [join(REPO, inv.imageScript.replace(/\.js$/, '.ts'))] : [inv.script];
  return {
    file: inv.file,
    argv: [...inv.nodeArgs, ...(source ? ['--import', 'tsx'] : []), ...script, ...inv.args],
    env: { ...inv.env },
    // The image's WORKDIR; the sources' root for tsx, which reads tsconfig.json from there.
    cwd: imageDir,
  };
}

let noted = false;
/** Says once per process that this run does not test the image build. */
function noteFromSource(): void {
  if (noted) return;
  noted = true;
  console.error('BUCKETOPERATOR_FROM_SOURCE=1: the operator runs operator/main.ts through tsx, not the image build');
}

/**
 * The flags a local run gives the operator on top of the Deployment's: its kubeconfig, loopback
 * ports for metrics and probes, the test defaults, then `opts.flags` (which win).
 */
export function localFlags(opts: OperatorProcessOptions, metricsPort: number, healthPort: number): Record<string, string> {
  return {
    kubeconfig: opts.kubeconfig,
    'metrics-bind-address': `127.0.0.1:${metricsPort}`,
    'health-probe-bind-address': `127.0.0.1:${healthPort}`,
    'poll-interval': opts.pollInterval ?? '500ms',
    'drift-interval': opts.driftInterval ?? '60s',
    'log-level': 'debug',
    ...opts.flags,
  };
}

/** Starts the operator and waits until it answers /readyz. */
export async function startOperatorProcess(opts: OperatorProcessOptions): Promise<OperatorProcess> {
  const metricsPort = await freePort();
  const healthPort = await freePort();
  const { file, argv, env, cwd } = await operatorInvocation(
    localFlags(opts, metricsPort, healthPort),
    opts.podName ?? `bucketoperator-local-${randomBytes(4).toString('hex')}`,
    opts.nodeBinary,
  );
  // Only the container's environment, as in a Pod: nothing of the test runner's leaks in.
  return startLoggedProcess({
    file,
    argv: [...(opts.nodeArgs ?? []), ...argv],
    cwd,
    env,
    logFile: opts.logFile,
    metricsPort,
    healthPort,
    what: 'the operator',
  });
}

/** What {@link startLoggedProcess} starts. */
export interface LoggedProcessOptions {
  readonly file: string;
  readonly argv: readonly string[];
  readonly cwd?: string;
  readonly env: Readonly<Record<string, string>>;
  readonly logFile: string;
  readonly metricsPort: number;
  readonly healthPort: number;
  /** Named in the errors, e.g. 'the operator'. */
  readonly what: string;
}

/**
 * Starts an operator-like process that serves /readyz on `healthPort` and waits until it
 * answers; shared by ours and the benchmarks' peer. The log file itself is its stdout and
 * stderr (O_APPEND, so restarts add to it), as a container runtime drains a Pod's output:
 * through a pipe read by this busy process, synchronous log writes would block whenever the
 * reader fell behind.
 */
export async function startLoggedProcess(o: LoggedProcessOptions): Promise<OperatorProcess> {
  const out = openSync(o.logFile, 'a');
  let child: ChildProcess;
  try {
    child = spawn(o.file, o.argv, { ...(o.cwd ? { cwd: o.cwd } : {}), env: o.env, stdio: ['ignore', out, out] });
  } finally {
    closeSync(out);
  }
  let exited = false;
  const exit = new Promise<void>((r) =>
    child.once('exit', () => {
      exited = true;
      r();
    }),
  );
  const healthUrl = `http://127.0.0.1:${o.healthPort}`;
  await eventually(async () => (await fetch(`${healthUrl}/readyz`)).ok, {
    description: `${o.what} to become ready`,
    timeoutMs: 60_000,
    intervalMs: 200,
    abortIf: () => (exited ? `${o.what} exited; log: ${tail(o.logFile)}` : undefined),
  });
  return {
    pid: child.pid ?? 0,
    metricsUrl: `http://127.0.0.1:${o.metricsPort}/metrics`,
    healthUrl,
    async kill(signal = 'SIGTERM') {
      if (!exited) child.kill(signal);
      await exit;
    },
    logs: () => readFileSync(o.logFile, 'utf8'),
  };
}

function tail(file: string): string {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-15).join('\n');
  } catch {
    return '(no log)';
  }
}
