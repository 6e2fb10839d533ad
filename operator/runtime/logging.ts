/**
 * Logger construction. main.ts builds one logger and passes it down; there is no
 * module-level instance, so tests and several managers never share state.
 */
import { pino, type DestinationStream, type Logger, type LevelWithSilent } from 'pino';

/** Options of `createLogger`. */
export interface LoggerOptions {
  /** @default 'info' */
  readonly level?: LevelWithSilent;
  /** Human-readable output through pino-pretty (development only). @default false */
  readonly pretty?: boolean;
  /** Extra redaction paths, added to the defaults. */
  readonly redact?: readonly string[];
}

/**
 * Secret-bearing fields that must never reach a log line, even when a whole request or
 * config object is logged by mistake.
 */
export const DEFAULT_REDACT_PATHS: readonly string[] = [
  'apiKey',
  '*.apiKey',
  'token',
  '*.token',
  'password',
  '*.password',
  'secretAccessKey',
  '*.secretAccessKey',
  'authorization',
  '*.authorization',
  'headers.authorization',
  '*.headers.authorization',
  'headers.Authorization',
  '*.headers.Authorization',
];

/**
 * Bytes of log lines held while stdout cannot take them; beyond it lines are dropped rather than
 * the operator's memory grown by a stalled log pipe.
 */
export const STDOUT_BUFFER_BYTES = 8 * 1024 * 1024;

/**
 * Bytes of log lines gathered before a write to stdout is started: a busy operator writes a few
 * dozen lines per write(2) instead of one. Below it, lines wait at most {@link STDOUT_FLUSH_MS}.
 */
export const STDOUT_BATCH_BYTES = 8 * 1024;

/** Longest a logged line waits in the batch before it is written. */
export const STDOUT_FLUSH_MS = 250;

/**
 * Stdout, written asynchronously and in batches. pino's default writes each line with its own
 * synchronous write(2): measured at 3,000 buckets (bench/HISTORY.md) that was 14 % of the main
 * thread's busy time while deleting and 8 % over a whole run; written asynchronously one line
 * at a time, queuing each write still took 15 % of the delete phase's busy time. Lines are
 * written once {@link STDOUT_BATCH_BYTES} have gathered or {@link STDOUT_FLUSH_MS} after the
 * first of them, whichever comes first; an idle operator makes no write at all.
 * pino flushes what is left when the process exits (process.exit and an uncaught error
 * included); only a SIGKILL can lose lines: those of the last batch.
 */
export function stdoutDestination(): DestinationStream {
  const stream = pino.destination({ dest: 1, sync: false, minLength: STDOUT_BATCH_BYTES, maxLength: STDOUT_BUFFER_BYTES });
  const write = stream.write.bind(stream);
  // Bytes handed to the stream and not yet written: SonicBoom reports each write's size.
  let unwritten = 0;
  stream.on('write', (n: number) => {
    unwritten -= n;
  });
  // Past STDOUT_BUFFER_BYTES a line is dropped, not written.
  stream.on('drop', (line: string) => {
    unwritten -= Buffer.byteLength(line);
  });
  let timer: NodeJS.Timeout | undefined;
  const flush = (): void => {
    // A flush while a write is in flight does nothing, and what is under the batch size stays
    // behind when that write ends: so keep trying until nothing is left.
    if (unwritten > 0) stream.flush();
    timer = unwritten > 0 ? setTimeout(flush, STDOUT_FLUSH_MS).unref() : undefined;
  };
  stream.write = (line: string): boolean => {
    unwritten += Buffer.byteLength(line);
    timer ??= setTimeout(flush, STDOUT_FLUSH_MS).unref();
    return write(line);
  };
  return stream;
}

/**
 * Creates a JSON logger (or a pretty one), with secret fields redacted. `destination`
 * (asynchronous stdout by default, see {@link stdoutDestination}) lets tests capture lines; it is
 * ignored when `pretty` is set, because pino-pretty runs as a transport that owns its output.
 */
export function createLogger(opts: LoggerOptions = {}, destination?: DestinationStream): Logger {
  const options = {
    level: opts.level ?? 'info',
    redact: { paths: [...DEFAULT_REDACT_PATHS, ...(opts.redact ?? [])], censor: '[REDACTED]' },
  };
  if (opts.pretty) return pino({ ...options, transport: { target: 'pino-pretty', options: { colorize: true } } });
  return pino(options, destination ?? stdoutDestination());
}
