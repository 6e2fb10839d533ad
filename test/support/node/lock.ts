/**
 * The machine-wide lock that lets only one node run at a time. Node has no flock(2), so a
 * `flock` process holds it: it takes the lock, says so on stdout and keeps it until its stdin
 * closes, which happens on release() and also when this process dies in any way. A crashed run
 * can therefore never leave the lock taken; its leftovers are found through the journal.
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { Socket } from 'node:net';

/** A held lock. */
export interface HeldLock {
  /** Releases the lock; resolves once the holder has exited. */
  release(): Promise<void>;
}

const BUSY = 75;

/**
 * Takes the lock `file`, waiting at most `waitMs` (0: fail at once) for another holder.
 * @throws Error naming the process that holds it when it stays taken.
 */
export async function acquireLock(file: string, waitMs: number): Promise<HeldLock> {
  await mkdir(dirname(file), { recursive: true });
  const wait = waitMs > 0 ? ['-w', String(Math.ceil(waitMs / 1000))] : ['-n'];
  const holder = spawn('flock', [...wait, '-E', String(BUSY), file, 'bash', '-c', 'echo locked; while read -r _; do :; done'], {
    detached: true,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const exited = new Promise<number>((resolve) => {
    holder.once('exit', (code) => resolve(code ?? -1));
    holder.once('error', () => resolve(-1));
  });
  let stderr = '';
  holder.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const locked = new Promise<boolean>((resolve) => {
    holder.stdout.on('data', (c: Buffer) => {
      if (c.toString().includes('locked')) resolve(true);
    });
    void exited.then(() => resolve(false));
  });
  if (!(await locked)) {
    const code = await exited;
    if (code === BUSY) {
      let owner = 'another process';
      try {
        owner = `process ${readFileSync(`${file}.owner`, 'utf8').trim()}`;
      } catch {
        // no owner note
      }
      throw new Error(`another local node is running (${owner} holds ${file}); stop it first, only one node may run on this machine`);
    }
    throw new Error(`cannot take the node lock ${file}: flock exited with ${code}: ${stderr.trim()}`);
  }
  writeFileSync(`${file}.owner`, `${process.pid}\n`);
  // The holder must not keep this process alive; it ends when this process does.
  holder.unref();
  for (const stream of [holder.stdin, holder.stdout, holder.stderr]) if (stream instanceof Socket) stream.unref();
  let released: Promise<void> | undefined;
  return {
    release: () => {
      released ??= (async () => {
        holder.ref();
        holder.stdin.end();
        await exited;
      })();
      return released;
    },
  };
}
