/**
 * Errors of the provider seam. One class with the facts a caller decides on: the HTTP status
 * (0 for transport failures), the provider's code, whether retrying can help, and how long the
 * provider asked us to wait. Messages never carry request headers or the API key.
 */

/** An unsuccessful provider call. */
export class ProviderError extends Error {
  /** HTTP status, or 0 when no response arrived (timeout, reset, refused). */
  public readonly status: number;
  /** The provider's error code, e.g. ValidationFailed, or a transport code like ETIMEDOUT. */
  public readonly code: string;
  /** True when the same call may succeed later (5xx, 429, transport errors). */
  public readonly retryable: boolean;
  /** Delay the provider asked for (429/503 Retry-After), in ms. */
  public readonly retryAfterMs: number | undefined;

  constructor(message: string, opts: { status: number; code: string; retryAfterMs?: number; cause?: unknown }) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'ProviderError';
    this.status = opts.status;
    this.code = opts.code;
    this.retryAfterMs = opts.retryAfterMs;
    this.retryable = opts.status === 0 || opts.status === 408 || opts.status === 429 || opts.status >= 500;
  }

  /** True for 401/403: the configured API key is missing, wrong or not allowed. */
  get isAuthError(): boolean {
    return this.status === 401 || this.status === 403;
  }

  /** True for 404. */
  get isNotFound(): boolean {
    return this.status === 404;
  }
}

/** Narrows `err` to a ProviderError. */
export function isProviderError(err: unknown): err is ProviderError {
  return err instanceof ProviderError;
}
