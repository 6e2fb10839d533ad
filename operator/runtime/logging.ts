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
 * Stdout, written asynchronously: lines logged while a write is in flight go out together in the
 * next one. pino's default writes each line with its own synchronous write(2): measured at 3,000
 * buckets (bench/README.md) that was 14 % of the main thread's busy time while deleting and 8 %
 * over a whole run.
 * Nothing waits: a line is written as soon as the previous write returns, and pino flushes
 * what is left when the process exits (process.exit included); only a SIGKILL can lose lines:
 * those not yet written (the write in flight and any logged behind it).
 */
export function stdoutDestination(): DestinationStream {
  return pino.destination({ dest: 1, sync: false, maxLength: STDOUT_BUFFER_BYTES });
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
