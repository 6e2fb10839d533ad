/**
 * The operator as a real child process (`operator/main.ts`), so tests can kill it at any
 * moment (SIGKILL: a crash) and read exactly what it logged.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, readFileSync } from 'node:fs';
import { resolve, join } from 'node:path';
import { freePort } from './ports';
import { waitFor } from './control-plane';

const REPO = resolve(__dirname, '..', '..');

/** Options of {@link startOperatorProcess}. */
export interface OperatorProcessOptions {
  readonly kubeconfig: string;
  /** Where stdout and stderr are appended (kept across restarts for log greps). */
  readonly logFile: string;
  readonly extraArgs?: readonly string[];
  /** @default '500ms' */
  readonly pollInterval?: string;
  /** @default '60s' */
  readonly driftInterval?: string;
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

/** Starts the operator and waits until it answers /readyz. */
export async function startOperatorProcess(opts: OperatorProcessOptions): Promise<OperatorProcess> {
  const metricsPort = await freePort();
  const healthPort = await freePort();
  const args = [
    '--import', 'tsx', join(REPO, 'operator', 'main.ts'),
    `--kubeconfig=${opts.kubeconfig}`,
    `--metrics-bind-address=127.0.0.1:${metricsPort}`,
    `--health-probe-bind-address=127.0.0.1:${healthPort}`,
    `--poll-interval=${opts.pollInterval ?? '500ms'}`,
    `--drift-interval=${opts.driftInterval ?? '60s'}`,
    '--log-level=debug',
    ...(opts.extraArgs ?? []),
  ];
  const child: ChildProcess = spawn(process.execPath, args, { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
  const sink = (chunk: Buffer) => appendFileSync(opts.logFile, chunk);
  child.stdout?.on('data', sink);
  child.stderr?.on('data', sink);
  let exited = false;
  const exit = new Promise<void>((r) => child.once('exit', () => {
    exited = true;
    r();
  }));
  const healthUrl = `http://127.0.0.1:${healthPort}`;
  await waitFor(async () => ((await fetch(`${healthUrl}/readyz`)).ok ? true : undefined), {
    description: 'the operator to become ready',
    timeoutMs: 60_000,
    intervalMs: 200,
    abortIf: () => (exited ? `operator exited; log: ${tail(opts.logFile)}` : undefined),
  });
  return {
    pid: child.pid ?? 0,
    metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`,
    healthUrl,
    async kill(signal = 'SIGTERM') {
      if (!exited) child.kill(signal);
      await exit;
    },
    logs: () => readFileSync(opts.logFile, 'utf8'),
  };
}

function tail(file: string): string {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-15).join('\n');
  } catch {
    return '(no log)';
  }
}
