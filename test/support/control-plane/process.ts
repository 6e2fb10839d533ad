import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Socket } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** How a managed program is started. */
export interface ComponentSpec {
  /** Short name, used for the log file and in error messages. */
  name: string;
  command: string;
  args: string[];
  /** stdout and stderr are appended here. */
  logFile: string;
  /** Directory holding one `<name>` file with the process group id while it runs. */
  pidDir: string;
}

/** True while any process of group `pgid` exists (zombies included). */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: the group is already gone, which is what the caller wants.
  }
}

/**
 * One long-running program in its own process group, so that stopping it also stops anything
 * it forked, and a terminal's Ctrl-C (sent to the foreground group) does not kill it before
 * the owner can stop components in order.
 */
export class Component {
  private child: ChildProcess | undefined;
  private exitPromise: Promise<void> = Promise.resolve();
  private exitReason: string | undefined;

  constructor(readonly spec: ComponentSpec) {}

  /** Starts the program; a previous run must have been stopped. */
  start(): void {
    if (this.running) throw new Error(`${this.spec.name} is already running`);
    const log = openSync(this.spec.logFile, 'a');
    try {
      const child = spawn(this.spec.command, this.spec.args, {
        detached: true,
        stdio: ['ignore', log, log],
      });
      this.child = child;
      this.exitReason = undefined;
      this.exitPromise = new Promise<void>((resolve) => {
        child.once('error', (err) => {
          this.exitReason = `could not be started: ${err.message}`;
          resolve();
        });
        child.once('exit', (code, signal) => {
          this.exitReason = signal ? `was killed by ${signal}` : `exited with code ${code}`;
          rmSync(this.pidFile, { force: true });
          resolve();
        });
      });
      // The owner's stop() or exit handler ends the program; it must not keep Node alive.
      child.unref();
      if (child.pid !== undefined) writeFileSync(this.pidFile, `${child.pid}\n`);
    } finally {
      closeSync(log);
    }
  }

  /** True from start() until the process has exited. */
  get running(): boolean {
    return this.child !== undefined && this.exitReason === undefined;
  }

  /** Why the last run ended ("exited with code 1"), or undefined while running or never run. */
  get exited(): string | undefined {
    return this.exitReason;
  }

  /** SIGTERM to the group, then SIGKILL once `graceMs` has passed; resolves when all are gone. */
  async stop(graceMs = 10_000): Promise<void> {
    const child = this.child;
    const pgid = child?.pid;
    // After an exit the id may belong to someone else's process by now: never signal it.
    if (child === undefined || pgid === undefined || !this.running) return;
    // Referenced while stopping: an otherwise idle Node would exit before the exit
    // notification arrives, leaving the caller's await unresolved.
    child.ref();
    signalGroup(pgid, 'SIGTERM');
    const grace = new AbortController();
    const exited = await Promise.race([this.exitPromise.then(() => true), sleep(graceMs, false, { signal: grace.signal }).catch(() => false)]);
    // The pending timer would otherwise hold Node open for the rest of the grace period.
    grace.abort();
    if (!exited || groupAlive(pgid)) signalGroup(pgid, 'SIGKILL');
    await this.exitPromise;
    for (let i = 0; i < 100 && groupAlive(pgid); i++) await sleep(20);
    child.unref();
  }

  /** Synchronous SIGKILL of the group, for process 'exit' handlers where nothing can be awaited. */
  killNow(): void {
    if (this.child?.pid !== undefined && this.running) signalGroup(this.child.pid, 'SIGKILL');
  }

  /** The last `lines` lines of the log, for error messages. */
  logTail(lines = 30): string {
    try {
      const text = readFileSync(this.spec.logFile, 'utf8').trimEnd();
      return text.split('\n').slice(-lines).join('\n');
    } catch {
      return '(no log)';
    }
  }

  private get pidFile(): string {
    return join(this.spec.pidDir, this.spec.name);
  }
}

// Runs in its own process group and waits for EOF on stdin, which happens when the Node
// process dies in any way (SIGKILL and signals without handlers included, where 'exit'
// handlers never run). It then stops the groups listed in the pid directory (SIGTERM, and
// SIGKILL for what is left after 5 s) and removes the work directory.
const WATCHDOG_SCRIPT = `
while read -r _; do :; done
signal_all() { for f in "$1"/*; do [ -f "$f" ] && kill -s "$2" -- "-$(cat "$f")" 2>/dev/null; done; }
any_alive() { for f in "$1"/*; do [ -f "$f" ] && kill -0 -- "-$(cat "$f")" 2>/dev/null && return 0; done; return 1; }
signal_all "$1" TERM
for _ in $(seq 50); do any_alive "$1" || break; sleep 0.1; done
signal_all "$1" KILL
rm -rf -- "$2"
`;

/**
 * Starts the watchdog for the groups whose ids are written to `pidDir`, removing `workDir`
 * after them. Returns a function that disarms it (kills it without it doing anything).
 */
export function startWatchdog(pidDir: string, workDir: string): () => void {
  const watchdog = spawn('bash', ['-c', WATCHDOG_SCRIPT, 'control-plane-watchdog', pidDir, workDir], {
    detached: true,
    stdio: ['pipe', 'ignore', 'ignore'],
  });
  watchdog.on('error', () => {
    // Without bash there is no watchdog; the 'exit' handler still covers normal exits.
  });
  watchdog.unref();
  if (watchdog.stdin instanceof Socket) watchdog.stdin.unref();
  return () => {
    if (watchdog.pid !== undefined && watchdog.exitCode === null && watchdog.signalCode === null) {
      signalGroup(watchdog.pid, 'SIGKILL');
    }
  };
}
