/**
 * An OCI registry on loopback, for trying a release without publishing it and for the tests:
 * `crane registry serve` (go-containerregistry's registry, blobs in memory or in a directory),
 * listening on 127.0.0.1 on a port the kernel picks. Plain HTTP, which cosign and crane use
 * without being told for a 127.0.0.1 address.
 */
import { spawn, type ChildProcess } from 'node:child_process';

/** A running registry. */
export interface LocalRegistry {
  /** `127.0.0.1:<port>`: what goes before a repository name. */
  readonly host: string;
  stop(): Promise<void>;
}

/** The port in crane's "serving on port N" line, if this output holds it. */
export function servingPort(output: string): number | undefined {
  const m = /serving on port (\d+)/.exec(output);
  return m?.[1] ? Number(m[1]) : undefined;
}

/** Options of {@link startRegistry}. */
export interface RegistryOptions {
  /** Keep blobs in this directory instead of memory. */
  readonly disk?: string;
  /** @default 30000 */
  readonly startTimeoutMs?: number;
}

/** Starts `crane registry serve` on 127.0.0.1 and waits until it says which port it took. */
export function startRegistry(crane: string, opts: RegistryOptions = {}): Promise<LocalRegistry> {
  const args = ['registry', 'serve', '--address', '127.0.0.1:0', ...(opts.disk ? ['--disk', opts.disk] : [])];
  const child: ChildProcess = spawn(crane, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => {
      void stop();
      reject(new Error(`crane registry serve did not report a port within ${opts.startTimeoutMs ?? 30_000} ms: ${output.trim()}`));
    }, opts.startTimeoutMs ?? 30_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString('utf8');
      const port = servingPort(output);
      if (port === undefined) return;
      clearTimeout(timer);
      child.stdout?.off('data', onData);
      child.stderr?.off('data', onData);
      // Keep draining, so a chatty registry never blocks on a full pipe.
      child.stdout?.resume();
      child.stderr?.resume();
      resolve({ host: `127.0.0.1:${port}`, stop });
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(new Error(`cannot start ${crane} registry serve`, { cause: err }));
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`crane registry serve exited (${code ?? signal}) before it served: ${output.trim()}`));
    });
  });
}
