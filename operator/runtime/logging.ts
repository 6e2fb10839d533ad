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
 * Creates a JSON logger (or a pretty one), with secret fields redacted. `destination`
 * (stdout by default) lets tests capture lines; it is ignored when `pretty` is set,
 * because pino-pretty runs as a transport that owns its output.
 */
export function createLogger(opts: LoggerOptions = {}, destination?: DestinationStream): Logger {
  const options = {
    level: opts.level ?? 'info',
    redact: { paths: [...DEFAULT_REDACT_PATHS, ...(opts.redact ?? [])], censor: '[REDACTED]' },
  };
  if (opts.pretty) return pino({ ...options, transport: { target: 'pino-pretty', options: { colorize: true } } });
  return destination ? pino(options, destination) : pino(options);
}
