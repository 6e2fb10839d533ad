/**
 * Where a command writes, and what it knows about that place: whether stdout is a terminal
 * (colour, redraws) and how wide it is. main.ts passes the process's; tests pass a recorder.
 */
import type { ColorMode } from './args';

/** The output side of a command. */
export interface Terminal {
  out(text: string): void;
  err(text: string): void;
  /** stdout is a terminal. */
  readonly isTTY: boolean;
  /** Columns of the terminal; 150 off a terminal */
  readonly columns: number;
  /** Environment (NO_COLOR, FORCE_COLOR). */
  readonly env: NodeJS.ProcessEnv;
}

/**
 * Whether to colour: `--color always|never` wins; otherwise only on a terminal, and never when
 * NO_COLOR is set (no-color.org) or TERM is `dumb`.
 */
export function useColor(mode: ColorMode, t: Pick<Terminal, 'isTTY' | 'env'>): boolean {
  if (mode === 'always') return true;
  if (mode === 'never') return false;
  if (t.env['NO_COLOR'] !== undefined && t.env['NO_COLOR'] !== '') return false;
  if (t.env['TERM'] === 'dumb') return false;
  return t.isTTY;
}

/** The process's own terminal. */
export function processTerminal(): Terminal {
  return {
    out: (text) => process.stdout.write(text),
    err: (text) => process.stderr.write(text),
    isTTY: process.stdout.isTTY === true,
    columns: process.stdout.isTTY ? (process.stdout.columns ?? 120) : 150,
    env: process.env,
  };
}
