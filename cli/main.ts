/**
 * `kubectl bucket`: the kubectl plugin of BucketOperator (the `kubectl-bucket` executable in
 * the package's `bin`, cli/bin.ts; kubectl runs it for `kubectl bucket ...` when it is on PATH).
 * This file is the only one that reads argv, the environment and signals; it parses the flags,
 * connects as kubectl would, runs one command and exits with its code (cli/exit-codes.ts).
 *
 * Start-up time is the plugin's first impression: this file loads only the flag parser, and
 * each command's modules (the client, the operator's kinds, YAML) are imported when that
 * command runs, so `--help`, `version` and a usage error load none of them. A command that
 * connects loads the client and the operator's names and pure helpers from leaf modules, never
 * the schemas, metrics or logging the operator runs with (test/unit/cli/startup.test.ts). The
 * package ships all of it as one bundle whose modules still run only when imported, with the
 * code few commands need in files of their own (scripts/bundle-plugin.ts,
 * test/unit/cli/bundle.test.ts).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { HELP, parseArgs, type Options } from './args';
import { CliError, ExitCode } from './exit-codes';
import type { Kube } from './kube';
import { processTerminal, type Terminal } from './terminal';

/** The package version, from the package.json beside the compiled tree (or the sources). */
export function version(): string {
  for (const dir of [join(__dirname, '..', '..'), join(__dirname, '..')]) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'bucketoperator' && pkg.version) return pkg.version;
    } catch {
      // not here; try the next directory
    }
  }
  return 'unknown';
}

/** A command, once its modules are loaded. */
type Command = (kube: Kube, opts: Options, term: Terminal, signal: AbortSignal) => Promise<ExitCode>;

/** Loads the modules of `opts.command` (only those) and returns it. */
async function load(opts: Options): Promise<Command> {
  switch (opts.command) {
    case 'trace':
    case 'why':
      if (opts.allNamespaces) {
        const { listAll } = await import('./commands/list.js');
        return (kube, o, term) => listAll(kube, o, term);
      }
      if (opts.command === 'why') return (await import('./commands/trace.js')).why;
      return (await import('./commands/trace.js')).trace;
    case 'reconcile':
    case 'pause':
    case 'resume':
    case 'adopt':
    case 'orphan':
      return (await import('./commands/edit.js')).edit;
    case 'report': {
      const { report } = await import('./commands/report.js');
      return (kube, o, term) => report(kube, o, term);
    }
    case 'help':
    case 'version':
      return async () => ExitCode.OK;
  }
}

/** Runs `argv` (the arguments after `kubectl bucket`) and returns the exit code; never throws. */
export async function run(argv: readonly string[], term: Terminal, signal: AbortSignal): Promise<ExitCode> {
  let opts: Options & { help: boolean };
  try {
    opts = parseArgs(argv);
  } catch (err) {
    term.err(`error: ${err instanceof Error ? err.message : String(err)}\n`);
    return err instanceof CliError ? err.code : ExitCode.USAGE;
  }
  if (opts.help) {
    term.out(HELP);
    return ExitCode.OK;
  }
  if (opts.command === 'version') {
    term.out(`kubectl-bucket ${version()}\n`);
    return ExitCode.OK;
  }
  let kube: Kube | undefined;
  try {
    // Discovery goes out first, and the command's modules load while the API server answers.
    const connecting = (await import('./kube.js')).connectKube(opts, term.env);
    const command = load(opts);
    command.catch(() => undefined); // awaited below, after the connection
    kube = await connecting;
    const execute = await command;
    return await execute(kube, opts, term, signal);
  } catch (err) {
    if (err instanceof CliError) {
      term.err(`error: ${err.message}\n`);
      return err.code;
    }
    term.err(`error: ${err instanceof Error ? err.message : String(err)}\n`);
    return ExitCode.ERROR;
  } finally {
    kube?.close();
  }
}

/**
 * Runs the plugin as a process: `process.argv`, the process's terminal, Ctrl-C, and the exit
 * code. The shipped executable (cli/bin.ts) calls it once Node's compile cache is on.
 */
export function main(): void {
  const stop = new AbortController();
  // The first Ctrl-C ends a watch cleanly (its exit code is the bucket's state); a second one kills.
  process.once('SIGINT', () => stop.abort());
  process.once('SIGTERM', () => stop.abort());
  void run(process.argv.slice(2), processTerminal(), stop.signal).then((code) => {
    process.exitCode = code;
    // Pooled keep-alive sockets or a watch being torn down must not hold the process open.
    setImmediate(() => process.exit(code));
  });
}

// Run from the sources (`tsx cli/main.ts ...`); the shipped plugin starts from cli/bin.ts.
if (require.main === module) main();
