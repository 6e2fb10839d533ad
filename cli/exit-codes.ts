/**
 * Exit codes of `kubectl bucket`, so a script can branch on the outcome without parsing text.
 * `trace` and `why` report the bucket's state through them; the other commands use only
 * OK, ERROR, USAGE, NOT_FOUND and NOT_SERVED. Codes 0 to 5 keep their meaning from release to
 * release; a new outcome gets a new code.
 */
export const ExitCode = {
  /** The command did what it was asked; for trace and why, the bucket is Ready. */
  OK: 0,
  /** The API server could not be reached or refused the request; or an unexpected failure. */
  ERROR: 1,
  /** Bad flags or arguments, or an edit the API would refuse (nothing was sent). */
  USAGE: 2,
  /** The named StorageBucket does not exist. */
  NOT_FOUND: 3,
  /** trace, why: the bucket is not Ready yet, and the operator is working towards it (or waits for something that may appear). */
  NOT_READY: 4,
  /** trace, why: the bucket waits for a person: a terminal reason, or it is paused. */
  STALLED: 5,
  /**
   * The API server does not serve StorageBuckets (no CRD there, or none of the versions this
   * plugin reads): usually the wrong `--context`. Checked before anything else, so a missing
   * CRD is never reported as a missing object (3).
   */
  NOT_SERVED: 6,
} as const;

/** One of {@link ExitCode}. */
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/** An error that ends the command with `code` and prints only its one-line message. */
export class CliError extends Error {
  override readonly name = 'CliError';
  constructor(
    readonly code: ExitCode,
    message: string,
  ) {
    super(message);
  }
}
